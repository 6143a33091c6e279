//! Resolving one name to addresses: the hosts file first, then DNS with Kong's `dns_order` over the
//! search list, following SRV targets and CNAMEs. The answer's TTL is the smallest TTL of the records
//! it was built from.

use super::client::{Client, Reply};
use super::settings::{DnsSettings, Kind};
use super::system::{read_hosts, Hosts, ResolvConf};
use super::Addr;
use hickory_proto::op::Message;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::net::IpAddr;
use std::time::Duration;

/// How long a hosts-file answer is used before it is looked up again (the file is read once anyway).
const HOSTS_TTL: Duration = Duration::from_secs(3600);
/// How many CNAMEs are followed before giving up.
const MAX_CNAMES: usize = 8;

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

    /// A or AAAA records of `name` (following a CNAME chain the server put in the answer).
    async fn addresses(&self, name: &Name, kind: Kind) -> Step {
        let rtype = match kind {
            Kind::Aaaa => RecordType::AAAA,
            _ => RecordType::A,
        };
        match self.client.ask(name, rtype).await {
            Reply::Answer(msg) => {
                let addrs: Vec<Addr> = msg.answers.iter().filter_map(ip_of).map(Addr::ip).collect();
                match addrs.is_empty() {
                    true => Step::Empty,
                    false => Step::Found(addrs, min_ttl(&msg.answers)),
                }
            }
            Reply::NoSuchName => Step::NoSuchName,
            Reply::Failed => Step::Failed,
        }
    }

    /// The SRV records of lowest priority, their targets resolved (from the additional section when the
    /// server sent them, else by A then AAAA queries) and spread by weight.
    async fn srv(&self, name: &Name) -> Step {
        let msg = match self.client.ask(name, RecordType::SRV).await {
            Reply::Answer(msg) => msg,
            Reply::NoSuchName => return Step::NoSuchName,
            Reply::Failed => return Step::Failed,
        };
        let records: Vec<(&hickory_proto::rr::rdata::SRV, u32)> = msg
            .answers
            .iter()
            .filter_map(|r| match &r.data {
                RData::SRV(srv) if !srv.target.is_root() => Some((srv, r.ttl)),
                _ => None,
            })
            .collect();
        let Some(best) = records.iter().map(|(s, _)| s.priority).min() else {
            return Step::Empty;
        };
        let mut ttl = min_ttl(&msg.answers);
        let mut weighted = Vec::new();
        for (srv, _) in records.iter().filter(|(s, _)| s.priority == best) {
            let port = (srv.port != 0).then_some(srv.port);
            let (ips, target_ttl) = match self.target_ips(&msg, &srv.target).await {
                Some(found) => found,
                None => continue,
            };
            ttl = ttl.min(target_ttl);
            for ip in ips {
                weighted.push((Addr { ip, port }, srv.weight));
            }
        }
        match weighted.is_empty() {
            true => Step::Failed,
            false => Step::Found(spread(&weighted), ttl),
        }
    }

    async fn target_ips(&self, msg: &Message, target: &Name) -> Option<(Vec<IpAddr>, Duration)> {
        let extra: Vec<&Record> = msg
            .additionals
            .iter()
            .filter(|r| r.name == *target)
            .collect();
        let ips: Vec<IpAddr> = extra.iter().filter_map(|r| ip_of(r)).collect();
        if !ips.is_empty() {
            return Some((ips, min_ttl(extra)));
        }
        for kind in [Kind::A, Kind::Aaaa] {
            if let Step::Found(addrs, ttl) = self.addresses(target, kind).await {
                return Some((addrs.into_iter().map(|a| a.ip).collect(), ttl));
            }
        }
        None
    }

    /// A CNAME of `name`, its target resolved by A then AAAA (following further CNAMEs).
    async fn cname(&self, name: &Name) -> Step {
        let mut name = name.clone();
        let mut ttl = Duration::MAX;
        for _ in 0..MAX_CNAMES {
            let msg = match self.client.ask(&name, RecordType::CNAME).await {
                Reply::Answer(msg) => msg,
                Reply::NoSuchName => return Step::NoSuchName,
                Reply::Failed => return Step::Failed,
            };
            let Some(target) = msg.answers.iter().find_map(|r| match &r.data {
                RData::CNAME(c) => Some(c.0.clone()),
                _ => None,
            }) else {
                return Step::Empty;
            };
            ttl = ttl.min(min_ttl(&msg.answers));
            for kind in [Kind::A, Kind::Aaaa] {
                if let Step::Found(addrs, t) = self.addresses(&target, kind).await {
                    return Step::Found(addrs, ttl.min(t));
                }
            }
            name = target;
        }
        Step::Empty
    }
}

/// The result of one record type for one name.
enum Step {
    Found(Vec<Addr>, Duration),
    Empty,
    NoSuchName,
    Failed,
}

fn ip_of(record: &Record) -> Option<IpAddr> {
    match &record.data {
        RData::A(a) => Some(IpAddr::V4(a.0)),
        RData::AAAA(a) => Some(IpAddr::V6(a.0)),
        _ => None,
    }
}

fn min_ttl<'a>(records: impl IntoIterator<Item = &'a Record>) -> Duration {
    let secs = records.into_iter().map(|r| r.ttl).min().unwrap_or(0);
    Duration::from_secs(u64::from(secs))
}

/// The addresses in the order requests walk them: each as often as its weight (reduced by the weights'
/// gcd), interleaved by the balancer's smooth weighted round-robin. Weight 0 counts as 1, as in Kong (RFC
/// 2782 gives such records "a very small chance").
pub fn spread(weighted: &[(Addr, u16)]) -> Vec<Addr> {
    let weights: Vec<u32> = weighted.iter().map(|(_, w)| u32::from(*w).max(1)).collect();
    crate::balancer::smooth_schedule(&weights)
        .into_iter()
        .map(|i| weighted[i as usize].0)
        .collect()
}

#[cfg(test)]
mod tests;
