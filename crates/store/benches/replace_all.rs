//! How long a whole-config swap takes in the store: `replace_all` of 50,000 records (the size of a
//! 10k-route / 10k-consumer config with its plugins and credentials), and `load` of it back.
//! Run: `cargo bench -p sluice-store`.

use criterion::{criterion_group, criterion_main, Criterion};
use sluice_store::{EntityRecord, Store};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 512 << 20).unwrap();
    let n = 50_000;
    let ids: Vec<String> = (0..n)
        .map(|i| format!("00000000-0000-4000-8000-{i:012}"))
        .collect();
    let names: Vec<String> = (0..n).map(|i| format!("entity-{i}")).collect();
    let bodies: Vec<Vec<u8>> = ids
        .iter()
        .zip(&names)
        .map(|(id, name)| {
            format!(
                r#"{{"id":"{id}","name":"{name}","paths":["/{name}"],"protocols":["http","https"],"strip_path":true,"service":{{"id":"{id}"}}}}"#
            )
            .into_bytes()
        })
        .collect();
    let kinds = ["services", "routes"];
    let records: Vec<_> = (0..n)
        .map(|i| EntityRecord {
            kind: kinds[i % 2],
            id: &ids[i],
            body: &bodies[i],
            unique: vec![("name", names[i].clone())],
            foreign: vec![("services", ids[i - i % 2].as_str())],
        })
        .collect();
    let mut g = c.benchmark_group("store");
    g.sample_size(10);
    g.bench_function("replace_all_50k", |b| {
        b.iter(|| store.replace_all("h", "3.0", &records).unwrap())
    });
    g.bench_function("load_50k", |b| b.iter(|| store.load().unwrap().unwrap()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
