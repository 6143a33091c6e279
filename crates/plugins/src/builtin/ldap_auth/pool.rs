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

/// One server's idle connections, and the timer task closing the expired ones: its number and when it wakes.
#[derive(Default)]
struct Pool {
    idle: Vec<Idle>,
    sweeper: Option<(u64, Instant)>,
    sweepers: u64,
}

thread_local! {
    static IDLE: RefCell<HashMap<String, Pool>> = RefCell::new(HashMap::new());
}

fn usable(idle: &mut Idle, now: Instant) -> bool {
    idle.1.is_none_or(|until| now < until) && !idle.0.is_closed()
}

/// The most recently kept connection to `server` that is still open and within its keepalive.
pub fn take(server: &str) -> Option<Ldap> {
    let now = Instant::now();
    IDLE.with_borrow_mut(|pools| {
        let pool = pools.get_mut(server)?;
        while let Some(mut candidate) = pool.idle.pop() {
            if usable(&mut candidate, now) {
                return Some(candidate.0);
            }
        }
        None
    })
}

/// Keeps `ldap` for the next bind to `server` during `keepalive` (None: for good). One timer task per
/// server closes the expired ones; a new one replaces it when this connection expires before it wakes.
pub fn put(server: &str, ldap: Ldap, keepalive: Option<Duration>) {
    let until = keepalive.map(|d| Instant::now() + d);
    let sweeper = IDLE.with_borrow_mut(|pools| {
        let pool = pools.entry(server.to_string()).or_default();
        if pool.idle.len() >= MAX_IDLE {
            return None;
        }
        pool.idle.push((ldap, until));
        let until = until?;
        if pool.sweeper.is_some_and(|(_, wakes)| wakes <= until) {
            return None;
        }
        pool.sweepers += 1;
        pool.sweeper = Some((pool.sweepers, until));
        pool.sweeper
    });
    if let Some((number, mut wake)) = sweeper {
        let server = server.to_string();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep_until(wake.into()).await;
                match sweep(&server, number) {
                    Some(next) => wake = next,
                    None => break,
                }
            }
        });
    }
}

/// Drops `server`'s expired and closed connections (closing them) for sweeper `number`; the next expiry
/// to wait for, or None when none is left to expire or another sweeper took over (this one then stops).
fn sweep(server: &str, number: u64) -> Option<Instant> {
    let now = Instant::now();
    IDLE.with_borrow_mut(|pools| {
        let pool = pools.get_mut(server)?;
        if pool.sweeper?.0 != number {
            return None;
        }
        pool.idle.retain_mut(|i| usable(i, now));
        let next = pool.idle.iter().filter_map(|i| i.1).min();
        pool.sweeper = next.map(|n| (number, n));
        next
    })
}
