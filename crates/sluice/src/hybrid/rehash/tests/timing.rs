//! The hash step of one change, timed on a config from a file (ignored unless asked for): the whole
//! export and hash every change cost before the parts, against the partial rehash of a one-route, a
//! one-plugin and a one-consumer change. Run with:
//!
//! ```text
//! sluice-perf gen-config --case large --out /tmp/large.json
//! SLUICE_REHASH_CONFIG=/tmp/large.json cargo test -p sluice --bin sluice times_the_hash_step \
//!     -- --ignored --nocapture
//! ```

use super::*;
use std::time::Instant;

/// The median of `runs` timings of `f`, in ms.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut ms: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[runs / 2]
}

#[test]
#[ignore = "needs SLUICE_REHASH_CONFIG, a generated config; prints timings"]
fn times_the_hash_step() {
    let path = std::env::var("SLUICE_REHASH_CONFIG").expect("SLUICE_REHASH_CONFIG");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut config = parse(declarative::to_document(&text).unwrap());
    println!(
        "{path}: {} routes, {} services, {} plugins, {} consumers, {} key-auth credentials",
        config.routes.len(),
        config.services.len(),
        config.plugins.len(),
        config.consumers.len(),
        config.keyauth_credentials.len()
    );
    let runs = 5;
    let before = median_ms(runs, || drop(whole(&config)));
    println!("whole export + hash (before): {before:.1} ms");
    let mut parts = full(&config);
    for kind in ["routes", "plugins", "consumers"] {
        // One entity of the kind changed (its tags), as a one-entity delta would.
        let tags = match kind {
            "routes" => config.routes.first_mut().map(|e| &mut e.tags),
            "plugins" => config.plugins.first_mut().map(|e| &mut e.tags),
            _ => config.consumers.first_mut().map(|e| &mut e.tags),
        };
        let Some(tags) = tags else {
            continue;
        };
        *tags = Some(vec!["changed".into()]);
        let id = match kind {
            "routes" => config.routes[0].id,
            "plugins" => config.plugins[0].id,
            _ => config.consumers[0].id,
        };
        let touch = touched(&[Change {
            kind: kind.into(),
            id: id.to_string(),
            op: sluice_cluster::delta::Op::Delete,
        }]);
        let mut after = parts.clone();
        let ms = median_ms(runs, || after = partial(&config, &parts, &touch));
        assert_eq!(after.parts().hashes(), whole(&config));
        parts = after;
        println!(
            "one {kind} change, partial rehash (after): {ms:.1} ms ({:.1}x)",
            before / ms
        );
    }
}
