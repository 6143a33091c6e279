//! What a single-entity change costs the snapshot compiler on a large config: `Snapshot::compile_after`
//! of the 10,000-route config with one route's path changed, against the snapshot before it (what a DB-mode
//! node or a hybrid data plane does per change, issue 18's "≤ 3 ms per change" for RPS ≥ 0.97 with a write
//! every 100 ms), next to the same when the compiler is told which route changed (`compile_patched`), and a
//! compile from scratch.
//!
//!   cargo bench -p sluice-proxy --bench snapshot

#[path = "../examples/common/config.rs"]
mod config;
use config::config;
use criterion::{criterion_group, criterion_main, Criterion};
use sluice_plugins::Registry;
use sluice_proxy::Snapshot;

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
