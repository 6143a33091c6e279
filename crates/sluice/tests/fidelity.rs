//! The fidelity suite (issue 22): Kong's own outputs, written from Kong's source of each version, must load into
//! Sluice unchanged, route as Kong routes them, and round-trip; Sluice's answers must have the shapes Kong's
//! clients read. The fixtures and the Kong source each follows are listed in `fidelity/README.md`; what the
//! suite covers and what it found is in `docs/fidelity.md`. The metric families Kong's Grafana dashboard
//! queries are checked in `metrics.rs`.

#[path = "fidelity/admin_shapes.rs"]
mod admin_shapes;
#[path = "fidelity/db_import.rs"]
mod db_import;
#[path = "fidelity/exports.rs"]
mod exports;
#[path = "fidelity/kong_checks.rs"]
mod kong_checks;
#[path = "fidelity/kong_checks_entity.rs"]
mod kong_checks_entity;
#[path = "fidelity/kong_checks_paths.rs"]
mod kong_checks_paths;
#[path = "fidelity/kong_checks_probes.rs"]
mod kong_checks_probes;
#[path = "fidelity/kong_defaults.rs"]
mod kong_defaults;
#[path = "fidelity/kong_entities.rs"]
mod kong_entities;
#[path = "fidelity/kong_fields.rs"]
mod kong_fields;
#[path = "fidelity/live.rs"]
mod live;
#[path = "fidelity/live_plugins.rs"]
mod live_plugins;
mod support;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Every fixture: (file name, the Kong version family whose output it is).
const FIXTURES: &[(&str, &str)] = &[
    ("kong-2.0-db-export.yaml", "2.0"),
    ("kong-2.8-db-export.yaml", "2.8"),
    ("kong-3.0-db-export.yaml", "3.0"),
    ("kong-3.1-db-export.yaml", "3.1"),
    ("kong-3.2-db-export.yaml", "3.2"),
    ("kong-3.3-db-export.yaml", "3.3"),
    ("kong-3.4-db-export.yaml", "3.4"),
    ("kong-3.5-db-export.yaml", "3.5"),
    ("kong-3.6-db-export.yaml", "3.6"),
    ("kong-3.7-db-export.yaml", "3.7"),
    ("kong-3.8-db-export.yaml", "3.8"),
    ("kong-3.9-db-export.yaml", "3.9"),
    ("kong-3.9-streams-credentials.yaml", "3.9"),
    ("kong-3.9-log-plugins.yaml", "3.9"),
    ("kong-3.9-traffic-plugins.yaml", "3.9"),
    ("kong-3.9-auth-plugins.yaml", "3.9"),
    ("deck-3.9-dump.yaml", "3.9"),
];

/// The path of a fixture file.
fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fidelity")
        .join(name)
}

/// A fixture's text, exactly as the file holds it.
fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}
