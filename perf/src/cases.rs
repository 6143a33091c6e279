//! The benchmark cases (Kong's published 8-case suite plus the large-config case) and their configs.

use serde_json::{json, Value};

/// The plugins of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Plugins {
    None,
    RateLimiting,
    RateLimitingKeyAuth,
    RateLimitingBasicAuth,
    /// 10k routes, 10k consumers with key-auth credentials, key-auth + request-termination on every route.
    Large,
}

/// A case: plugins, and how many routes and consumers the traffic spreads over.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Case {
    pub name: String,
    pub plugins: Plugins,
    pub routes: usize,
    pub consumers: usize,
}

impl Case {
    /// Parses `no-plugins`, `rate-limiting`, `rl-key-auth`, `rl-basic-auth` (optionally `@N` for N routes and
    /// consumers, e.g. `rl-key-auth@100`) and `large`.
    pub fn parse(spec: &str) -> Result<Case, String> {
        let (name, n) = match spec.split_once('@') {
            Some((name, n)) => (
                name,
                n.parse().map_err(|_| format!("bad count in '{spec}'"))?,
            ),
            None => (spec, 1),
        };
        let plugins = match name {
            "no-plugins" => Plugins::None,
            "rate-limiting" => Plugins::RateLimiting,
            "rl-key-auth" => Plugins::RateLimitingKeyAuth,
            "rl-basic-auth" => Plugins::RateLimitingBasicAuth,
            "large" => {
                return Ok(Case {
                    name: "large".into(),
                    plugins: Plugins::Large,
                    routes: 10_000,
                    consumers: 10_000,
                })
            }
            other => return Err(format!("unknown case '{other}'")),
        };
        Ok(Case {
            name: format!("{name}@{n}"),
            plugins,
            routes: n,
            consumers: n,
        })
    }

    /// Kong's published suite: the four plugin sets, each with 1 and 100 routes/consumers.
    pub fn kong8() -> Vec<Case> {
        [
            "no-plugins",
            "rate-limiting",
            "rl-key-auth",
            "rl-basic-auth",
        ]
        .iter()
        .flat_map(|c| [format!("{c}@1"), format!("{c}@100")])
        .filter_map(|s| Case::parse(&s).ok())
        .collect()
    }

    pub fn has_plugins(&self) -> bool {
        self.plugins != Plugins::None
    }

    /// The declarative config for this case, proxying to `upstream` (`host:port`).
    pub fn config(&self, upstream: &str) -> Value {
        let mut routes = Vec::new();
        for i in 0..self.routes {
            let mut route = json!({ "name": format!("r{i}"), "paths": [format!("/r{i}")] });
            if self.plugins == Plugins::Large {
                route["plugins"] = json!([
                    { "name": "key-auth" },
                    { "name": "request-termination", "config": { "status_code": 200, "message": "terminated" } },
                ]);
            }
            routes.push(route);
        }
        let mut consumers = Vec::new();
        if self.has_plugins() && self.plugins != Plugins::RateLimiting {
            for i in 0..self.consumers {
                let mut c = json!({ "username": format!("c{i}") });
                match self.plugins {
                    Plugins::RateLimitingBasicAuth => {
                        c["basicauth_credentials"] =
                            json!([{ "username": format!("c{i}"), "password": format!("pw-{i}") }])
                    }
                    _ => c["keyauth_credentials"] = json!([{ "key": format!("key-{i}") }]),
                }
                consumers.push(c);
            }
        }
        let mut plugins = Vec::new();
        if matches!(
            self.plugins,
            Plugins::RateLimiting | Plugins::RateLimitingKeyAuth | Plugins::RateLimitingBasicAuth
        ) {
            // A limit that never triggers: the cost of counting is what is measured.
            plugins.push(json!({ "name": "rate-limiting", "config": { "second": 1_000_000_000u64, "policy": "local" } }));
        }
        match self.plugins {
            Plugins::RateLimitingKeyAuth => plugins.push(json!({ "name": "key-auth" })),
            Plugins::RateLimitingBasicAuth => plugins.push(json!({ "name": "basic-auth" })),
            _ => {}
        }
        json!({
            "_format_version": "3.0",
            "services": [{ "name": "upstream", "url": format!("http://{upstream}"), "routes": routes }],
            "consumers": consumers,
            "plugins": plugins,
        })
    }

    /// The request header carrying consumer `i`'s credential, for the case's auth plugin.
    pub fn credential_header(&self, i: usize) -> Option<(String, String)> {
        use base64::Engine;
        match self.plugins {
            Plugins::RateLimitingKeyAuth | Plugins::Large => {
                Some(("apikey".into(), format!("key-{i}")))
            }
            Plugins::RateLimitingBasicAuth => {
                let raw = format!("c{i}:pw-{i}");
                let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
                Some(("Authorization".into(), format!("Basic {encoded}")))
            }
            _ => None,
        }
    }
}
