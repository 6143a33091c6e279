//! A data plane's side of Sluice's deltas (`sluice_cluster::delta`). A delta is applied the way DB mode
//! applies a change: the changed entities patch the config (the one before the live one when nothing holds
//! it any more: `dbnode::spare`), the snapshot is compiled incrementally (unchanged routes keep their
//! compiled form), only those entities are written to the store, and the result is published
//! ([`Loader::apply`]). Never a full rebuild per change.
//!
//! Before it goes live the patched config's Kong hash must equal the one the CP sent: a config that differs
//! from the CP's never serves. A delta that does not follow the version held (a gap), whose entities cannot
//! be read, or whose result does not have the CP's hash makes the DP ask for the whole config, once: the
//! deltas that arrive until it comes are dropped. (A frame that is not even JSON ends the link, as any bad
//! frame does; the reconnect brings the whole config.)

use crate::dbnode::spare::{self, Spare};
use crate::loader::{EntityChange, Loader};
use sluice_cluster::delta::{self, Change, Delta, Op, Resync, Verdict};
use sluice_model::declarative::{self, kinds::Kind};
use std::sync::Arc;
use std::time::Instant;

/// The delta state of one link to the CP.
#[derive(Default)]
pub(super) struct DeltaSync {
    /// The delta version of the running config; None until a full config that carried one (from a CP that
    /// speaks the extension: a Kong CP never sends one, nor deltas).
    pub version: Option<u64>,
    /// The config before the live one, for the next delta to be built on.
    spare: Option<Spare>,
    /// A full sync was asked for and has not come yet.
    asked: bool,
}

/// What became of a delta.
pub(super) enum Outcome {
    /// Live; the new config hash.
    Applied(String),
    /// Already held, or a full sync is on its way: dropped.
    Skipped,
    /// Send this to the CP (once per full sync).
    AskFull(Resync),
}

impl DeltaSync {
    /// A full config went live (or was already running): deltas continue from `version`.
    pub fn full(&mut self, version: Option<u64>) {
        *self = DeltaSync {
            version,
            ..DeltaSync::default()
        };
    }

    /// Checks `delta` against the version held and applies it on a blocking thread.
    pub async fn apply(&mut self, loader: &Arc<Loader>, delta: Delta) -> Outcome {
        if self.asked {
            return Outcome::Skipped;
        }
        // `check` gives Apply only when a version is held.
        let held = match (delta::check(self.version, &delta), self.version) {
            (Verdict::Apply, Some(held)) => held,
            (Verdict::Resync(reason), _) => return self.ask(reason),
            _ => return Outcome::Skipped,
        };
        let (version, started) = (delta.version, Instant::now());
        let count = delta.changes.len();
        let spare = self.spare.take();
        let loader = loader.clone();
        let applied =
            tokio::task::spawn_blocking(move || patch_and_apply(&loader, spare, held, delta)).await;
        match applied {
            Ok(Ok((spare, hash))) => {
                self.version = Some(version);
                self.spare = Some(spare);
                tracing::info!(version, changes = count, ms = started.elapsed().as_secs_f64() * 1e3,
                    hash = %hash, "delta from the control plane applied");
                Outcome::Applied(hash)
            }
            Ok(Err(reason)) => self.ask(reason),
            Err(e) => self.ask(format!("applying the delta failed: {e}")),
        }
    }

    fn ask(&mut self, reason: String) -> Outcome {
        tracing::warn!(held = ?self.version, %reason, "asking the control plane for the whole configuration");
        self.asked = true;
        self.spare = None;
        Outcome::AskFull(Resync {
            version: self.version,
            reason,
        })
    }
}

/// Patches the live config (at version `held`) with `delta`, checks its hash and makes it live. Returns
/// the spare for the next delta and the new hash; Err is why a full sync is needed.
fn patch_and_apply(
    loader: &Loader,
    spare: Option<Spare>,
    held: u64,
    delta: Delta,
) -> Result<(Spare, String), String> {
    let changes = delta
        .changes
        .into_iter()
        .map(entity_change)
        .collect::<Result<Vec<_>, _>>()?;
    let live = loader.snapshot().load().config().clone();
    let mut config = spare::next(spare, &live, held, &changes).map_err(|e| format!("{e:#}"))?;
    let hashes = sluice_cluster::hash::config_hashes(&declarative::export(&config));
    if hashes.config != delta.config_hash {
        return Err(format!(
            "hash mismatch: delta {} gives {}, the control plane has {}",
            delta.version, hashes.config, delta.config_hash
        ));
    }
    config.hash = delta.config_hash.clone();
    loader
        .apply(config, Some(changes.as_slice()))
        .map_err(|e| e.to_string())?;
    Ok((Spare::new(live, changes, delta.version), delta.config_hash))
}

/// A delta's change as DB mode's [`EntityChange`] (the entity as the store keeps it).
fn entity_change(c: Change) -> Result<EntityChange, String> {
    let kind =
        Kind::from_key(&c.kind).ok_or_else(|| format!("unknown entity kind '{}'", c.kind))?;
    let id =
        c.id.parse()
            .map_err(|e| format!("{} id '{}': {e}", c.kind, c.id))?;
    let body = match c.op {
        Op::Upsert { entity } => Some(serde_json::to_vec(&entity).map_err(|e| e.to_string())?),
        Op::Delete => None,
    };
    Ok(EntityChange { kind, id, body })
}

#[cfg(test)]
mod tests;
