//! The routes the router's benchmark and `find_loop` both measure (`/r{i}`, every 10th with a host,
//! every 100th a regex), and the request they both match.

use http::HeaderMap;
use sluice_router::{RequestParts, RouteSpec};

pub fn routes(n: usize) -> Vec<RouteSpec> {
    (0..n)
        .map(|i| RouteSpec {
            id: i,
            uuid: i as u128,
            paths: vec![if i % 100 == 99 {
                format!("~/re{i}/(?<id>\\d+)$")
            } else {
                format!("/r{i}")
            }],
            hosts: if i % 10 == 0 {
                vec![format!("h{i}.example.com")]
            } else {
                vec![]
            },
            ..Default::default()
        })
        .collect()
}

/// `GET path` to `example.com` on port 8000.
pub fn request<'a>(path: &'a str, headers: &'a HeaderMap) -> RequestParts<'a> {
    RequestParts {
        method: "GET",
        host: "example.com",
        port: 8000,
        path,
        headers,
        sni: None,
    }
}
