//! `sluice config db_import <file>`: validates a declarative config and writes it into the database the
//! node settings name (Kong's `kong config db_import`).

use crate::settings::Settings;
use anyhow::{bail, Context, Result};
use sluice_model::declarative;
use sluice_plugins::Registry;
use std::path::Path;

pub fn run(file: &Path, conf: Option<&Path>) -> Result<()> {
    let settings = Settings::load(conf, &[("database", "postgres".into())])?;
    let Some(pg) = settings.pg else {
        bail!("database: db_import needs database = postgres");
    };
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let registry = Registry::with(sluice_plugins::builtin::all_for(true));
    let config = declarative::parse(&text, &registry).map_err(|e| {
        anyhow::anyhow!(
            "{}: invalid declarative configuration:\n{e}",
            file.display()
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut client = sluice_db::settings::connect_one(&pg, |_| {})
            .await
            .map_err(|e| anyhow::anyhow!("database {}: {e}", pg.describe()))?;
        let state = sluice_db::migrations::state(&client).await?;
        if let Some(refusal) = state.refusal() {
            bail!("database {}: {refusal}", pg.describe());
        }
        let n = sluice_db::import::import(&mut client, &config)
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
