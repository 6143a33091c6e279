//! `sluice config db_import <file>`: validates a declarative config and writes it into the database the
//! node settings name (Kong's `kong config db_import`).

use anyhow::{bail, Context, Result};
use sluice_model::declarative;
use sluice_plugins::Registry;
use std::path::Path;

pub fn run(file: &Path, conf: Option<&Path>) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let registry = Registry::with(sluice_plugins::builtin::all_for(true));
    let config = declarative::parse(&text, &registry).map_err(|e| {
        anyhow::anyhow!(
            "{}: invalid declarative configuration:\n{e}",
            file.display()
        )
    })?;
    crate::migrate::on_database(conf, async |client, pg| {
        let state = sluice_db::migrations::state(client).await?;
        if let Some(refusal) = state.refusal() {
            bail!("database {}: {refusal}", pg.describe());
        }
        let n = sluice_db::import::import(client, &config)
            .await
            .map_err(|e| anyhow::anyhow!("import failed, nothing was written: {e}"))?;
        println!(
            "{}: imported {n} entities ({})",
            file.display(),
            config.summary()
        );
        Ok(())
    })
}
