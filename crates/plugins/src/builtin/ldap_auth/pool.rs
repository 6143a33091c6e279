//! ldap-auth's idle connections (Kong's `keepalive`): after a bind its connection is kept, per worker
//! thread and per server and TLS mode (StartTLS connections apart from plain ones, as Kong pools them), for
//! `keepalive` ms, and the next bind to that server rebinds on it instead of connecting again. At most
//! [`MAX_IDLE`] per server; a connection the server closed is dropped when taken, an expired one when taken
//! or when its timer fires.

use ldap3::Ldap;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Idle connections kept per server (nginx's default cosocket pool size).
const MAX_IDLE: usize = 30;

/// An idle connection and when it stops being reusable (None: never, Kong's `keepalive` 0).
type Idle = (Ldap, Option<Instant>);

thread_local! {
    static IDLE: RefCell<HashMap<String, Vec<Idle>>> = RefCell::new(HashMap::new());
}

fn usable(idle: &mut Idle, now: Instant) -> bool {
    idle.1.is_none_or(|until| now < until) && !idle.0.is_closed()
}

/// The most recently kept connection to `server` that is still open and within its keepalive.
pub fn take(server: &str) -> Option<Ldap> {
    let now = Instant::now();
    IDLE.with_borrow_mut(|pools| {
        let idle = pools.get_mut(server)?;
        while let Some(mut candidate) = idle.pop() {
            if usable(&mut candidate, now) {
                return Some(candidate.0);
            }
        }
        None
    })
}

/// Keeps `ldap` for the next bind to `server` during `keepalive` (None: for good); a timer drops it then.
pub fn put(server: &str, ldap: Ldap, keepalive: Option<Duration>) {
    let now = Instant::now();
    let kept = IDLE.with_borrow_mut(|pools| {
        let idle = pools.entry(server.to_string()).or_default();
        if idle.len() >= MAX_IDLE {
            return false;
        }
        idle.push((ldap, keepalive.map(|d| now + d)));
        true
    });
    if let (true, Some(after)) = (kept, keepalive) {
        let server = server.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            sweep(&server);
        });
    }
}

/// Drops `server`'s expired and closed connections (closing them).
fn sweep(server: &str) {
    let now = Instant::now();
    IDLE.with_borrow_mut(|pools| {
        if let Some(idle) = pools.get_mut(server) {
            idle.retain_mut(|i| usable(i, now));
        }
    });
}
