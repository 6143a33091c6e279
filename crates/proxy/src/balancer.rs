//! Choosing the upstream address: a service's own host, or weighted round-robin over an upstream's targets.
//!
//! The order is precomputed per snapshot with nginx's smooth weighted round-robin (so a 3:1 split interleaves
//! a-a-b-a rather than a-a-a-b) and walked with one shared atomic counter. Hostnames resolve through a small
//! process-wide cache with a TTL, so DNS is not asked per request.

use crate::error::ProxyError;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One address to proxy to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub host: String,
    pub port: u16,
    ip: Option<IpAddr>,
}

impl Peer {
    pub fn new(host: &str, port: u16) -> Peer {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        Peer {
            host: host.to_string(),
            port,
            ip: bare.parse().ok(),
        }
    }

    /// The socket address, resolving hostnames through the cache.
    pub async fn resolve(&self) -> Result<SocketAddr, ProxyError> {
        match self.ip {
            Some(ip) => Ok(SocketAddr::new(ip, self.port)),
            None => resolve_cached(&self.host, self.port).await,
        }
    }
}

/// The peers of a service and the order to use them in.
#[derive(Debug)]
pub struct Balancer {
    peers: Vec<Peer>,
    schedule: Vec<u32>,
    next: AtomicUsize,
}

impl Balancer {
    /// `targets` as (host, port, weight); weight 0 disables a target.
    pub fn new(targets: Vec<(String, u16, u32)>) -> Balancer {
        let live: Vec<(Peer, u32)> = targets
            .into_iter()
            .filter(|t| t.2 > 0)
            .map(|(h, p, w)| (Peer::new(&h, p), w))
            .collect();
        let schedule = smooth_schedule(&live.iter().map(|(_, w)| *w).collect::<Vec<_>>());
        Balancer {
            peers: live.into_iter().map(|(p, _)| p).collect(),
            schedule,
            next: AtomicUsize::new(0),
        }
    }

    /// The next peer in the weighted order (a retry calls again and so gets the next target).
    pub fn pick(&self) -> Option<&Peer> {
        if self.schedule.is_empty() {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.peers
            .get(self.schedule[n % self.schedule.len()] as usize)
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// nginx's smooth weighted round-robin, unrolled for one full cycle (weights reduced by their gcd, and
/// scaled down when a cycle would be longer than 10,000 picks).
fn smooth_schedule(weights: &[u32]) -> Vec<u32> {
    if weights.is_empty() {
        return Vec::new();
    }
    let g = weights.iter().copied().fold(0, gcd).max(1);
    let mut w: Vec<i64> = weights.iter().map(|x| (*x / g) as i64).collect();
    let total: i64 = w.iter().sum();
    if total > 10_000 {
        let scale = total as f64 / 10_000.0;
        w = w
            .iter()
            .map(|x| ((*x as f64 / scale).round() as i64).max(1))
            .collect();
    }
    let total: i64 = w.iter().sum();
    let mut current = vec![0i64; w.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, wi) in current.iter_mut().zip(&w) {
            *c += wi;
        }
        let (best, _) = current
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
            .unwrap_or((0, &0));
        current[best] -= total;
        out.push(best as u32);
    }
    out
}

const DNS_TTL: Duration = Duration::from_secs(30);

type DnsCache = Mutex<HashMap<(String, u16), (Vec<SocketAddr>, Instant)>>;

fn cache() -> &'static DnsCache {
    static CACHE: OnceLock<DnsCache> = OnceLock::new();
    CACHE.get_or_init(DnsCache::default)
}

async fn resolve_cached(host: &str, port: u16) -> Result<SocketAddr, ProxyError> {
    let key = (host.to_string(), port);
    if let Some((addrs, at)) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        if at.elapsed() < DNS_TTL {
            if let Some(a) = addrs.first() {
                return Ok(*a);
            }
        }
    }
    let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| ProxyError::NameResolution)?
        .collect();
    addrs.sort_by_key(|a| a.is_ipv6());
    let first = *addrs.first().ok_or(ProxyError::NameResolution)?;
    cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, (addrs, Instant::now()));
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smooth_schedule_interleaves_by_weight() {
        assert_eq!(smooth_schedule(&[3, 1]), vec![0, 0, 1, 0]);
        assert_eq!(smooth_schedule(&[100, 100]), vec![0, 1]);
        assert_eq!(smooth_schedule(&[]), Vec::<u32>::new());
        let s = smooth_schedule(&[5, 3, 2]);
        assert_eq!(s.len(), 10);
        assert_eq!(s.iter().filter(|i| **i == 0).count(), 5);
        assert_eq!(s.iter().filter(|i| **i == 2).count(), 2);
    }

    #[test]
    fn weight_zero_targets_are_skipped() {
        let b = Balancer::new(vec![
            ("10.0.0.1".into(), 80, 0),
            ("10.0.0.2".into(), 80, 10),
        ]);
        for _ in 0..5 {
            assert_eq!(b.pick().unwrap().host, "10.0.0.2");
        }
        assert!(Balancer::new(vec![("a".into(), 1, 0)]).pick().is_none());
    }
}
