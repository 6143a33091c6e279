//! The router's steady A/B figure: instructions per [`Router::find`], counted with callgrind (timings on a
//! shared machine are noise; instruction counts are not).
//!
//! `find_loop N [PATH] [ROUTES]` builds the router of the criterion bench (`benches/router.rs`: routes
//! `/r{i}`, every 10th with a host, every 100th a regex) and finds `PATH` (default `/r1/x`) N times. Run it
//! with N = 0 and N = 20000 under `valgrind --tool=callgrind`; the difference over 20000 is one find
//! (BENCHMARKS.md has the figures and the loop).

#[path = "common/routes.rs"]
mod routes;
use http::HeaderMap;
use routes::{request, routes};
use sluice_router::Router;
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let path = args.get(2).cloned().unwrap_or_else(|| "/r1/x".into());
    let count: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let router = Router::build(routes(count)).unwrap();
    let headers = HeaderMap::new();
    let mut hits = 0;
    for _ in 0..n {
        let req = request(&path, &headers);
        hits += black_box(router.find(black_box(&req))).is_some() as usize;
    }
    println!("{hits} of {n} found");
}
