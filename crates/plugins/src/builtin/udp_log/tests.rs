//! udp-log's schema and datagram.

use super::*;

fn load(plugin_config: &str) -> Result<sluice_model::Config, String> {
    crate::logging::address::parse_plugin("udp-log", plugin_config)
}

#[test]
fn fills_kongs_defaults_and_refuses_what_kong_refuses() {
    let config = load("{host: 10.0.0.1, port: 514}").unwrap();
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    assert_eq!(
        (typed.host.as_str(), typed.port, typed.timeout),
        ("10.0.0.1", 514, 10000.0)
    );
    for (bad, expected) in [
        ("{port: 1}", "config.host: required field missing"),
        ("{host: a.test}", "config.port: required field missing"),
        ("{host: 'a.test:9', port: 1}", "must not have a port"),
        ("{host: a.test, port: -1}", "port"),
        ("{host: a.test, port: 1, timeout: x}", "timeout"),
        ("{host: a.test, port: 1, keepalive: 1}", "keepalive"),
        (
            "{host: a.test, port: 1, custom_fields_by_lua: {f: 'return 1'}}",
            "does not run Lua",
        ),
    ] {
        let err = load(bad).expect_err(bad);
        assert!(err.contains(expected), "{bad}: {err}");
    }
}

#[test]
fn the_datagram_is_the_record_without_a_newline() {
    let mut out = Vec::new();
    frame(b"{\"a\":1}", &mut out);
    assert_eq!(out, b"{\"a\":1}");
}
