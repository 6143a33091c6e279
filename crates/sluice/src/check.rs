//! `sluice config check FILE`: validate and compile a declarative file without starting anything.

use anyhow::{Context, Result};
use sluice_model::declarative;
use sluice_plugins::Registry;
use sluice_proxy::Snapshot;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Prints every error (exit 1) or a one-line summary (exit 0).
pub fn run(file: &Path) -> Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let registry = Registry::builtin();
    let doc = match declarative::to_document(&text) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("{}: {e}", file.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let config = match declarative::parse_value(doc, &registry) {
        Ok(config) => config,
        Err(errors) => {
            eprintln!("{}: {} error(s):\n{errors}", file.display(), errors.len());
            return Ok(ExitCode::FAILURE);
        }
    };
    let summary = config.summary();
    if let Err(e) = Snapshot::compile(Arc::new(config), &registry) {
        eprintln!(
            "{}: the config validates but does not compile: {e}",
            file.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    println!("{}: valid ({summary})", file.display());
    Ok(ExitCode::SUCCESS)
}
