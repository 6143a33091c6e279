//! Resolving one name to addresses: the hosts file first, then DNS with Kong's `dns_order` over the
//! search list, following SRV targets and CNAMEs. The answer's TTL is the smallest TTL of the records
//! it was built from.

use super::client::Client;
use super::settings::{DnsSettings, Kind};
use super::system::{read_hosts, Hosts, ResolvConf};
use super::Addr;
use hickory_proto::rr::Name;
use records::Step;
use std::time::Duration;

mod records;
#[cfg(test)]
pub(super) use records::spread;

/// How long a hosts-file answer is used before it is looked up again (the file is read once anyway).
const HOSTS_TTL: Duration = Duration::from_secs(3600);

/// The outcome of resolving a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Addresses (SRV answers already spread by weight), the record TTL, and the type that answered.
    Found {
        addrs: Vec<Addr>,
        ttl: Duration,
        kind: Kind,
    },
    /// The name does not exist, or has no record of any type tried.
    NotFound,
    /// The nameservers did not answer usably.
    Failed,
}

/// Everything needed to resolve names; built once at start, shared by the workers.
#[derive(Debug)]
pub struct Resolver {
    pub settings: DnsSettings,
    hosts: Hosts,
    client: Client,
    search: Vec<String>,
    ndots: usize,
}

impl Resolver {
    /// Reads the hosts file and `/etc/resolv.conf`; `dns_resolver` replaces the latter's nameservers.
    pub fn new(settings: DnsSettings) -> Resolver {
        Resolver::with(settings, ResolvConf::system())
    }

    /// A resolver over an explicit resolv.conf (tests).
    pub fn with(settings: DnsSettings, conf: ResolvConf) -> Resolver {
        let servers = match settings.resolvers.is_empty() {
            true => conf.nameservers,
            false => settings.resolvers.clone(),
        };
        Resolver {
            hosts: read_hosts(&settings.hostsfile),
            client: Client {
                servers,
                timeout: conf.timeout,
                attempts: conf.attempts,
            },
            search: conf.search,
            ndots: conf.ndots,
            settings,
        }
    }

    /// Resolves `host`; `last` is the type that answered last time (Kong's `LAST`).
    pub async fn resolve(&self, host: &str, last: Option<Kind>) -> Outcome {
        let order = self.order(last);
        if let Some(found) = self.in_hosts(host, &order) {
            return found;
        }
        let mut failed = false;
        for name in self.candidates(host) {
            match self.resolve_name(&name, &order).await {
                Outcome::NotFound => {}
                Outcome::Failed => failed = true,
                found => return found,
            }
        }
        if failed {
            Outcome::Failed
        } else {
            Outcome::NotFound
        }
    }

    /// `dns_order` with `LAST` replaced by the type that answered last (or dropped).
    fn order(&self, last: Option<Kind>) -> Vec<Kind> {
        let mut order = Vec::with_capacity(self.settings.order.len());
        for kind in &self.settings.order {
            let kind = match kind {
                Kind::Last => match last {
                    Some(k) => k,
                    None => continue,
                },
                k => *k,
            };
            if !order.contains(&kind) {
                order.push(kind);
            }
        }
        order
    }

    fn in_hosts(&self, host: &str, order: &[Kind]) -> Option<Outcome> {
        let ips = self
            .hosts
            .get(&host.trim_end_matches('.').to_ascii_lowercase())?;
        order.iter().find_map(|kind| {
            let addrs: Vec<Addr> = ips
                .iter()
                .filter(|ip| match kind {
                    Kind::A => ip.is_ipv4(),
                    Kind::Aaaa => ip.is_ipv6(),
                    _ => false,
                })
                .map(|ip| Addr::ip(*ip))
                .collect();
            (!addrs.is_empty()).then_some(Outcome::Found {
                addrs,
                ttl: HOSTS_TTL,
                kind: *kind,
            })
        })
    }

    /// The names to ask, in order: with enough dots (or a final dot) the name itself first, then the
    /// search list; otherwise the search list first.
    fn candidates(&self, host: &str) -> Vec<Name> {
        let absolute = host.ends_with('.');
        let bare = host.trim_end_matches('.');
        let mut names = Vec::new();
        let mut push = |text: String| {
            if let Ok(mut name) = Name::from_ascii(&text) {
                name.set_fqdn(true);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        };
        if absolute {
            push(bare.to_string());
            return names;
        }
        let itself_first = bare.matches('.').count() >= self.ndots;
        if itself_first {
            push(bare.to_string());
        }
        for suffix in &self.search {
            push(format!("{bare}.{suffix}"));
        }
        if !itself_first {
            push(bare.to_string());
        }
        names
    }

    /// Tries each type of `order` for one fully qualified name. NXDOMAIN ends the tries (the name has no
    /// record of any type), and so does a failure (nameservers that did not answer one question are not
    /// asked the next: a refresh against a silent server gives up after one round of timeouts).
    async fn resolve_name(&self, name: &Name, order: &[Kind]) -> Outcome {
        for kind in order {
            let outcome = match kind {
                Kind::A | Kind::Aaaa => self.addresses(name, *kind).await,
                Kind::Srv => self.srv(name).await,
                Kind::Cname => self.cname(name).await,
                Kind::Last => continue,
            };
            match outcome {
                Step::Found(addrs, ttl) => {
                    return Outcome::Found {
                        addrs,
                        ttl,
                        kind: *kind,
                    }
                }
                Step::Empty => {}
                Step::NoSuchName => return Outcome::NotFound,
                Step::Failed => return Outcome::Failed,
            }
        }
        Outcome::NotFound
    }
}

#[cfg(test)]
mod tests;
