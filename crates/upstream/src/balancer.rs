//! Choosing the upstream address: a service's own host, or one of an upstream's targets by Kong's
//! algorithms — weighted round-robin ([`round_robin`]), consistent hashing ([`ring`] over
//! [`hash_input`]), least-connections and latency ([`scored`]).
//!
//! A [`Balancer`] is built per snapshot; each [`Target`] carries the shared runtime state of its target
//! ([`crate::health::TargetState`]: health, in-flight count, latency), which outlives the snapshot. Disabled
//! (weight 0) and unhealthy targets are never picked; a retry passes the targets it already tried so it
//! lands on another one while another usable one exists.

mod hash_input;
mod ring;
mod round_robin;
mod scored;

pub use hash_input::{HashKey, Hashed, PickInput};
use ring::Ring;
use round_robin::RoundRobin;
use scored::{Cost, Scored};

use crate::dns;
use crate::error::UpstreamError;
use crate::health::TargetState;
use http::HeaderValue;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
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

    /// A name that DNS resolves (not an IP literal).
    pub fn is_hostname(&self) -> bool {
        self.ip.is_none()
    }

    /// The socket address; hostnames go through this worker's DNS cache.
    pub async fn resolve(&self) -> Result<SocketAddr, UpstreamError> {
        match self.ip {
            Some(ip) => Ok(SocketAddr::new(ip, self.port)),
            None => dns::resolve(&self.host, self.port).await,
        }
    }
}

/// One target of a balancer.
#[derive(Debug)]
pub struct Target {
    pub peer: Peer,
    /// `host:port` as configured (the key of its runtime state and of the hash ring).
    pub name: String,
    pub weight: u32,
    pub state: Arc<TargetState>,
}

/// Kong's `algorithm`, compiled.
#[derive(Debug)]
enum Algorithm {
    RoundRobin(RoundRobin),
    Hashing(Arc<Ring>, HashKey),
    Scored(Scored),
}

/// Which algorithm a balancer uses (Kong's `algorithm` with its settings).
#[derive(Debug, Clone)]
pub enum AlgorithmSpec {
    RoundRobin,
    ConsistentHashing { key: HashKey, slots: usize },
    LeastConnections,
    Latency,
}

/// The targets of a service and how to choose among them.
#[derive(Debug)]
pub struct Balancer {
    targets: Vec<Target>,
    algorithm: Algorithm,
    /// Kong's `healthchecks.threshold`: below this percentage of healthy weight, no target is picked.
    threshold: f64,
}

/// A chosen target.
#[derive(Debug)]
pub struct Pick<'a> {
    /// Index among the balancer's targets (pass it back in `tried` on a retry).
    pub index: usize,
    pub target: &'a Target,
}

impl Balancer {
    /// A balancer over `targets`; weight 0 disables a target.
    pub fn new(targets: Vec<Target>, spec: AlgorithmSpec, threshold: f64) -> Balancer {
        let weights: Vec<u32> = targets.iter().map(|t| t.weight).collect();
        let algorithm = match spec {
            AlgorithmSpec::RoundRobin => Algorithm::RoundRobin(RoundRobin::new(&weights)),
            AlgorithmSpec::ConsistentHashing { key, slots } => {
                let named: Vec<(&str, u32)> = targets
                    .iter()
                    .map(|t| (t.name.as_str(), t.weight))
                    .collect();
                Algorithm::Hashing(Ring::shared(&named, slots), key)
            }
            AlgorithmSpec::LeastConnections => {
                Algorithm::Scored(Scored::new(Cost::LeastConnections))
            }
            AlgorithmSpec::Latency => Algorithm::Scored(Scored::new(Cost::Latency)),
        };
        Balancer {
            targets,
            algorithm,
            threshold,
        }
    }

    /// Whether a pick hashes the request (consistent hashing): only then is a [`PickInput`] read.
    pub fn hashes(&self) -> bool {
        matches!(self.algorithm, Algorithm::Hashing(..))
    }

    /// The balancer of a service without an upstream: its own host, always healthy.
    pub fn single(peer: Peer) -> Balancer {
        let name = format!("{}:{}", peer.host, peer.port);
        let target = Target {
            peer,
            name,
            weight: 1,
            state: Arc::default(),
        };
        Balancer::new(vec![target], AlgorithmSpec::RoundRobin, 0.0)
    }

    /// The targets, in config order.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The hash value of a request for consistent hashing (computed once per request, before the first
    /// pick, so retries walk the ring from the same place); nothing for the other algorithms.
    pub fn hash(&self, input: &PickInput<'_>) -> Hashed {
        match &self.algorithm {
            Algorithm::Hashing(_, key) => key.hash(input),
            _ => Hashed::default(),
        }
    }

    /// A usable target (for consistent hashing, the one `hash` maps to), avoiding those in `tried` while
    /// another usable one exists. None when every target is disabled or unhealthy, or the healthy weight
    /// is below the threshold.
    pub fn pick(&self, hash: Option<u64>, tried: &[usize]) -> Option<Pick<'_>> {
        if !self.above_threshold() {
            return None;
        }
        let usable = |i: usize| {
            self.targets
                .get(i)
                .is_some_and(|t| t.weight > 0 && t.state.is_healthy())
        };
        let fresh = |i: usize| usable(i) && !tried.contains(&i);
        let index = match &self.algorithm {
            Algorithm::RoundRobin(rr) => rr.pick(fresh).or_else(|| rr.pick(usable)),
            Algorithm::Hashing(ring, _) => {
                ring.pick(hash, fresh).or_else(|| ring.pick(hash, usable))
            }
            Algorithm::Scored(s) => {
                let views = self.targets.iter().map(|t| (t.weight, &*t.state));
                s.pick(views.clone(), fresh)
                    .or_else(|| s.pick(views, usable))
            }
        }?;
        Some(Pick {
            index,
            target: self.targets.get(index)?,
        })
    }

    /// Whether picks read in-flight counts and latency (least-connections, latency): only then does the
    /// request path keep them up to date.
    pub fn tracks_load(&self) -> bool {
        matches!(self.algorithm, Algorithm::Scored(_))
    }

    /// Whether a pick would find a target now (some enabled target is healthy, above the threshold).
    pub fn available(&self) -> bool {
        self.above_threshold()
            && self
                .targets
                .iter()
                .any(|t| t.weight > 0 && t.state.is_healthy())
    }

    /// Whether enough of the weight is healthy (always, when the threshold is 0).
    fn above_threshold(&self) -> bool {
        if self.threshold <= 0.0 {
            return true;
        }
        let (healthy, total) = self.targets.iter().fold((0u64, 0u64), |(h, t), x| {
            let w = u64::from(x.weight);
            (h + if x.state.is_healthy() { w } else { 0 }, t + w)
        });
        total > 0 && healthy as f64 * 100.0 >= self.threshold * total as f64
    }
}

#[cfg(test)]
mod tests;
