//! What a single-entity change costs the snapshot compiler on a large config: `Snapshot::compile_after`
//! of the 10,000-route config with one route's path changed, against the snapshot before it (what a DB-mode
//! node or a hybrid data plane does per change, issue 18's "≤ 3 ms per change" for RPS ≥ 0.97 with a write
//! every 100 ms), next to the same when the compiler is told which route changed (`compile_patched`), and a
//! compile from scratch.
//!
//!   cargo bench -p sluice-proxy --bench snapshot

use criterion::{criterion_group, criterion_main, Criterion};
use sluice_plugins::Registry;
use sluice_proxy::Snapshot;
use std::sync::Arc;

/// One service with `n` routes `/r{i}`, route `changed` (if any) on `/changed` instead.
fn config(n: usize, changed: Option<usize>, registry: &Registry) -> Arc<sluice_model::Config> {
    let routes: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let path = match changed == Some(i) {
                true => "/changed".to_string(),
                false => format!("/r{i}"),
            };
            serde_json::json!({
                "id": uuid::Uuid::from_u128(i as u128 + 1),
                "name": format!("r{i}"),
                "paths": [path],
                "created_at": 1_700_000_000,
                "updated_at": 1_700_000_000,
            })
        })
        .collect();
    let doc = serde_json::json!({"_format_version": "3.0", "services": [{
        "name": "s", "url": "http://127.0.0.1:9", "routes": routes,
        "created_at": 1_700_000_000, "updated_at": 1_700_000_000,
    }]});
    Arc::new(sluice_model::declarative::parse_value(doc, registry).expect("valid"))
}

fn bench(c: &mut Criterion) {
    let registry = Registry::builtin();
    let before = config(10_000, None, &registry);
    let after = config(10_000, Some(5_000), &registry);
    let live = Snapshot::compile(before.clone(), &registry).expect("compiles");
    c.bench_function("compile_after, 10k routes, one changed", |b| {
        b.iter(|| Snapshot::compile_after(after.clone(), &registry, Some(&live)).expect("compiles"))
    });
    let changed: sluice_proxy::RouteIds = [after.routes[5_000].id].into_iter().collect();
    c.bench_function("compile_patched, 10k routes, one changed", |b| {
        b.iter(|| {
            Snapshot::compile_patched(after.clone(), &registry, &live, &changed).expect("compiles")
        })
    });
    c.bench_function("compile, 10k routes", |b| {
        b.iter(|| Snapshot::compile(after.clone(), &registry).expect("compiles"))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
