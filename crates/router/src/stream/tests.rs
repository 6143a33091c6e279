//! Table tests of the stream router: each matcher, the listener's protocols, and Kong's priority.

use super::*;

/// Listener's protocols, source, destination, SNI, the route expected.
type Row = (
    StreamProtocols,
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<usize>,
);

type Nets = &'static [(Option<&'static str>, Option<u16>)];

struct R {
    protocols: &'static [&'static str],
    sources: Nets,
    destinations: Nets,
    snis: &'static [&'static str],
}

const TCP: &[&str] = &["tcp"];
const TLS: &[&str] = &["tls"];

fn r(
    protocols: &'static [&'static str],
    sources: Nets,
    destinations: Nets,
    snis: &'static [&'static str],
) -> R {
    R {
        protocols,
        sources,
        destinations,
        snis,
    }
}

fn router(routes: &[R]) -> StreamRouter {
    let own = |l: Nets| {
        l.iter()
            .map(|(ip, port)| (ip.map(str::to_string), *port))
            .collect()
    };
    StreamRouter::build(
        routes
            .iter()
            .enumerate()
            .map(|(i, r)| StreamRouteSpec {
                id: i,
                protocols: StreamProtocols::from_names(r.protocols),
                sources: own(r.sources),
                destinations: own(r.destinations),
                snis: r.snis.iter().map(|s| s.to_string()).collect(),
                // Later routes get smaller ids: a tie goes to the earlier route.
                uuid: 1000 - i as u128,
            })
            .collect(),
    )
    .unwrap()
}

fn find(
    router: &StreamRouter,
    accepts: StreamProtocols,
    src: &str,
    dst: &str,
    sni: Option<&str>,
) -> Option<usize> {
    router.find(&StreamParts {
        accepts,
        source: src.parse().unwrap(),
        destination: dst.parse().unwrap(),
        sni,
    })
}

#[test]
fn each_matcher_alone() {
    let rt = router(&[
        r(TCP, &[(Some("10.0.0.1"), None)], &[], &[]),
        r(TCP, &[(Some("10.1.0.0/16"), None)], &[], &[]),
        r(TCP, &[(None, Some(4000))], &[], &[]),
        r(TCP, &[], &[(Some("127.0.0.2"), None)], &[]),
        r(TCP, &[], &[(None, Some(5555))], &[]),
        r(TLS, &[], &[], &["exact.test"]),
        r(TLS, &[], &[], &["*.wild.test"]),
        r(TLS, &[], &[], &["pre.*"]),
    ]);
    let tcp = StreamProtocols::TCP;
    let tls = StreamProtocols::TLS;
    let table: &[Row] = &[
        (tcp, "10.0.0.1:1", "127.0.0.1:1", None, Some(0)),
        (tcp, "10.1.200.3:1", "127.0.0.1:1", None, Some(1)),
        (tcp, "10.2.0.1:4000", "127.0.0.1:1", None, Some(2)),
        (tcp, "10.2.0.1:1", "127.0.0.2:1", None, Some(3)),
        (tcp, "10.2.0.1:1", "127.0.0.1:5555", None, Some(4)),
        (tcp, "10.2.0.1:1", "127.0.0.1:1", None, None),
        // An IPv4 client seen through an IPv6 socket.
        (tcp, "[::ffff:10.0.0.1]:1", "127.0.0.1:1", None, Some(0)),
        (
            tls,
            "10.2.0.1:1",
            "127.0.0.1:1",
            Some("exact.test"),
            Some(5),
        ),
        (
            tls,
            "10.2.0.1:1",
            "127.0.0.1:1",
            Some("a.b.wild.test"),
            Some(6),
        ),
        (tls, "10.2.0.1:1", "127.0.0.1:1", Some("wild.test"), None),
        (
            tls,
            "10.2.0.1:1",
            "127.0.0.1:1",
            Some("pre.anything"),
            Some(7),
        ),
        (tls, "10.2.0.1:1", "127.0.0.1:1", Some("other.test"), None),
        // The listener decides which routes can be served: tcp routes never on a TLS listener.
        (tls, "10.0.0.1:1", "127.0.0.1:1", Some("other.test"), None),
    ];
    for (i, (accepts, src, dst, sni, want)) in table.iter().enumerate() {
        assert_eq!(
            find(&rt, *accepts, src, dst, *sni),
            *want,
            "row {i}: {src} -> {dst} sni {sni:?}"
        );
    }
}

#[test]
fn every_set_matcher_must_match_and_entries_are_alternatives() {
    let rt = router(&[r(
        &["tcp", "tls"],
        &[
            (Some("10.0.0.0/8"), Some(1000)),
            (Some("192.168.1.1"), None),
        ],
        &[(None, Some(5555))],
        &["a.test"],
    )]);
    let both = StreamProtocols::TCP.union(StreamProtocols::TLS);
    assert_eq!(
        find(&rt, both, "10.9.9.9:1000", "127.0.0.1:5555", Some("a.test")),
        Some(0)
    );
    assert_eq!(
        find(&rt, both, "192.168.1.1:7", "127.0.0.1:5555", Some("a.test")),
        Some(0)
    );
    // The CIDR entry needs its port too.
    assert_eq!(
        find(&rt, both, "10.9.9.9:1001", "127.0.0.1:5555", Some("a.test")),
        None
    );
    assert_eq!(
        find(&rt, both, "10.9.9.9:1000", "127.0.0.1:5556", Some("a.test")),
        None
    );
    assert_eq!(
        find(&rt, both, "10.9.9.9:1000", "127.0.0.1:5555", Some("b.test")),
        None
    );
    // Without a server name the snis are not looked at (Kong routes it as tcp).
    assert_eq!(
        find(&rt, both, "10.9.9.9:1000", "127.0.0.1:5555", None),
        Some(0)
    );
}

#[test]
fn kongs_priority_decides_between_matching_routes() {
    let any_src: Nets = &[(Some("0.0.0.0/0"), None)];
    let rt = router(&[
        // 0: a CIDR source only: weight 1 << 4.
        r(TLS, any_src, &[], &[]),
        // 1: a port source: weight 4 << 4, above the CIDR.
        r(TLS, &[(None, Some(4000))], &[], &[]),
        // 2: an exact IP source: weight 8 << 4, above the port.
        r(TLS, &[(Some("10.0.0.1"), None)], &[], &[]),
        // 3: an SNI: the top bit, above any address.
        r(TLS, &[], &[], &["a.test"]),
        // 4: sources and destinations together get the top bit too, plus their weights.
        r(TLS, any_src, &[(None, Some(5555))], &[]),
    ]);
    let tls = StreamProtocols::TLS;
    let other = Some("z.test");
    assert_eq!(find(&rt, tls, "10.0.0.2:1", "127.0.0.1:1", other), Some(0));
    assert_eq!(
        find(&rt, tls, "10.0.0.2:4000", "127.0.0.1:1", other),
        Some(1)
    );
    assert_eq!(
        find(&rt, tls, "10.0.0.1:4000", "127.0.0.1:1", other),
        Some(2)
    );
    // Without a server name the SNI route matches anything, and its top bit wins.
    assert_eq!(
        find(&rt, tls, "10.0.0.1:4000", "127.0.0.1:1", None),
        Some(3)
    );
    assert_eq!(
        find(&rt, tls, "10.0.0.1:4000", "127.0.0.1:1", Some("a.test")),
        Some(3)
    );
    // 4 outranks 3: the same top bit, and its address weights on top.
    assert_eq!(
        find(&rt, tls, "10.0.0.1:4000", "127.0.0.1:5555", Some("a.test")),
        Some(4)
    );
}

#[test]
fn equal_priority_goes_to_the_larger_id() {
    let rt = router(&[
        r(TCP, &[(None, Some(1))], &[], &[]),
        r(TCP, &[(None, Some(1))], &[], &[]),
    ]);
    // Route 0 has the larger id (see `router`).
    assert_eq!(
        find(&rt, StreamProtocols::TCP, "1.1.1.1:1", "2.2.2.2:2", None),
        Some(0)
    );
}

#[test]
fn bad_addresses_are_reported_per_route() {
    let err = StreamRouter::build(vec![StreamRouteSpec {
        id: 3,
        protocols: StreamProtocols::UDP,
        sources: vec![(Some("nope/8".into()), None)],
        destinations: vec![],
        snis: vec![],
        uuid: 1,
    }])
    .unwrap_err();
    assert_eq!(err[0].route, 3);
    assert!(err[0].message.contains("nope/8"), "{err:?}");
}
