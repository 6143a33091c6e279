//! Upstreams and targets: weighted round-robin, retries on the next target, hostnames, `host_header`.

mod common;

use common::{get, Proxy};
use sluice_testkit::{closed_port, EchoUpstream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_round_robin_splits_exactly_and_skips_weight_zero() {
    let (a, b, c) = (
        EchoUpstream::named("a"),
        EchoUpstream::named("b"),
        EchoUpstream::named("c"),
    );
    let yaml = format!(
        r#"_format_version: "3.0"
services: [{{name: s, host: pool.upstream, routes: [{{paths: [/]}}]}}]
upstreams:
- name: pool.upstream
  targets:
  - {{target: "127.0.0.1:{}", weight: 300}}
  - {{target: "127.0.0.1:{}", weight: 100}}
  - {{target: "127.0.0.1:{}", weight: 0}}
"#,
        a.port(),
        b.port(),
        c.port()
    );
    let proxy = Proxy::start(&yaml);
    let mut order = String::new();
    for _ in 0..400 {
        let (status, _, body) = get(&proxy.url("/"), &[]).await;
        assert_eq!(status, 200);
        order.push_str(body["upstream"].as_str().unwrap());
    }
    assert_eq!((a.requests(), b.requests(), c.requests()), (300, 100, 0));
    assert!(!order.contains("bb"), "smooth: b never twice in a row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_move_to_the_next_target_until_they_run_out() {
    let live = EchoUpstream::named("live");
    let (d1, d2) = (closed_port(), closed_port());
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- {{name: two, host: two.upstream, retries: 2, routes: [{{paths: [/two]}}]}}
- {{name: one, host: one.upstream, retries: 1, routes: [{{paths: [/one]}}]}}
upstreams:
- name: two.upstream
  targets: [{{target: "127.0.0.1:{d1}"}}, {{target: "127.0.0.1:{d2}"}}, {{target: "127.0.0.1:{}"}}]
- name: one.upstream
  targets: [{{target: "127.0.0.1:{d1}"}}, {{target: "127.0.0.1:{d2}"}}, {{target: "127.0.0.1:{}"}}]
"#,
        live.port(),
        live.port()
    );
    let proxy = Proxy::start(&yaml);
    // Two retries reach the live target from any starting point of the rotation.
    for _ in 0..9 {
        let (status, _, body) = get(&proxy.url("/two"), &[]).await;
        assert_eq!((status, body["upstream"].as_str()), (200, Some("live")));
    }
    // One retry is not always enough. Every try takes the next target of the rotation: the first request
    // tries both dead ones, the second starts on the live one, the third on the dead ones again.
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(get(&proxy.url("/one"), &[]).await.0);
    }
    assert_eq!(statuses, vec![502, 200, 502]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostnames_resolve_and_host_headers_follow_kong() {
    let up = EchoUpstream::start();
    let p = up.port();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- {{name: named, url: "http://localhost:{p}/n", routes: [{{paths: [/named]}}]}}
- {{name: pooled, host: plain.upstream, routes: [{{paths: [/plain]}}]}}
- {{name: rewritten, host: hh.upstream, routes: [{{paths: [/hh]}}]}}
upstreams:
- name: plain.upstream
  targets: [{{target: "localhost:{p}"}}]
- name: hh.upstream
  host_header: api.internal
  targets: [{{target: "127.0.0.1:{p}"}}]
"#
    );
    let proxy = Proxy::start(&yaml);
    let cases = [
        ("/named/x", "/n/x", format!("localhost:{p}")),
        ("/plain", "/", format!("localhost:{p}")),
        ("/hh", "/", format!("api.internal:{p}")),
    ];
    for (path, want_path, want_host) in cases {
        let (status, _, body) = get(&proxy.url(path), &[]).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(body["path"], want_path, "{path}");
        assert_eq!(body["headers"]["host"], want_host.as_str(), "{path}");
    }
}
