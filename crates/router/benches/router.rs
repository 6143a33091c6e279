//! Router build and match times for 10 and 10,000 routes (hit at start, middle, end; a miss; a regex).

use criterion::{criterion_group, criterion_main, Criterion};
use http::HeaderMap;
use sluice_router::{RequestParts, RouteSpec, Router};
use std::hint::black_box;

fn routes(n: usize) -> Vec<RouteSpec> {
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
                    let req = RequestParts {
                        method: "GET",
                        host: "example.com",
                        port: 8000,
                        path: &path,
                        headers: &headers,
                        sni: None,
                    };
                    black_box(router.find(black_box(&req)))
                })
            });
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
