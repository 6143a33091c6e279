//! What the hybrid unit tests share: configs of routes under one service, and a loader over a store.

use crate::loader::Loader;
use sluice_model::{declarative, Config};
use std::sync::Arc;

/// A service with a route per path (`/x` → route `rx`), with fixed timestamps (a parse would stamp the
/// load time, and two parses would differ).
pub fn doc(paths: &[&str]) -> serde_json::Value {
    let mut yaml = String::from(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:9\n  created_at: 1\n  updated_at: 1\n  routes:\n",
    );
    for p in paths {
        yaml.push_str(&format!(
            "  - {{name: r{}, paths: [{p}], created_at: 1, updated_at: 1}}\n",
            &p[1..]
        ));
    }
    declarative::to_document(&yaml).unwrap()
}

/// [`doc`], validated.
pub fn parsed(paths: &[&str]) -> Config {
    declarative::parse_value(doc(paths), &sluice_plugins::Registry::builtin()).unwrap()
}

/// A loader over a store in `dir`, serving `paths`.
pub fn loader(dir: &std::path::Path, paths: &[&str]) -> Arc<Loader> {
    let store = sluice_store::Store::open(dir, 64 << 20).unwrap();
    let loader = Arc::new(Loader::new(
        Arc::new(sluice_plugins::Registry::builtin()),
        store,
    ));
    serve(&loader, paths);
    loader
}

/// Makes `paths` the live config.
pub fn serve(loader: &Loader, paths: &[&str]) {
    assert!(loader.load_doc(doc(paths), false, true).is_ok());
}

/// The paths of the live config's routes, in order.
pub fn live_paths(loader: &Loader) -> Vec<String> {
    let snapshot = loader.snapshot().load_full();
    let routes = &snapshot.config().routes;
    routes
        .iter()
        .flat_map(|r| r.paths.clone().unwrap_or_default())
        .collect()
}
