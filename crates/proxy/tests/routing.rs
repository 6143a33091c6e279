//! Routing and the upstream request line: strip_path / path_handling / preserve_host through a real proxy,
//! query strings, path normalization, disabled services, HTTP/2.

mod common;

use common::{get, one_service, Proxy};
use sluice_testkit::{h2c_client, EchoUpstream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_paths_and_hosts() {
    let up = EchoUpstream::start();
    let p = up.port();
    let yaml = format!(
        r#"_format_version: "3.0"
services:
- name: svc
  url: http://127.0.0.1:{p}/svc
  routes:
  - {{name: strip, paths: [/strip]}}
  - {{name: keep, paths: [/keep], strip_path: false, preserve_host: true}}
  - {{name: v1, paths: [/v1], path_handling: v1}}
  - {{name: regex, paths: ["~/items/\\d+"]}}
  - {{name: hosted, hosts: [by.host]}}
- name: root
  url: http://127.0.0.1:{p}
  routes:
  - {{name: rootstrip, paths: [/r]}}
- name: slash
  url: http://127.0.0.1:{p}/base/
  routes:
  - {{name: slashstrip, paths: [/s]}}
"#
    );
    let proxy = Proxy::start(&yaml);
    let upstream_host = format!("127.0.0.1:{p}");
    // (request path, Host sent, expected upstream path, expected upstream Host)
    let cases = [
        ("/strip/a/b", "c.test", "/svc/a/b", upstream_host.as_str()),
        ("/strip", "c.test", "/svc", &upstream_host),
        ("/strip/", "c.test", "/svc/", &upstream_host),
        ("/stripped", "c.test", "/svc/ped", &upstream_host),
        ("/keep/a", "c.test:81", "/svc/keep/a", "c.test:81"),
        ("/v1abc", "c.test", "/svcabc", &upstream_host),
        ("/items/42/rest", "c.test", "/svc/rest", &upstream_host),
        ("/any/path", "by.host", "/svc/any/path", &upstream_host),
        ("/r/x", "c.test", "/x", &upstream_host),
        ("/r", "c.test", "/", &upstream_host),
        ("/s", "c.test", "/base", &upstream_host),
        ("/s/", "c.test", "/base/", &upstream_host),
        ("/s/x", "c.test", "/base/x", &upstream_host),
        ("/strip/./a/../b", "c.test", "/svc/b", &upstream_host),
        ("/strip/%61%20z", "c.test", "/svc/a%20z", &upstream_host),
        ("/strip/a%2Fb", "c.test", "/svc/a%2Fb", &upstream_host),
    ];
    for (path, host, want_path, want_host) in cases {
        let (status, _, body) = get(&proxy.url(path), &[("host", host)]).await;
        assert_eq!(status, 200, "{path}: {body}");
        let uri = body["uri"].as_str().unwrap_or_default();
        assert_eq!(uri, want_path, "{path}");
        assert_eq!(body["headers"]["host"], want_host, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_strings_pass_through_as_received() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(&up.url(), &["paths: [/q]"]));
    for query in ["a=1&b=2", "x=%2F%20y&x=2", "flag", "e=%E2%82%AC&empty="] {
        let (_, _, body) = get(&proxy.url(&format!("/q/p?{query}")), &[]).await;
        assert_eq!(body["query"], query);
        assert_eq!(body["path"], "/p");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_of_disabled_services_do_not_match() {
    let up = EchoUpstream::start();
    let yaml = format!(
        "_format_version: \"3.0\"\nservices:\n- name: \"off\"\n  enabled: false\n  url: {}\n  routes:\n  - paths: [/off]\n",
        up.url()
    );
    let proxy = Proxy::start(&yaml);
    assert_eq!(get(&proxy.url("/off"), &[]).await.0, 404);
    assert_eq!(up.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_requests_route_on_authority_and_reach_http1_upstreams() {
    let up = EchoUpstream::start();
    let proxy = Proxy::start(&one_service(
        &up.url(),
        &["hosts: [\"127.0.0.1\"], preserve_host: true, strip_path: false"],
    ));
    let resp = h2c_client().get(proxy.url("/h2?x=1")).send().await.unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["version"], "HTTP/1.1");
    assert_eq!(body["uri"], "/h2?x=1");
    assert_eq!(
        body["headers"]["host"],
        format!("127.0.0.1:{}", proxy.addr.port())
    );
    assert!(body["headers"]["via"]
        .as_str()
        .unwrap()
        .starts_with("2 sluice/"));
}
