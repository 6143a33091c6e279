//! The router: routes built from arbitrary paths (prefixes and `~` regexes), hosts, methods, headers and
//! SNIs, then arbitrary requests matched against them. Input: lines; each `R` line is a route
//! (`R path|host|method|header:value|sni`), the others requests (`path|host|method|header:value|sni`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_router::{RequestParts, RouteSpec, Router};

fn field(parts: &[&str], i: usize) -> String {
    parts.get(i).copied().unwrap_or_default().to_string()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut specs = Vec::new();
    let mut requests = Vec::new();
    for line in text.lines().take(64) {
        match line.strip_prefix('R') {
            Some(route) => {
                let p: Vec<&str> = route.trim_start().split('|').collect();
                let nonempty = |s: String| if s.is_empty() { vec![] } else { vec![s] };
                let header = field(&p, 3);
                specs.push(RouteSpec {
                    id: specs.len(),
                    uuid: specs.len() as u128,
                    paths: nonempty(field(&p, 0)),
                    hosts: nonempty(field(&p, 1)),
                    methods: nonempty(field(&p, 2)),
                    headers: header
                        .split_once(':')
                        .map(|(k, v)| vec![(k.to_string(), vec![v.to_string()])])
                        .unwrap_or_default(),
                    snis: nonempty(field(&p, 4)),
                    ..Default::default()
                });
            }
            None => requests.push(line),
        }
    }
    let Ok(router) = Router::build(specs) else {
        return;
    };
    for line in requests {
        let p: Vec<&str> = line.split('|').collect();
        let mut headers = http::HeaderMap::new();
        if let Some((k, v)) = field(&p, 3).split_once(':') {
            if let (Ok(k), Ok(v)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                http::HeaderValue::from_str(v),
            ) {
                headers.insert(k, v);
            }
        }
        let (path, host, method, sni) = (field(&p, 0), field(&p, 1), field(&p, 2), field(&p, 4));
        let req = RequestParts {
            method: &method,
            host: &host,
            port: 8000,
            path: &path,
            headers: &headers,
            sni: (!sni.is_empty()).then_some(sni.as_str()),
        };
        let _ = router.find(&req);
    }
});
