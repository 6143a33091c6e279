//! The fixtures through the real binary: `POST /config` takes each one unchanged, requests route as Kong
//! routes them (a 2.x regex path, a normalized 2.x plain path, a 2.x redirect code), and `GET /config` gives
//! a document Kong 3.9 takes, which `POST /config` takes back to the same `GET /config`.

use super::{fixture, kong_fields, BIN, FIXTURES};
use crate::support::reload;
use serde_json::Value;
use sluice_model::declarative;
use sluice_testkit::{client, get_json, Gateway};

/// The route a request matched, from request-termination's echo (`x-fidelity-echo` triggers it); "" and the
/// status when something else answered.
pub(super) async fn route_of(
    gw: &Gateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let mut req = client()
        .request(method.parse().unwrap(), gw.proxy_url(path))
        .header("x-fidelity-echo", "1");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("proxy request");
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let route = body["matched_route"]["name"].as_str().unwrap_or_default();
    (status, route.to_string())
}

const KEY: &[(&str, &str)] = &[("apikey", "alice-key")];

/// A request (method, path, headers) and what it gets: the status and the route it matched.
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    (u16, &'static str),
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kong_2_8_export_routes_as_kong_routes_it() {
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .start();
    reload(&gw, &fixture("kong-2.8-db-export.yaml")).await;
    let cases: &[Case] = &[
        // `/users/\d+/orders` was a regex in 2.x, and stays one: it matches digits only.
        ("PUT", "/users/42/orders", &[], (200, "order-by-id")),
        ("PUT", "/users/abc/orders", &[], (404, "")),
        // `users` matches on methods and paths, more kinds of fields than `order-by-id`'s paths: it wins
        // although a regex path beats a prefix among routes of equal field kinds.
        ("GET", "/users/42/orders", KEY, (200, "users")),
        // `/api/./v1//items` was a plain path: normalized as a request path.
        ("GET", "/api/v1/items", KEY, (200, "users")),
        ("PUT", "/users", KEY, (404, "")),
        // key-auth on `users` (priority 1250) answers before request-termination (2).
        ("GET", "/users", &[], (401, "")),
    ];
    for (method, path, headers, want) in cases {
        let got = route_of(&gw, method, path, headers).await;
        assert_eq!(got, (want.0, want.1.to_string()), "{method} {path}");
    }
    // An https-only route reached over http answers its 2.x `https_redirect_status_code`.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let resp = no_redirects
        .get(gw.proxy_url("/anything"))
        .header("host", "billing.fidelity.test")
        .header("x-tenant", "acme")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 301);
    let location = resp.headers()["location"].to_str().unwrap_or_default();
    assert!(
        location.starts_with("https://billing.fidelity.test"),
        "{location}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_posts_and_its_get_config_posts_back_unchanged() {
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .start();
    for (name, _) in FIXTURES {
        reload(&gw, &fixture(name)).await;
        let first = get_config(&gw).await;
        let doc = declarative::to_document(&first).expect("GET /config is YAML");
        let refused = kong_fields::refused(&doc);
        assert!(refused.is_empty(), "{name}: Kong 3.9 refuses {refused:?}");
        reload(&gw, &first).await;
        assert_eq!(
            get_config(&gw).await,
            first,
            "{name}: the export is another config"
        );
        let (status, _) =
            route_of(&gw, "PUT", "/users/42/orders", &[("apikey", "carol-key")]).await;
        assert_eq!(status, 200, "{name}");
    }
}

/// `GET /config`'s YAML document.
async fn get_config(gw: &Gateway) -> String {
    let (status, _, body) = get_json(&gw.admin_url("/config"), &[]).await;
    assert_eq!(status, 200, "{body}");
    body["config"]
        .as_str()
        .expect("config is a string")
        .to_string()
}

/// Kong 1.5's export through `POST /config`: a 400 naming each plugin's `run_on` (as Kong 3.9 answers),
/// and without `run_on` it loads and its 1.x regex path routes as one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kong_1_5_export_posts_once_run_on_is_gone() {
    let gw = Gateway::builder(BIN)
        .config_yaml("_format_version: \"3.0\"\n")
        .start();
    let text = fixture("kong-1.5-db-export.yaml");
    let resp = client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/x-yaml")
        .body(text.clone())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("run_on"), "{body}");
    reload(&gw, &super::exports::without_run_on(&text)).await;
    // request-termination of 2.0 and before has no `echo`: it answers 200 itself on the order route.
    for (path, want) in [("/users/42/orders", 200), ("/users/abc/orders", 404)] {
        let resp = client().put(gw.proxy_url(path)).send().await.unwrap();
        assert_eq!(resp.status(), want, "{path}");
    }
}
