use super::*;

#[test]
fn parses_case_specs() {
    let table: &[(&str, CaseKind, usize, usize)] = &[
        ("no-plugins", CaseKind::NoPlugins, 1, 0),
        ("no-plugins@100", CaseKind::NoPlugins, 100, 0),
        ("no-plugins@100/7", CaseKind::NoPlugins, 100, 0),
        ("rate-limiting@3", CaseKind::RateLimiting, 3, 0),
        ("rl-redis", CaseKind::RlRedis, 1, 0),
        ("rl-redis-sync@100", CaseKind::RlRedisSync, 100, 0),
        ("rl-key-auth", CaseKind::RlKeyAuth, 1, 1),
        ("rl-key-auth@100", CaseKind::RlKeyAuth, 100, 100),
        ("rl-basic-auth@100/5", CaseKind::RlBasicAuth, 100, 5),
        ("rl-basic-auth@0/0", CaseKind::RlBasicAuth, 1, 1),
        ("large", CaseKind::Large, LARGE_COUNT, LARGE_COUNT),
        ("proxy-cache-hit", CaseKind::ProxyCacheHit, 1, 0),
        ("statsd", CaseKind::Statsd, 1, 0),
        ("opentelemetry@3", CaseKind::Opentelemetry, 3, 0),
        ("tcp-log", CaseKind::TcpLog, 1, 0),
    ];
    for &(spec, kind, routes, consumers) in table {
        let case = Case::parse(spec).unwrap();
        assert_eq!(
            case,
            Case {
                kind,
                routes,
                consumers
            },
            "{spec}"
        );
    }
}

#[test]
fn rejects_bad_specs() {
    for spec in [
        "",
        "nope",
        "no-plugins@x",
        "no-plugins@1/2/3",
        "rl-key-auth@-1",
        "rl-key-auth@",
    ] {
        assert!(Case::parse(spec).is_err(), "{spec}");
    }
}

#[test]
fn display_round_trips() {
    let mut all = suite("kong8").unwrap();
    all.push(Case::parse("rl-basic-auth@100/5").unwrap());
    for case in all {
        assert_eq!(Case::parse(&case.to_string()).unwrap(), case, "{case}");
    }
    assert_eq!(suite("kong8").unwrap().len(), 8);
    assert!(suite("kong9").is_err());
}

#[test]
fn baseline_keeps_routes() {
    let c = Case::parse("rl-key-auth@100").unwrap();
    assert_eq!(c.baseline().to_string(), "no-plugins@100");
    assert_eq!(c.file_stem(), "rl-key-auth_100");
}

#[test]
fn basic_credential_is_base64_of_user_and_password() {
    let (name, value) = config::credential_header(Auth::Basic, 3);
    assert_eq!(name, "Authorization");
    assert_eq!(value, "Basic YzM6cHctMw==");
    assert_eq!(
        config::credential_header(Auth::Key, 3),
        ("apikey", "key-3".to_string())
    );
    // HS256 of {"alg":"HS256","typ":"JWT"}.{"iss":"key-3"} with "secret-3" (checked with PyJWT).
    let (name, value) = config::credential_header(Auth::Jwt, 3);
    assert_eq!((name, value.as_str()), ("Authorization", JWT_3));
}

#[test]
fn hmac_credential_signs_the_fixed_date() {
    let (name, value) = config::credential_header(Auth::Hmac, 3);
    let [(date_name, date)] = &config::fixed_headers(Auth::Hmac)[..] else {
        panic!("one fixed header")
    };
    assert_eq!((name, *date_name), ("Authorization", "Date"));
    assert!(httpdate::parse_http_date(date).is_ok(), "{date}");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"secret-3");
    let tag = ring::hmac::sign(&key, format!("date: {date}").as_bytes());
    use base64::Engine as _;
    let signature = base64::engine::general_purpose::STANDARD.encode(tag.as_ref());
    assert_eq!(
        value,
        format!(
            r#"hmac username="c3", algorithm="hmac-sha256", headers="date", signature="{signature}""#
        )
    );
    assert!(config::fixed_headers(Auth::Jwt).is_empty());
    assert_eq!(Case::parse("rl-hmac-auth@4").unwrap().consumers, 4);
}

const JWT_3: &str = "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJrZXktMyJ9.VPIZd4SkCdw9XRe9vEDWIHx8V-kzkAtnYnD45vgLtAs";

#[test]
fn log_sink_cases_send_to_the_built_in_upstream() {
    let config = |kind| config::build(&Case::new(kind, None, None), "127.0.0.1:7000");
    for kind in [CaseKind::Statsd, CaseKind::TcpLog] {
        let plugin = &config(kind)["plugins"][0];
        assert_eq!(plugin["name"], kind.name());
        assert_eq!(plugin["config"]["host"], "127.0.0.1");
        assert_eq!(plugin["config"]["port"], 7000);
    }
    let otel = &config(CaseKind::Opentelemetry)["plugins"][0]["config"];
    assert_eq!(otel["traces_endpoint"], "http://127.0.0.1:7000/v1/traces");
    assert_eq!(otel["sampling_rate"], 1.0);
}

#[test]
fn protocol_cases_parse_and_run_on_peers() {
    for (spec, protocol) in [
        ("ws-echo", Protocol::WebSocket),
        ("grpc-unary@3", Protocol::Grpc),
    ] {
        let case = Case::parse(spec).unwrap();
        assert_eq!(case.kind.protocol(), protocol, "{spec}");
        assert!(case.peers_can_run(), "{spec}");
        assert_eq!(case.peer_case(), case, "{spec}");
        assert_eq!(Case::parse(&case.to_string()).unwrap(), case);
    }
    let rl = Case::parse("rate-limiting@4").unwrap();
    assert!(!rl.peers_can_run());
    assert_eq!(rl.peer_case().to_string(), "no-plugins@4");
    assert_eq!(CaseKind::NoPlugins.protocol(), Protocol::Http);
}

#[test]
fn ws_echo_config_is_a_plain_http_route() {
    let c = config::build(&Case::parse("ws-echo@2").unwrap(), "127.0.0.1:7000");
    let service = &c["services"][0];
    assert_eq!(service["url"], "http://127.0.0.1:7000");
    assert_eq!(service["routes"][1]["paths"][0], "/r1");
    assert!(c.get("plugins").is_none());
}

#[test]
fn grpc_unary_config_is_a_grpc_service_and_routes() {
    let case = Case::parse("grpc-unary@2").unwrap();
    let text = config::render(
        &config::build(&case, "127.0.0.1:7000"),
        config::Format::Yaml,
    )
    .unwrap();
    // Read back as YAML, the way the gateway reads it.
    let v: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let service = &v["services"][0];
    assert_eq!(service["url"].as_str(), Some("grpc://127.0.0.1:7000"));
    let route = &service["routes"][1];
    assert_eq!(route["paths"][0].as_str(), Some("/perf.R1/"));
    assert_eq!(route["protocols"][0].as_str(), Some("grpc"));
    assert_eq!(route["strip_path"].as_bool(), Some(false));
    assert!(config::grpc_path(1).starts_with(route["paths"][0].as_str().unwrap()));
    assert!(v.get("plugins").is_none());
}
