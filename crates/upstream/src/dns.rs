//! Hostname resolution for service hosts and upstream targets, with Kong's DNS settings and the records'
//! own TTLs, cached per worker so DNS is not on the request path.
//!
//! **Client.** A small stub resolver of our own ([`client`], [`lookup`]) over `hickory-proto`'s wire
//! format, rather than `hickory-resolver`: Kong's semantics need the raw record TTLs, the difference
//! between "no such name" (`dns_not_found_ttl`) and "no answer" (`dns_error_ttl`), Kong's `dns_order`
//! with `LAST`, SRV ports and weights, and its own hosts file — and exactly one cache, this one.
//! `hickory-resolver` would bring a second cache, its own hosts-file handling and type order, which we
//! would have to switch off and work around. The client reads `/etc/resolv.conf` once (nameservers unless
//! `dns_resolver` is set, search list, `ndots`, `timeout`, `attempts`) and answers names of the hosts file
//! (`dns_hostsfile`) without DNS.
//!
//! **Cache.** Each worker thread has its own [`cache::Cache`] (a thread-local): a request reads it
//! without locks or allocation. An answer is used for its TTL (the smallest of its records, or
//! `dns_valid_ttl`; at least [`cache::MIN_TTL`], so a TTL of 0 means "refresh every second in the
//! background" rather than Kong's query per request). A request that finds it expired still uses it and
//! starts a background refresh (another one if the last has not reported back within `dns_stale_ttl`), so
//! no request waits for DNS once a name is known — unlike Kong, which stops serving a stale answer after
//! `dns_stale_ttl` and queries on the request path. A failed refresh keeps the known addresses and tries again
//! after `dns_error_ttl` (`dns_not_found_ttl` when the name is gone): 503 "name resolution failed" only
//! for a name that never resolved, remembered for those TTLs. A name with several addresses is walked
//! round-robin; SRV answers (lowest priority only) are spread by weight and their port replaces the
//! configured one, as Kong does. Requests that miss while a lookup of the name runs on their worker wait
//! for it rather than asking again (Kong's `dns_no_sync = off`).
//!
//! The resolver settings are installed by [`configure`] when the proxy starts; each worker takes them on
//! its first lookup. Background refreshes run on the worker's own `current_thread` runtime, so their
//! answers land in that worker's cache.

mod cache;
mod client;
mod lookup;
mod settings;
mod system;

pub use settings::{DnsSettings, Kind};

use crate::error::UpstreamError;
use cache::{Cache, Use};
use lookup::{Outcome, Resolver};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// One address of a name: the IP and, from an SRV record, the port that replaces the configured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr {
    pub ip: IpAddr,
    pub port: Option<u16>,
}

impl Addr {
    fn ip(ip: IpAddr) -> Addr {
        Addr { ip, port: None }
    }

    fn with_port(self, port: u16) -> SocketAddr {
        SocketAddr::new(self.ip, self.port.unwrap_or(port))
    }
}

/// The resolver workers start with; `None` until [`configure`] (then Kong's defaults).
static CONFIGURED: RwLock<Option<Arc<Resolver>>> = RwLock::new(None);

/// Installs the DNS settings for workers started from now on: reads the hosts file and resolv.conf.
pub fn configure(settings: &DnsSettings) {
    let resolver = Arc::new(Resolver::new(settings.clone()));
    *CONFIGURED.write().unwrap_or_else(|e| e.into_inner()) = Some(resolver);
}

/// A worker's cache, its lookups in progress, and the resolver it asks on a miss.
struct Local {
    cache: RefCell<Cache>,
    /// Lookups running on this worker: requests that need the same name wait for them.
    running: RefCell<FxHashMap<Box<str>, Arc<Notify>>>,
    resolver: Arc<Resolver>,
}

thread_local! {
    static LOCAL: Local = Local {
        cache: RefCell::new(Cache::default()),
        running: RefCell::default(),
        resolver: CONFIGURED
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(|| Arc::new(Resolver::new(DnsSettings::default()))),
    };
}

/// The longest a request waits for another request's lookup of the same name before asking itself.
const JOIN_LIMIT: Duration = Duration::from_secs(10);

/// An address of `host:port`, from this worker's cache or a lookup. A request that needs a lookup
/// while one of the same name is running on this worker waits for it (Kong's `dns_no_sync = off`).
pub async fn resolve(host: &str, port: u16) -> Result<SocketAddr, UpstreamError> {
    let mut joined = false;
    loop {
        let now = Instant::now();
        let found = LOCAL.with(|l| {
            l.cache
                .borrow_mut()
                .consult(host, now, &l.resolver.settings)
        });
        let addr = match found {
            Use::Addr(addr) => addr,
            Use::Refresh(addr) => {
                let host = host.to_string();
                tokio::spawn(async move { lookup(&host).await });
                addr
            }
            Use::Failed => return Err(UpstreamError::NameResolution),
            Use::Lookup => {
                let running = LOCAL.with(|l| l.running.borrow().get(host).cloned());
                if let Some(done) = running.filter(|_| !joined) {
                    joined = true;
                    let _ = tokio::time::timeout(JOIN_LIMIT, done.notified_owned()).await;
                    continue;
                }
                // Boxed: the lookup's state stays out of every request's future (hits need none of it).
                match Box::pin(lookup(host)).await {
                    Use::Addr(addr) | Use::Refresh(addr) => addr,
                    Use::Failed | Use::Lookup => return Err(UpstreamError::NameResolution),
                }
            }
        };
        return Ok(addr.with_port(port));
    }
}

/// Resolves `host`, stores the outcome in this worker's cache, and says what the caller uses.
async fn lookup(host: &str) -> Use {
    let _running = Running::start(host);
    let (resolver, last) = LOCAL.with(|l| (l.resolver.clone(), l.cache.borrow().last(host)));
    let outcome = resolver.resolve(host, last).await;
    match &outcome {
        Outcome::Found { addrs, ttl, kind } => {
            tracing::debug!(host, ?addrs, ?ttl, ?kind, "resolved")
        }
        Outcome::NotFound => tracing::warn!(host, "DNS: no such name"),
        Outcome::Failed => tracing::warn!(host, "DNS: no answer from the nameservers"),
    }
    let used = LOCAL.with(|l| {
        l.cache
            .borrow_mut()
            .store(host, outcome, Instant::now(), &resolver.settings)
    });
    mark_unresolved(host, matches!(used, Use::Failed | Use::Lookup));
    used
}

/// Names whose last lookup (on any worker) left no address to use: their targets report `DNS_ERROR`
/// health. Written only after lookups, never on the request path.
static UNRESOLVED: std::sync::Mutex<Vec<Box<str>>> = std::sync::Mutex::new(Vec::new());

fn mark_unresolved(host: &str, failed: bool) {
    let mut names = UNRESOLVED.lock().unwrap_or_else(|e| e.into_inner());
    let known = names.iter().position(|n| n.eq_ignore_ascii_case(host));
    match (known, failed) {
        (None, true) => names.push(host.into()),
        (Some(i), false) => {
            names.swap_remove(i);
        }
        _ => {}
    }
}

/// True when the last lookup of `host` found no address (Kong's `DNS_ERROR` target health).
pub fn unresolved(host: &str) -> bool {
    UNRESOLVED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|n| n.eq_ignore_ascii_case(host))
}

/// Marks a lookup as running on this worker; when it ends (or is dropped half-way), the requests
/// waiting for it are woken to read the cache.
struct Running<'a> {
    host: &'a str,
    done: Arc<Notify>,
}

impl<'a> Running<'a> {
    fn start(host: &'a str) -> Running<'a> {
        let done = Arc::new(Notify::new());
        LOCAL.with(|l| l.running.borrow_mut().insert(host.into(), done.clone()));
        Running { host, done }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            let mut running = l.running.borrow_mut();
            if running
                .get(self.host)
                .is_some_and(|d| Arc::ptr_eq(d, &self.done))
            {
                running.remove(self.host);
            }
        });
        self.done.notify_waiters();
    }
}

#[cfg(test)]
mod tests;
