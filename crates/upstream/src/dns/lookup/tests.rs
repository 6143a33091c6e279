//! The resolver against a real DNS server (the test kit's) on 127.0.0.1.

use super::super::settings::parse_order;
use super::*;
use sluice_testkit::DnsServer;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const V4: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)];

fn resolver(dns: &DnsServer, order: &str, hosts: &str) -> (Resolver, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let hostsfile = dir.path().join("hosts");
    std::fs::write(&hostsfile, hosts).unwrap();
    let settings = DnsSettings {
        resolvers: vec![dns.addr()],
        order: parse_order(order).unwrap(),
        hostsfile,
        ..DnsSettings::default()
    };
    let conf = ResolvConf {
        search: vec!["corp.test".into()],
        timeout: Duration::from_millis(200),
        attempts: 1,
        ..ResolvConf::default()
    };
    (Resolver::with(settings, conf), dir)
}

fn ips(outcome: &Outcome) -> Vec<(IpAddr, Option<u16>)> {
    match outcome {
        Outcome::Found { addrs, .. } => addrs.iter().map(|a| (a.ip, a.port)).collect(),
        other => panic!("not found: {other:?}"),
    }
}

#[tokio::test]
async fn a_records_with_their_ttl_and_last_type_first() {
    let dns = DnsServer::start();
    dns.set_a("svc.test", &V4, 7);
    let (r, _dir) = resolver(&dns, "LAST,SRV,A,CNAME", "");
    let first = r.resolve("svc.test", None).await;
    assert_eq!(
        ips(&first),
        vec![(V4[0].into(), None), (V4[1].into(), None)]
    );
    assert!(
        matches!(first, Outcome::Found { ttl, kind: Kind::A, .. } if ttl == Duration::from_secs(7))
    );
    assert_eq!(dns.queries("svc.test"), 2, "SRV then A");
    // LAST: A is asked first now.
    r.resolve("svc.test", Some(Kind::A)).await;
    assert_eq!(dns.queries("svc.test"), 3);
}

#[tokio::test]
async fn aaaa_only_names_need_aaaa_in_the_order() {
    let dns = DnsServer::start();
    dns.set_aaaa("v6.test", &[Ipv6Addr::LOCALHOST], 30);
    let (kong_default, _d1) = resolver(&dns, "LAST,SRV,A,CNAME", "");
    assert_eq!(
        kong_default.resolve("v6.test", None).await,
        Outcome::NotFound
    );
    let (with_aaaa, _d2) = resolver(&dns, "LAST,SRV,A,AAAA,CNAME", "");
    let found = with_aaaa.resolve("v6.test", None).await;
    assert_eq!(ips(&found), vec![(Ipv6Addr::LOCALHOST.into(), None)]);
}

#[tokio::test]
async fn srv_answers_use_the_lowest_priority_their_ports_weights_and_smallest_ttl() {
    let dns = DnsServer::start();
    dns.set_srv(
        "_http._tcp.svc.test",
        &[
            (10, 3, 8001, "a.test"),
            (10, 1, 8002, "b.test"),
            (20, 9, 8003, "c.test"),
        ],
        60,
    );
    dns.set_a("a.test", &V4[..1], 5);
    dns.set_a("b.test", &V4[1..], 50);
    let (r, _dir) = resolver(&dns, "LAST,SRV,A,CNAME", "");
    let found = r.resolve("_http._tcp.svc.test", None).await;
    let got = ips(&found);
    assert_eq!(got.len(), 4);
    assert_eq!(
        got.iter()
            .filter(|a| **a == (V4[0].into(), Some(8001)))
            .count(),
        3
    );
    assert_eq!(
        got.iter()
            .filter(|a| **a == (V4[1].into(), Some(8002)))
            .count(),
        1
    );
    assert!(
        matches!(found, Outcome::Found { ttl, kind: Kind::Srv, .. } if ttl == Duration::from_secs(5))
    );
    assert_eq!(dns.queries("c.test"), 0, "priority 20 is not used");
}

#[tokio::test]
async fn cnames_are_followed() {
    let dns = DnsServer::start();
    dns.set_cname("alias.test", "real.test", 20);
    dns.set_a("real.test", &V4[..1], 40);
    let (r, _dir) = resolver(&dns, "LAST,SRV,A,CNAME", "");
    let found = r.resolve("alias.test", None).await;
    assert_eq!(ips(&found), vec![(V4[0].into(), None)]);
    assert!(
        matches!(found, Outcome::Found { ttl, kind: Kind::Cname, .. } if ttl == Duration::from_secs(20))
    );
}

#[tokio::test]
async fn missing_names_silent_servers_and_the_search_list() {
    let dns = DnsServer::start();
    let (r, _dir) = resolver(&dns, "LAST,SRV,A,CNAME", "");
    assert_eq!(r.resolve("nope.test", None).await, Outcome::NotFound);
    assert_eq!(
        dns.queries("nope.test"),
        1,
        "NXDOMAIN ends the tries for that name"
    );
    // A short name: the search list first.
    dns.set_a("short.corp.test", &V4[..1], 30);
    assert_eq!(
        ips(&r.resolve("short", None).await),
        vec![(V4[0].into(), None)]
    );
    dns.set_silent(true);
    assert_eq!(r.resolve("short", None).await, Outcome::Failed);
}

#[tokio::test]
async fn hosts_file_names_resolve_without_dns() {
    let dns = DnsServer::start();
    let (r, _dir) = resolver(
        &dns,
        "LAST,SRV,A,AAAA,CNAME",
        "10.9.9.9 pinned.test\n::1 six.test\n",
    );
    assert_eq!(
        ips(&r.resolve("Pinned.Test", None).await),
        vec![("10.9.9.9".parse().unwrap(), None)]
    );
    assert_eq!(
        ips(&r.resolve("six.test", None).await),
        vec![(Ipv6Addr::LOCALHOST.into(), None)]
    );
    assert_eq!(dns.queries("pinned.test") + dns.queries("six.test"), 0);
}
