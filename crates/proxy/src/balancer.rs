//! Choosing the upstream address: a service's own host, or weighted round-robin over an upstream's targets.
//!
//! The order is precomputed per snapshot with nginx's smooth weighted round-robin (a 3:1 split interleaves
//! a-a-b-a rather than a-a-a-b) and walked with one atomic counter, so the split is exact across workers.
//! A retry simply picks again and so lands on the next target in the order.

use crate::dns;
use crate::error::ProxyError;
use http::HeaderValue;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One address to proxy to.
#[derive(Debug, Clone)]
pub struct Peer {
    pub host: String,
    pub port: u16,
    ip: Option<IpAddr>,
    /// The `Host` header for this peer when the route does not preserve the client's (Kong: the target's
    /// host or the upstream's `host_header`, with `:port` unless the port is the scheme's default).
    pub host_header: HeaderValue,
}

impl Peer {
    /// `host_name` is what the `Host` header names (the host itself, or an upstream's `host_header`);
    /// `default_port` is the port the scheme implies (80 for http, 443 for https).
    pub fn new(host: &str, port: u16, host_name: &str, default_port: u16) -> Peer {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let header = if port == default_port {
            host_name.to_string()
        } else {
            format!("{host_name}:{port}")
        };
        Peer {
            host: host.to_string(),
            port,
            ip: bare.parse().ok(),
            host_header: HeaderValue::from_str(&header).unwrap_or(HeaderValue::from_static("")),
        }
    }

    /// The socket address; hostnames go through this worker's DNS cache.
    pub async fn resolve(&self) -> Result<SocketAddr, ProxyError> {
        match self.ip {
            Some(ip) => Ok(SocketAddr::new(ip, self.port)),
            None => dns::resolve(&self.host, self.port).await,
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
    /// `targets` with their weights; weight 0 disables a target.
    pub fn new(targets: Vec<(Peer, u32)>) -> Balancer {
        let live: Vec<(Peer, u32)> = targets.into_iter().filter(|t| t.1 > 0).collect();
        let schedule = smooth_schedule(&live.iter().map(|(_, w)| *w).collect::<Vec<_>>());
        Balancer {
            peers: live.into_iter().map(|(p, _)| p).collect(),
            schedule,
            next: AtomicUsize::new(0),
        }
    }

    /// The next peer in the weighted order; None when no target is enabled.
    pub fn pick(&self) -> Option<&Peer> {
        if self.schedule.is_empty() {
            return None;
        }
        let n = if self.schedule.len() == 1 {
            0
        } else {
            self.next.fetch_add(1, Ordering::Relaxed) % self.schedule.len()
        };
        self.peers.get(self.schedule[n] as usize)
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
        let mut best = 0;
        for (i, c) in current.iter().enumerate() {
            if *c > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        out.push(best as u32);
    }
    out
}

#[cfg(test)]
mod tests;
