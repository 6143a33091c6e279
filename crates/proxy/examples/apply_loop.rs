//! What one route change costs a serving node's compile on the 10,000-route config, in instructions
//! (issues 18 and 19: a DB-mode node or a hybrid data plane applies a change every 100 ms).
//!
//! `apply_loop N [ROUTES]` compiles the config of `benches/snapshot.rs` (one service, routes `/r{i}`),
//! then N times does what a node does per one-route change: the next config is the live one with one
//! route's paths changed (copied from the live one, as a node does when its spare config is held), it is
//! compiled with [`Snapshot::compile_patched`] (what `Loader::apply` with a `Patch` calls) and replaces the
//! live snapshot, whose drop is counted too. Run N = 0 and N = 50 under callgrind; the difference / 50
//! is one change:
//!
//!   valgrind --tool=callgrind --callgrind-out-file=cg.%p target/release/examples/apply_loop 50
//!   callgrind_annotate --inclusive=yes cg.<pid> | head -40

#[path = "common/config.rs"]
mod config;
use config::config;
use sluice_plugins::Registry;
use sluice_proxy::{RouteIds, Snapshot};
use std::hint::black_box;
use std::sync::Arc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let count: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let registry = Registry::builtin();
    let mut live = Snapshot::compile(config(count, None, &registry), &registry).expect("compiles");
    for change in 0..n {
        let mut next = sluice_model::Config::clone(live.config());
        let at = (change * 7919) % count;
        let route = &mut next.routes[at];
        route.paths = Some(vec![format!("/r{at}"), format!("/c{change}")]);
        let changed: RouteIds = [route.id].into_iter().collect();
        let compiled = Snapshot::compile_patched(Arc::new(next), &registry, &live, &changed);
        live = black_box(compiled.expect("compiles"));
    }
    println!("{n} changes on {count} routes");
}
