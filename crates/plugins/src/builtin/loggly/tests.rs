//! loggly's schema and message, byte for byte.

use super::*;

fn load(plugin_config: &str) -> Result<sluice_model::Config, String> {
    crate::logging::address::parse_plugin("loggly", plugin_config)
}

#[test]
fn fills_kongs_defaults_and_refuses_what_kong_refuses() {
    let config = load("{key: TOKEN}").unwrap();
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    assert_eq!(
        (typed.host.as_str(), typed.port, typed.timeout),
        ("logs-01.loggly.com", 514, 10000.0)
    );
    assert_eq!(typed.tags, ["kong"]);
    let info = Severities::new("info", "info", "info", "info").unwrap();
    assert_eq!(typed.severities, info, "every severity at info");
    let dedup = load("{key: k, tags: [a, b, a]}").unwrap();
    assert_eq!(
        dedup.plugins[0].config["tags"],
        serde_json::json!(["a", "b"]),
        "a set"
    );
    for (bad, expected) in [
        ("{}", "config.key: required field missing"),
        ("{key: k, host: 'logs.test:514'}", "must not have a port"),
        ("{key: k, port: 70000}", "port"),
        ("{key: k, log_level: error}", "log_level"),
        ("{key: k, tags: [1]}", "tags"),
        (
            "{key: k, custom_fields_by_lua: {f: 'return 1'}}",
            "does not run Lua",
        ),
    ] {
        let err = load(bad).expect_err(bad);
        assert!(err.contains(expected), "{bad}: {err}");
    }
}

#[test]
fn the_message_is_kongs_rfc5424_frame() {
    let fixed = fixed_part("gw-1", "TOKEN", &["kong".into(), "prod".into()]);
    let stamp = chrono::NaiveDate::from_ymd_opt(2024, 3, 5)
        .and_then(|d| d.and_hms_opt(7, 8, 9))
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ");
    let mut out = Vec::new();
    // err (3): 8 + 3.
    message(&mut out, 3, stamp, &fixed, b"{\"a\":1}");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "<11>1 2024-03-05T07:08:09Z gw-1 kong - - [TOKEN@41058 tag=\"kong\" tag=\"prod\"] {\"a\":1}"
    );
    // No tags: Kong's concatenation leaves the space before the bracket.
    assert_eq!(fixed_part("h", "K", &[]), " h kong - - [K@41058 ] ");
}
