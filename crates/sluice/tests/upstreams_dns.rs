//! Upstream targets named by DNS, resolved by the real binary through a real DNS server (the test kit's,
//! set with `dns_resolver`): record TTLs respected, changes followed, stale answers kept while the server
//! is silent, 503 for names that never resolve, one lookup for concurrent requests, SRV ports, and IPv6
//! (AAAA answers and literals).

mod support;

use sluice_testkit::{client, DnsServer, EchoUpstream, Gateway};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};
use support::{hit, BIN};

const ONE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const TWO: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// Per `(name, target)`: service `/{name}` over upstream `name` with the one target `target`.
fn config(services: &[(&str, &str)]) -> String {
    let (mut svcs, mut ups) = (String::new(), String::new());
    for (name, target) in services {
        svcs.push_str(&format!(
            "- {{name: {name}, host: {name}, retries: 0, routes: [{{paths: [/{name}]}}]}}\n"
        ));
        ups.push_str(&format!(
            "- {{name: {name}, targets: [{{target: \"{target}\"}}]}}\n"
        ));
    }
    format!("_format_version: \"3.0\"\nservices:\n{svcs}upstreams:\n{ups}")
}

/// The binary resolving through `dns` with extra `SLUICE_*` settings. The machine's search list and
/// options are overridden (glibc's `LOCALDOMAIN`, `RES_OPTIONS`) so the test asks exactly the names it
/// counts, and a silent server costs a 1 s timeout.
fn gateway(dns: &DnsServer, yaml: &str, env: &[(&str, &str)]) -> Gateway {
    let mut b = Gateway::builder(BIN)
        .workers(2)
        .config_yaml(yaml)
        .env("SLUICE_DNS_RESOLVER", &dns.addr().to_string())
        .env("LOCALDOMAIN", "")
        .env("RES_OPTIONS", "ndots:1 timeout:1 attempts:1");
    for (k, v) in env {
        b = b.env(k, v);
    }
    b.start()
}

/// Two named echo upstreams on one port: "one" on 127.0.0.1, "two" on 127.0.0.2.
fn two_upstreams() -> (EchoUpstream, EchoUpstream) {
    let one = EchoUpstream::named_at("one", SocketAddr::from((ONE, 0)));
    let two = EchoUpstream::named_at("two", SocketAddr::from((TWO, one.port())));
    (one, two)
}

/// Hits `/path` until `want` answers `rounds` times in a row; panics after `limit`.
async fn until_served_by(gw: &Gateway, path: &str, want: &str, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut streak = 0;
    while streak < 10 {
        let (status, by) = hit(gw, path, &[]).await;
        streak = if status == 200 && by == want {
            streak + 1
        } else {
            0
        };
        assert!(
            started.elapsed() < limit,
            "{path} not served by {want} within {limit:?} (last: {status} {by})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}

/// Hits `/path` for `time`, asserting every answer comes from `want`.
async fn always_served_by(gw: &Gateway, path: &str, want: &str, time: Duration) -> usize {
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < time {
        assert_eq!(
            hit(gw, path, &[]).await,
            (200, want.to_string()),
            "request {n}"
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_ttl_is_followed_and_a_long_one_is_not_asked_again() {
    let (_one, _two) = two_upstreams();
    let port = _one.port();
    let dns = DnsServer::start();
    dns.set_a("short.dns.test", &[ONE], 1);
    dns.set_a("long.dns.test", &[ONE], 3600);
    let (short, long) = (
        format!("short.dns.test:{port}"),
        format!("long.dns.test:{port}"),
    );
    let yaml = config(&[("short", &short), ("long", &long)]);
    let gw = gateway(&dns, &yaml, &[]);
    always_served_by(&gw, "/short", "one", Duration::from_millis(300)).await;
    always_served_by(&gw, "/long", "one", Duration::from_secs(1)).await;

    let asked = dns.queries("short.dns.test");
    dns.set_a("short.dns.test", &[TWO], 1);
    let took = until_served_by(&gw, "/short", "two", Duration::from_secs(6)).await;
    eprintln!("TTL 1 s: traffic moved to the new address in {took:?}");
    assert!(dns.queries("short.dns.test") > asked, "no re-query");

    let asked = dns.queries("long.dns.test");
    dns.set_a("long.dns.test", &[TWO], 3600);
    always_served_by(&gw, "/long", "one", Duration::from_secs(3)).await;
    assert_eq!(
        dns.queries("long.dns.test"),
        asked,
        "a 3600 s answer was asked again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_dns_server_leaves_traffic_on_the_last_known_address() {
    let (_one, _two) = two_upstreams();
    let dns = DnsServer::start();
    dns.set_a("quiet.dns.test", &[ONE], 1);
    let yaml = config(&[("quiet", &format!("quiet.dns.test:{}", _one.port()))]);
    let gw = gateway(&dns, &yaml, &[]);
    always_served_by(&gw, "/quiet", "one", Duration::from_millis(300)).await;
    dns.set_silent(true);
    let asked = dns.queries("quiet.dns.test");
    // Past the TTL and dns_stale_ttl (4 s), with refreshes timing out after 1 s and retried after
    // dns_error_ttl (1 s): still served, never 503.
    let n = always_served_by(&gw, "/quiet", "one", Duration::from_secs(7)).await;
    let retries = dns.queries("quiet.dns.test") - asked;
    assert!(retries >= 4, "{retries} refreshes while silent");
    eprintln!("silent DNS: {n} requests served on the stale address, {retries} refreshes failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_never_resolves_is_503_name_resolution_failed() {
    let dns = DnsServer::start();
    let gw = gateway(&dns, &config(&[("nowhere", "nowhere.dns.test:80")]), &[]);
    let (status, _, body) = sluice_testkit::get_json(&gw.proxy_url("/nowhere"), &[]).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (503, Some("name resolution failed"))
    );
    assert!(
        dns.queries("nowhere.dns.test") > 0,
        "the DNS server was not asked"
    );
    // Remembered for dns_not_found_ttl: asking again does not reach the server.
    let asked = dns.queries("nowhere.dns.test");
    for _ in 0..4 {
        assert_eq!(
            sluice_testkit::get_json(&gw.proxy_url("/nowhere"), &[])
                .await
                .0,
            503
        );
    }
    assert!(
        dns.queries("nowhere.dns.test") <= asked + 2,
        "one lookup per worker at most"
    );
    let health = sluice_testkit::get_json(&gw.admin_url("/upstreams/nowhere/health"), &[]).await;
    assert_eq!(health.2["data"][0]["health"], "DNS_ERROR", "{:?}", health.2);
    assert_eq!(health.2["data"][0]["data"]["weight"]["available"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_for_a_new_name_share_one_lookup_per_worker() {
    let one = EchoUpstream::named("one");
    let dns = DnsServer::start();
    dns.set_a("burst.dns.test", &[ONE], 60);
    dns.set_delay(Duration::from_millis(300));
    let yaml = config(&[("burst", &format!("burst.dns.test:{}", one.port()))]);
    let gw = gateway(&dns, &yaml, &[]);
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let url = gw.proxy_url("/burst");
        requests.spawn(async move { client().get(url).send().await.unwrap().status().as_u16() });
    }
    while let Some(status) = requests.join_next().await {
        assert_eq!(status.unwrap(), 200);
    }
    // SRV then A, once per worker (2) — not once per request.
    let asked = dns.queries("burst.dns.test");
    assert!(asked <= 4, "{asked} questions for 20 concurrent requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srv_records_give_the_port() {
    let (one, _two) = two_upstreams();
    let dns = DnsServer::start();
    dns.set_srv(
        "_http._tcp.srv.dns.test",
        &[(1, 10, one.port(), "one.dns.test")],
        30,
    );
    dns.set_a("one.dns.test", &[ONE], 30);
    // The configured port (80) is replaced by the SRV record's.
    let gw = gateway(&dns, &config(&[("srv", "_http._tcp.srv.dns.test:80")]), &[]);
    always_served_by(&gw, "/srv", "one", Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_hostsfile_names_are_proxied_without_asking_dns() {
    let (one, _two) = two_upstreams();
    let dns = DnsServer::start();
    dns.set_a("pinned.dns.test", &[ONE], 30);
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.2 pinned.dns.test\n").unwrap();
    let yaml = config(&[("pinned", &format!("pinned.dns.test:{}", one.port()))]);
    let gw = gateway(
        &dns,
        &yaml,
        &[("SLUICE_DNS_HOSTSFILE", hosts.to_str().unwrap())],
    );
    always_served_by(&gw, "/pinned", "two", Duration::from_millis(300)).await;
    assert_eq!(dns.queries("pinned.dns.test"), 0);
}

fn has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aaaa_answers_and_ipv6_literals_are_proxied_over_ipv6() {
    if !has_ipv6_loopback() {
        eprintln!("skipped: no IPv6 loopback on this machine");
        return;
    }
    let six = EchoUpstream::named_at("six", SocketAddr::from((Ipv6Addr::LOCALHOST, 0)));
    let dns = DnsServer::start();
    dns.set_aaaa("v6.dns.test", &[Ipv6Addr::LOCALHOST], 30);
    let order = [("SLUICE_DNS_ORDER", "LAST,SRV,A,AAAA,CNAME")];
    let gw = gateway(
        &dns,
        &config(&[("v6", &format!("v6.dns.test:{}", six.port()))]),
        &order,
    );
    always_served_by(&gw, "/v6", "six", Duration::from_millis(300)).await;
    let literal = gateway(
        &dns,
        &config(&[("lit", &format!("[::1]:{}", six.port()))]),
        &[],
    );
    always_served_by(&literal, "/lit", "six", Duration::from_millis(300)).await;
}
