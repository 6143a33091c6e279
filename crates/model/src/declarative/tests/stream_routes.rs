//! Stream routes (`tcp`, `tls`, `udp`, `tls_passthrough`): `sources` / `destinations` and Kong's rules of
//! which matchers each kind of route needs and takes; a plugin whose schema has its own default
//! `protocols` (stream ones among them).

use super::*;

#[test]
fn stream_routes_load_with_their_addresses() {
    let c = ok(r#"
_format_version: "3.0"
services: [{name: s, protocol: tcp, host: 127.0.0.1, port: 9000}]
routes:
- {name: a, service: s, protocols: [tcp], sources: [{ip: 10.0.0.0/8}, {port: 1234}]}
- {name: b, service: s, protocols: [tls_passthrough], snis: ["*.example.com"]}
- {name: c, service: s, protocols: [udp], destinations: [{ip: "::1", port: 53}]}
"#);
    let a = c.routes[0].sources.as_ref().unwrap();
    assert_eq!(a[0].ip.as_deref(), Some("10.0.0.0/8"));
    assert_eq!((a[0].port, a[1].port), (None, Some(1234)));
    assert!(c.routes[1].sources.is_none());
    let d = &c.routes[2].destinations.as_ref().unwrap()[0];
    assert_eq!((d.ip.as_deref(), d.port), (Some("::1"), Some(53)));
}

#[test]
fn stream_route_rules_have_kongs_messages() {
    let got = errs(
        r#"
_format_version: "3.0"
routes:
- {protocols: [tcp]}
- {protocols: [tls_passthrough], sources: [{ip: 1.2.3.4}]}
- {protocols: [tcp, tls], paths: [/x], sources: [{port: 1}]}
- {protocols: [http], paths: [/x], sources: [{port: 1}], snis: [a.test]}
- {protocols: [udp], sources: [{}, {ip: nope}, {port: 70000}]}
"#,
    );
    let want = [
        "routes[0] @entity: must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'",
        "routes[1] @entity: must set snis when 'protocols' is 'tls_passthrough'",
        "routes[2] paths: cannot set 'paths' when 'protocols' is 'tcp', 'tls', 'tls_passthrough' or 'udp'",
        "routes[3] sources: cannot set 'sources' when 'protocols' is 'http' or 'https'",
        "routes[3] snis: 'snis' can only be set when 'protocols' is 'grpcs', 'https', 'tls' or 'tls_passthrough'",
    ];
    for w in want {
        assert!(got.iter().any(|g| g == w), "missing {w:?} in {got:#?}");
    }
    let udp: Vec<_> = got.iter().filter(|g| g.starts_with("routes[4]")).collect();
    assert!(
        udp.iter()
            .any(|g| g.contains("at least one of these fields must be non-empty: 'ip', 'port'")),
        "{udp:#?}"
    );
    assert!(
        udp.iter()
            .any(|g| g.contains("invalid ip or cidr range: 'nope'")),
        "{udp:#?}"
    );
    assert!(
        udp.iter()
            .any(|g| g.contains("value should be between 0 and 65535")),
        "{udp:#?}"
    );
}

#[test]
fn a_plugin_without_protocols_gets_its_schemas_own_default() {
    let c = ok(r#"
_format_version: "3.0"
plugins:
- {name: guard}
- {name: guard, protocols: null, instance_name: b}
- {name: guard, protocols: [tls], instance_name: c}
- {name: limits}
"#);
    let protocols: Vec<_> = c.plugins.iter().map(|p| p.protocols.join(",")).collect();
    assert_eq!(
        protocols,
        ["http,tcp", "http,tcp", "tls", "grpc,grpcs,http,https"]
    );
}
