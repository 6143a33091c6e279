//! The record types of `dns_order` for one name: A/AAAA (with the CNAME chain a server includes), SRV
//! (lowest priority, targets resolved, spread by weight) and CNAME (followed to its addresses).

use super::super::client::Reply;
use super::super::settings::Kind;
use super::super::Addr;
use super::Resolver;
use hickory_proto::op::Message;
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::net::IpAddr;
use std::time::Duration;

/// How many CNAMEs are followed before giving up.
const MAX_CNAMES: usize = 8;

impl Resolver {
    /// A or AAAA records of `name` (following a CNAME chain the server put in the answer).
    pub(super) async fn addresses(&self, name: &Name, kind: Kind) -> Step {
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
    pub(super) async fn srv(&self, name: &Name) -> Step {
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
    pub(super) async fn cname(&self, name: &Name) -> Step {
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
pub(super) enum Step {
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
    crate::schedule::smooth_schedule(&weights)
        .into_iter()
        .map(|i| weighted[i as usize].0)
        .collect()
}
