//! Upstreams compiled per snapshot: one balancer per upstream over its targets, with each target's
//! runtime state taken from the [`Registry`] (so it carries over from the previous snapshot), and the
//! upstream's compiled health checks.

use sluice_model::{Config, Upstream};
use sluice_upstream::balancer::{AlgorithmSpec, Balancer, HashKey, Peer, Target};
use sluice_upstream::health::active::Spec;
use sluice_upstream::health::{Checks, Registry};
use std::collections::HashMap;
use std::sync::Arc;

/// One upstream of the snapshot (indexed like `config.upstreams`).
struct UpstreamInfo {
    pub name: String,
    /// The balancer for plain-text services (its peers' `Host` omit port 80).
    pub balancer: Arc<Balancer>,
    pub checks: Arc<Checks>,
}

/// What a checker task needs from the snapshot: the upstream's name, its check and its balancer.
pub(crate) struct Checked {
    pub upstream: String,
    pub spec: Arc<Spec>,
    pub balancer: Arc<Balancer>,
}

/// The upstreams of a config, with the balancers services share.
pub(crate) struct Upstreams {
    list: Vec<UpstreamInfo>,
    /// Balancers of TLS services (their peers' `Host` omit port 443), by upstream index, built on demand.
    tls: HashMap<usize, Arc<Balancer>>,
}

impl Upstreams {
    /// Compiles every upstream of `config`.
    pub fn compile(config: &Config) -> Upstreams {
        let list = config
            .upstreams
            .iter()
            .map(|u| UpstreamInfo {
                name: u.name.clone(),
                balancer: Arc::new(balancer(config, u, 80)),
                checks: Arc::new(Checks::new(&u.healthchecks)),
            })
            .collect();
        Upstreams {
            list,
            tls: HashMap::new(),
        }
    }

    /// The upstream a service `host` names, with the balancer for its scheme's `default_port`.
    pub fn for_service(
        &mut self,
        config: &Config,
        host: &str,
        default_port: u16,
    ) -> Option<(Arc<Balancer>, Arc<Checks>)> {
        let i = config
            .upstreams
            .iter()
            .position(|u| u.name.eq_ignore_ascii_case(host))?;
        let info = self.list.get(i)?;
        let balancer = if default_port == 80 {
            info.balancer.clone()
        } else {
            self.tls
                .entry(i)
                .or_insert_with(|| Arc::new(balancer(config, &config.upstreams[i], default_port)))
                .clone()
        };
        Some((balancer, info.checks.clone()))
    }

    /// The upstreams whose active checks are on.
    pub fn checked(&self) -> Vec<Checked> {
        self.list
            .iter()
            .filter_map(|u| {
                Some(Checked {
                    upstream: u.name.clone(),
                    spec: Arc::new(u.checks.active.clone()?),
                    balancer: u.balancer.clone(),
                })
            })
            .collect()
    }
}

/// An upstream's balancer: its targets (unparseable ones left out) with their registry state.
fn balancer(config: &Config, u: &Upstream, default_port: u16) -> Balancer {
    let registry = Registry::global();
    let targets = config
        .targets
        .iter()
        .filter(|t| t.upstream.id == u.id)
        .filter_map(|t| {
            let (host, port) = super::split_target(&t.target)?;
            let name = u.host_header.as_deref().unwrap_or(host);
            Some(Target {
                peer: Peer::new(host, port, name, default_port),
                name: t.target.clone(),
                weight: t.weight,
                state: registry.state(&u.name, &t.target),
            })
        })
        .collect();
    let spec = match u.algorithm.as_str() {
        "consistent-hashing" => AlgorithmSpec::ConsistentHashing {
            key: HashKey::of(u),
            slots: u.slots as usize,
        },
        "least-connections" => AlgorithmSpec::LeastConnections,
        "latency" => AlgorithmSpec::Latency,
        _ => AlgorithmSpec::RoundRobin,
    };
    Balancer::new(targets, spec, u.healthchecks.threshold)
}

/// Kong's health word for a target (`GET /upstreams/{u}/health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Healthy,
    Unhealthy,
    /// The upstream has no check on: health is not tracked.
    HealthchecksOff,
    /// The target's hostname did not resolve to any address (whatever the checks say).
    DnsError,
}

impl Health {
    /// The word Kong's Admin API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Healthy => "HEALTHY",
            Health::Unhealthy => "UNHEALTHY",
            Health::HealthchecksOff => "HEALTHCHECKS_OFF",
            Health::DnsError => "DNS_ERROR",
        }
    }
}

impl Upstreams {
    fn find(&self, upstream: &str) -> Option<&UpstreamInfo> {
        self.list
            .iter()
            .find(|u| u.name.eq_ignore_ascii_case(upstream))
    }

    /// The health of each target of `upstream` (by name), in config order; None when there is no such
    /// upstream.
    pub fn health(&self, upstream: &str) -> Option<Vec<(String, Health)>> {
        let u = self.find(upstream)?;
        let on = u.checks.enabled();
        Some(
            u.balancer
                .targets()
                .iter()
                .map(|t| {
                    let unresolved =
                        t.peer.is_hostname() && sluice_upstream::dns::unresolved(&t.peer.host);
                    let h = match (on, t.state.is_healthy()) {
                        _ if unresolved => Health::DnsError,
                        (false, _) => Health::HealthchecksOff,
                        (true, true) => Health::Healthy,
                        (true, false) => Health::Unhealthy,
                    };
                    (t.name.clone(), h)
                })
                .collect(),
        )
    }

    /// Whether `upstream` exists and would pick a target now.
    pub fn available(&self, upstream: &str) -> bool {
        self.find(upstream).is_some_and(|u| u.balancer.available())
    }

    /// Sets a target's health by hand; false when the upstream or target does not exist.
    pub fn set_health(&self, upstream: &str, target: &str, healthy: bool) -> bool {
        let found = self.find(upstream).and_then(|u| {
            u.balancer
                .targets()
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(target))
        });
        if let Some(t) = found {
            t.state.set_by_admin(healthy);
            tracing::info!(
                upstream,
                target,
                healthy,
                "target health set through the Admin API"
            );
        }
        found.is_some()
    }
}
