//! Router build and match times for 10 and 10,000 routes (hit at start, middle, end; a miss; a regex).

#[path = "../examples/common/routes.rs"]
mod routes;
use criterion::{criterion_group, criterion_main, Criterion};
use http::HeaderMap;
use routes::{request, routes};
use sluice_router::Router;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let headers = HeaderMap::new();
    for n in [10usize, 10_000] {
        c.bench_function(&format!("build/{n}"), |b| {
            b.iter(|| Router::build(black_box(routes(n))).unwrap())
        });
        let router = Router::build(routes(n)).unwrap();
        for (label, path) in [
            ("first", "/r1/x".to_string()),
            ("middle", format!("/r{}/x", n / 2 + 1)),
            ("last", format!("/r{}/x", n - 2)),
            ("miss", "/nothing/here".to_string()),
        ] {
            c.bench_function(&format!("match/{n}/{label}"), |b| {
                b.iter(|| {
                    let req = request(&path, &headers);
                    black_box(router.find(black_box(&req)))
                })
            });
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
