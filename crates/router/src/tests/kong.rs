//! Cases from Kong's router unit spec (`spec/01-unit/08-router_spec.lua`, flavor `traditional_compatible`),
//! rewritten as tables: the routes a case builds, numbered as in the spec (each gets the id Kong's case
//! gives it, since ids break ties), and what each request must select. `docs/router-cases.md` maps every
//! spec case to the test here that carries it, or to the reason it does not apply.

use super::super::*;
use http::HeaderMap;

mod exec;
mod fields;
mod paths;
mod priority;
mod select;

/// Kong's spec ids end in `…8101`, `…8102`, …, `…81nn`: route `n` gets `e8fb37f1-102d-461e-9c51-6608a6bb81nn`
/// (the last two digits read as hex digits, as in the spec's strings).
fn kong_id(n: u128) -> u128 {
    0xe8fb37f1_102d_461e_9c51_6608a6bb8100 + (n / 10) * 16 + n % 10
}

/// Route `n` with fields given as `(name, values)`: `hosts`, `paths`, `methods`, `snis`, or `h:<header>`.
fn r(n: usize, fields: &[(&str, &[&str])]) -> RouteSpec {
    let mut spec = RouteSpec {
        id: n,
        uuid: kong_id(n as u128),
        ..Default::default()
    };
    for (name, values) in fields {
        let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        match *name {
            "hosts" => spec.hosts = values,
            "paths" => spec.paths = values,
            "methods" => spec.methods = values,
            "snis" => spec.snis = values,
            header => {
                let name = header.strip_prefix("h:").expect("a field name");
                spec.headers.push((name.to_string(), values));
            }
        }
    }
    spec
}

/// One request and the route it must select (by spec number).
#[derive(Clone, Copy)]
struct Req {
    method: &'static str,
    host: &'static str,
    /// The listening port (Kong's `net.dst.port` when `Host` has none).
    port: u16,
    path: &'static str,
    headers: &'static [(&'static str, &'static str)],
    sni: Option<&'static str>,
    want: Option<usize>,
}

const fn req(
    method: &'static str,
    host: &'static str,
    path: &'static str,
    want: Option<usize>,
) -> Req {
    Req {
        method,
        host,
        port: 8000,
        path,
        headers: &[],
        sni: None,
        want,
    }
}

const fn get(host: &'static str, path: &'static str, want: Option<usize>) -> Req {
    req("GET", host, path, want)
}

/// `GET /` with headers and no Host.
const fn with_headers(
    headers: &'static [(&'static str, &'static str)],
    want: Option<usize>,
) -> Req {
    Req {
        headers,
        ..get("", "/", want)
    }
}

/// `GET /` with `Host: host` on listening port `port`.
const fn at_port(host: &'static str, port: u16, want: Option<usize>) -> Req {
    Req {
        port,
        ..get(host, "/", want)
    }
}

fn run(router: &Router, c: &Req) -> Option<Match> {
    let mut headers = HeaderMap::new();
    for (k, v) in c.headers {
        headers.append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    router.find(&RequestParts {
        method: c.method,
        host: c.host,
        port: c.port,
        path: c.path,
        headers: &headers,
        sni: c.sni,
    })
}

fn check(routes: Vec<RouteSpec>, cases: &[Req]) {
    let router = Router::build(routes).unwrap();
    for c in cases {
        let got = run(&router, c).map(|m| m.id);
        assert_eq!(
            got, c.want,
            "{} {}{} {:?} port={} sni={:?}",
            c.method, c.host, c.path, c.headers, c.port, c.sni
        );
    }
}
