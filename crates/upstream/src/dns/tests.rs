//! The cache rules (TTL, stale, negative caching) over explicit clocks, settings parsing, and the
//! worker-level `resolve` against the hosts file.

use super::cache::{Cache, Use, MIN_TTL};
use super::lookup::{spread, Outcome};
use super::settings::{parse_order, parse_resolvers, parse_seconds, DnsSettings, Kind};
use super::system::{parse_hosts, ResolvConf};
use super::*;
use std::time::Duration;

fn addr(last: u8) -> Addr {
    Addr::ip(IpAddr::from([10, 0, 0, last]))
}

fn found(addrs: &[Addr], ttl: u64) -> Outcome {
    Outcome::Found {
        addrs: addrs.to_vec(),
        ttl: Duration::from_secs(ttl),
        kind: Kind::A,
    }
}

const S: Duration = Duration::from_secs(1);

#[test]
fn an_answer_is_used_round_robin_for_its_ttl_then_refreshed_while_stale() {
    let (set, mut cache, t0) = (DnsSettings::default(), Cache::default(), Instant::now());
    assert_eq!(cache.consult("svc", t0, &set), Use::Lookup);
    assert_eq!(
        cache.store("svc", found(&[addr(1), addr(2)], 10), t0, &set),
        Use::Addr(addr(1))
    );
    assert_eq!(cache.consult("svc", t0 + 9 * S, &set), Use::Addr(addr(2)));
    assert_eq!(cache.consult("svc", t0 + 9 * S, &set), Use::Addr(addr(1)));
    // Expired: the first request starts one refresh, the others keep using the stale answer meanwhile.
    assert_eq!(
        cache.consult("svc", t0 + 10 * S, &set),
        Use::Refresh(addr(2))
    );
    assert_eq!(cache.consult("svc", t0 + 11 * S, &set), Use::Addr(addr(1)));
    // The refresh lands: the new answer, for its own TTL.
    let t1 = t0 + 11 * S;
    assert_eq!(
        cache.store("svc", found(&[addr(3)], 2), t1, &set),
        Use::Addr(addr(3))
    );
    assert_eq!(cache.expires("svc"), Some(t1 + 2 * S));
    assert_eq!(cache.consult("svc", t1 + S, &set), Use::Addr(addr(3)));
    assert_eq!(cache.last("svc"), Some(Kind::A));
}

#[test]
fn a_known_name_is_never_waited_for_however_stale() {
    let (set, mut cache, t0) = (DnsSettings::default(), Cache::default(), Instant::now());
    cache.store("svc", found(&[addr(1)], 5), t0, &set);
    // Idle for an hour: the old answer is used, and refreshed in the background.
    assert_eq!(
        cache.consult("svc", t0 + 3600 * S, &set),
        Use::Refresh(addr(1))
    );
    assert_eq!(
        cache.consult("svc", t0 + 3601 * S, &set),
        Use::Addr(addr(1))
    );
}

#[test]
fn a_refresh_not_back_within_the_stale_ttl_is_started_again() {
    let (set, mut cache, t0) = (DnsSettings::default(), Cache::default(), Instant::now());
    cache.store("svc", found(&[addr(1)], 1), t0, &set);
    assert_eq!(cache.consult("svc", t0 + S, &set), Use::Refresh(addr(1)));
    assert_eq!(cache.consult("svc", t0 + 4 * S, &set), Use::Addr(addr(1)));
    // dns_stale_ttl (4 s) after the refresh started.
    assert_eq!(
        cache.consult("svc", t0 + 5 * S, &set),
        Use::Refresh(addr(1))
    );
}

#[test]
fn ttl_zero_is_used_for_a_second_and_dns_valid_ttl_overrides_record_ttls() {
    let (mut set, mut cache, t0) = (DnsSettings::default(), Cache::default(), Instant::now());
    cache.store("zero", found(&[addr(1)], 0), t0, &set);
    assert_eq!(cache.expires("zero"), Some(t0 + MIN_TTL));
    set.valid_ttl = Some(Duration::from_secs(60));
    cache.store("long", found(&[addr(1)], 1), t0, &set);
    assert_eq!(cache.expires("long"), Some(t0 + 60 * S));
}

#[test]
fn a_failed_refresh_keeps_the_known_addresses_and_retries_after_the_error_ttls() {
    let (set, mut cache, t0) = (DnsSettings::default(), Cache::default(), Instant::now());
    cache.store("svc", found(&[addr(1)], 5), t0, &set);
    let t1 = t0 + 5 * S;
    assert_eq!(
        cache.store("svc", Outcome::Failed, t1, &set),
        Use::Addr(addr(1))
    );
    assert_eq!(cache.expires("svc"), Some(t1 + set.error_ttl));
    assert_eq!(
        cache.consult("svc", t1 + set.error_ttl / 2, &set),
        Use::Addr(addr(1))
    );
    assert_eq!(
        cache.consult("svc", t1 + set.error_ttl, &set),
        Use::Refresh(addr(1))
    );
    // The name is gone: still the last addresses, asked again only after dns_not_found_ttl.
    assert_eq!(
        cache.store("svc", Outcome::NotFound, t1, &set),
        Use::Addr(addr(1))
    );
    assert_eq!(cache.expires("svc"), Some(t1 + set.not_found_ttl));
    assert_eq!(cache.last("svc"), Some(Kind::A));
}

#[test]
fn a_name_that_never_resolved_fails_for_the_negative_ttls() {
    let (set, mut cache, t0) = (DnsSettings::default(), Cache::default(), Instant::now());
    assert_eq!(
        cache.store("gone", Outcome::NotFound, t0, &set),
        Use::Failed
    );
    assert_eq!(cache.consult("gone", t0 + 29 * S, &set), Use::Failed);
    assert_eq!(cache.consult("gone", t0 + 30 * S, &set), Use::Lookup);
    assert_eq!(cache.store("down", Outcome::Failed, t0, &set), Use::Failed);
    assert_eq!(cache.consult("down", t0 + S / 2, &set), Use::Failed);
    assert_eq!(cache.consult("down", t0 + S, &set), Use::Lookup);
    // A later answer replaces the failure.
    assert_eq!(
        cache.store("down", found(&[addr(4)], 9), t0 + S, &set),
        Use::Addr(addr(4))
    );
}

#[test]
fn srv_weights_spread_addresses_smoothly() {
    let (a, b) = (
        Addr {
            port: Some(1),
            ..addr(1)
        },
        Addr {
            port: Some(2),
            ..addr(2)
        },
    );
    // nginx's smooth order: interleaved, not in bursts.
    assert_eq!(spread(&[(a, 3), (b, 1)]), vec![a, a, b, a]);
    assert_eq!(spread(&[(a, 2), (b, 4)]), vec![b, a, b]);
    // Weight 0 counts as 1 (Kong); weights are reduced by their gcd.
    let s = spread(&[(a, 0), (b, 5)]);
    assert_eq!((s.len(), s.iter().filter(|x| **x == a).count()), (6, 1));
    assert_eq!(spread(&[(a, 0), (b, 0)]), vec![a, b]);
    assert_eq!(spread(&[(a, 60000), (b, 60000)]), vec![a, b]);
}

#[test]
fn kong_settings_parse_with_their_defaults_and_name_the_bad_one() {
    let d = DnsSettings::from_kong(|_| None).unwrap();
    assert_eq!(d, DnsSettings::default());
    assert_eq!(d.order, vec![Kind::Last, Kind::Srv, Kind::A, Kind::Cname]);
    assert_eq!(
        parse_resolvers("10.0.0.1, 10.0.0.2:5353, [::1]:53, ::1").unwrap(),
        vec![
            "10.0.0.1:53".parse().unwrap(),
            "10.0.0.2:5353".parse().unwrap(),
            "[::1]:53".parse().unwrap(),
            "[::1]:53".parse().unwrap()
        ]
    );
    assert_eq!(
        parse_order("aaaa, a,last").unwrap(),
        vec![Kind::Aaaa, Kind::A, Kind::Last]
    );
    assert!(parse_order("LAST").is_err());
    assert!(parse_order("A,MX").is_err());
    assert_eq!(parse_seconds("0.5").unwrap(), Duration::from_millis(500));
    assert!(parse_seconds("-1").is_err());
    let err = DnsSettings::from_kong(|k| (k == "dns_stale_ttl").then(|| "soon".to_string()));
    assert!(err.unwrap_err().starts_with("dns_stale_ttl:"));
    let set = DnsSettings::from_kong(|k| match k {
        "dns_valid_ttl" => Some("7".into()),
        "dns_hostsfile" => Some("/tmp/hosts".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(
        (set.valid_ttl, set.hostsfile.to_str()),
        (Some(7 * S), Some("/tmp/hosts"))
    );
}

#[test]
fn resolv_conf_and_hosts_files_parse() {
    let conf = ResolvConf::parse(
        "# comment\nnameserver 10.1.1.1\nnameserver fe80::1%eth0\nsearch a.example b.example.\noptions ndots:2 timeout:3 attempts:4 rotate\n",
    );
    assert_eq!(conf.nameservers.len(), 2);
    assert_eq!(conf.search, vec!["a.example", "b.example"]);
    assert_eq!((conf.ndots, conf.timeout, conf.attempts), (2, 3 * S, 4));
    let hosts =
        parse_hosts("127.0.0.1 localhost Local.Test # me\n::1 localhost ip6-localhost\nbad line\n");
    let ips: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()];
    assert_eq!(hosts["localhost"], ips);
    assert_eq!(hosts["local.test"], ips[..1]);
    assert!(!hosts.contains_key("bad"));
}

#[tokio::test]
async fn resolve_answers_hosts_file_names_and_fails_unknown_ones() {
    let addr = resolve("localhost", 8080).await.unwrap();
    assert_eq!(addr, "127.0.0.1:8080".parse().unwrap());
    // `.invalid` never resolves (RFC 6761): remembered as a failure on this worker.
    assert_eq!(
        resolve("sluice-test.invalid", 80).await,
        Err(UpstreamError::NameResolution)
    );
    let now = Instant::now();
    let cached = LOCAL.with(|l| {
        l.cache
            .borrow_mut()
            .consult("sluice-test.invalid", now, &l.resolver.settings)
    });
    assert_eq!(cached, Use::Failed);
}
