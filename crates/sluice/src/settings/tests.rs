use super::*;

fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_match_kong() {
    let s = Settings::from_values(&BTreeMap::new()).unwrap();
    assert_eq!(s.proxy_listen, "0.0.0.0:8000, 0.0.0.0:8443 http2 ssl");
    assert_eq!(s.admin_listen, "127.0.0.1:8001");
    assert_eq!(s.status_listen, "127.0.0.1:8007");
    assert_eq!(s.stream_listen, "off");
    assert_eq!(s.lmdb_map_size, 2048 << 20);
    assert_eq!(s.mem_cache_size, 128 << 20);
    assert_eq!(
        s.lmdb_environment_path,
        PathBuf::from("/usr/local/sluice/dbless.lmdb")
    );
    assert!(s.worker_threads >= 1);
}

#[test]
fn conf_file_syntax_comments_and_errors() {
    let conf =
        "# comment\nproxy_listen = 127.0.0.1:9000 # trailing\nlog_level=debug\nheaders = a\\#b\n";
    let (v, ignored) = parse_conf(conf).unwrap();
    assert!(ignored.is_empty());
    assert_eq!(v["proxy_listen"], "127.0.0.1:9000");
    assert_eq!(v["log_level"], "debug");
    assert_eq!(v["headers"], "a#b");
    assert!(parse_conf("nonsense_key = 1")
        .unwrap_err()
        .to_string()
        .contains("unknown setting 'nonsense_key'"));
    // A Kong setting Sluice does not read is left out with a warning, as are Kong's nginx injections.
    let (v, ignored) =
        parse_conf("anonymous_reports = off\nnginx_http_gzip = on\nlog_level = info\n").unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(ignored.len(), 2);
    assert!(ignored[0].contains("line 1: 'anonymous_reports' is a Kong setting"));
    assert!(parse_conf("just words")
        .unwrap_err()
        .to_string()
        .contains("line 1"));
}

#[test]
fn values_are_checked() {
    let bad = Settings::from_values(&values(&[("worker_threads", "zero")])).unwrap_err();
    assert!(bad.to_string().contains("worker_threads"));
    let db = Settings::from_values(&values(&[("database", "cassandra")])).unwrap_err();
    assert!(db.to_string().contains("'postgres'"));
    let pg = Settings::from_values(&values(&[("database", "postgres"), ("pg_port", "x")]));
    assert!(pg.unwrap_err().to_string().contains("pg_port"));
    let pg = Settings::from_values(&values(&[
        ("database", "postgres"),
        ("pg_port", "5433"),
        ("pg_timeout", "250"),
        ("pg_password", "secret"),
    ]))
    .unwrap();
    let conf = pg.pg.as_ref().unwrap();
    assert_eq!((conf.port, conf.timeout.as_millis()), (5433, 250));
    assert_eq!(pg.to_json()["pg_password"], "******");
    let s = Settings::from_values(&values(&[
        ("nginx_worker_processes", "3"),
        ("prefix", "/tmp/x"),
        ("lmdb_environment_path", "db"),
        ("lmdb_map_size", "1g"),
        ("mem_cache_size", "16m"),
    ]))
    .unwrap();
    assert_eq!(s.worker_threads, 3);
    assert_eq!(s.lmdb_environment_path, PathBuf::from("/tmp/x/db"));
    assert_eq!(s.lmdb_map_size, 1 << 30);
    assert_eq!(s.mem_cache_size, 16 << 20);
}

#[test]
fn dns_settings_are_read_checked_and_shown() {
    let s = Settings::from_values(&values(&[
        ("dns_resolver", "127.0.0.1:5353"),
        ("dns_order", "last,a,aaaa"),
        ("dns_stale_ttl", "10"),
    ]))
    .unwrap();
    assert_eq!(s.dns.resolvers, vec!["127.0.0.1:5353".parse().unwrap()]);
    assert_eq!(s.dns.stale_ttl, std::time::Duration::from_secs(10));
    let json = s.to_json();
    assert_eq!(json["dns_order"], serde_json::json!(["LAST", "A", "AAAA"]));
    assert_eq!(json["dns_not_found_ttl"], 30.0);
    let bad = Settings::from_values(&values(&[("dns_order", "A,TXT")])).unwrap_err();
    assert!(bad.to_string().starts_with("dns_order:"), "{bad}");
    assert!(parse_conf("dns_error_ttl = 2").is_ok());
}

#[test]
fn upstream_keepalive_settings_are_read_checked_and_shown() {
    let s = Settings::from_values(&BTreeMap::new()).unwrap();
    assert_eq!(s.upstream_keepalive, sluice_proxy::Keepalive::default());
    assert_eq!(s.upstream_keepalive.pool_size, 512);
    assert_eq!(s.upstream_keepalive.max_requests, 10_000);
    assert_eq!(s.upstream_keepalive.idle_timeout, Duration::from_secs(60));
    let s = Settings::from_values(&values(&[
        ("upstream_keepalive_pool_size", "0"),
        ("upstream_keepalive_max_requests", "100"),
        ("upstream_keepalive_idle_timeout", "0"),
    ]))
    .unwrap();
    assert_eq!(s.upstream_keepalive.pool_size, 0);
    assert_eq!(s.upstream_keepalive.max_requests, 100);
    assert_eq!(s.upstream_keepalive.idle_bound(), Duration::MAX);
    assert_eq!(s.to_json()["upstream_keepalive_max_requests"], 100);
    let bad = Settings::from_values(&values(&[("upstream_keepalive_pool_size", "-1")]));
    assert!(bad
        .unwrap_err()
        .to_string()
        .contains("upstream_keepalive_pool_size"));
}
