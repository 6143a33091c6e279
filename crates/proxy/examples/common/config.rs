//! The large config of the snapshot bench and the `apply_loop` example: one service with `n` routes
//! `/r{i}`, every entity stamped with a fixed time (so two builds of it are equal).

use sluice_plugins::Registry;
use std::sync::Arc;

/// One service with `n` routes `/r{i}`, route `changed` (if any) on `/changed` instead.
pub fn config(n: usize, changed: Option<usize>, registry: &Registry) -> Arc<sluice_model::Config> {
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
