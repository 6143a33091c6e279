//! A data plane's side of Sluice's deltas (`sluice_cluster::delta`). A delta is applied the way DB mode
//! applies a change: the changed entities patch the config (the one before the live one when nothing holds
//! it any more: `dbnode::spare`), the snapshot is compiled incrementally (unchanged routes keep their
//! compiled form), only those entities are written to the store, and the result is published
//! ([`Loader::apply`]). Never a full rebuild per change.
//!
//! A delta goes live when it follows the version held, as Kong's incremental sync applies its deltas on
//! their versions. That the result is the CP's config is checked once per burst of deltas, against the
//! digest (or, from an older CP, the Kong hash) the CP sent with the last ([`check`]: at most one a
//! second while deltas keep coming, beside the link: deltas never wait for a check).
//! A delta that does not follow the version held (a gap), whose entities cannot be read, or after which
//! the check finds a hash unlike the CP's makes the DP ask for the whole config, once: the deltas that
//! arrive until it comes are dropped. (A frame that is not even JSON ends the link, as any bad frame does;
//! the reconnect brings the whole config.)

use crate::dbnode::spare::{self, Spare};
use crate::loader::{EntityChange, Loader, Patch};
use check::{Check, Mismatch};
use sluice_cluster::delta::{self, Change, Delta, Op, Resync, Verdict};
use sluice_model::declarative::kinds::Kind;
use std::sync::Arc;
use std::time::Instant;

mod check;

/// The delta state of one link to the CP.
#[derive(Default)]
pub(super) struct DeltaSync {
    /// The delta version of the running config; None until a full config that carried one (from a CP that
    /// speaks the extension: a Kong CP never sends one, nor deltas).
    pub version: Option<u64>,
    /// The config before the live one, for the next delta to be built on.
    spare: Option<Spare>,
    /// The hash check of the deltas applied.
    check: Check,
    /// The CP's digest of the config the last delta made (None: it sent none), what the check compares.
    digest: Option<String>,
    /// A full sync was asked for and has not come yet.
    asked: bool,
}

/// What became of a delta.
pub(super) enum Outcome {
    /// Live; the new config hash (the CP's).
    Applied(String),
    /// Already held, or a full sync is on its way: dropped.
    Skipped,
    /// Send this to the CP (once per full sync).
    AskFull(Resync),
}

impl DeltaSync {
    /// A full config went live (or was already running): deltas continue from `version`. With a
    /// version (a CP that sends deltas), the live config's hash parts are computed in the background, so
    /// the first check rehashes only what the deltas touch.
    pub fn full(&mut self, version: Option<u64>, loader: &Loader) {
        *self = DeltaSync {
            version,
            check: Check::after_full(version.is_some(), loader),
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
            (Verdict::Resync(reason), _) => return Outcome::AskFull(self.ask(reason)),
            _ => return Outcome::Skipped,
        };
        let (version, hash, started) = (delta.version, delta.config_hash, Instant::now());
        let digest = delta.digest;
        let count = delta.changes.len();
        self.check.touch(&delta.changes);
        let entities = match delta.changes.into_iter().map(entity_change).collect() {
            Ok(entities) => entities,
            Err(reason) => return Outcome::AskFull(self.ask(reason)),
        };
        let spare = self.spare.take();
        let (loader, config_hash) = (loader.clone(), hash.clone());
        let applied = tokio::task::spawn_blocking(move || {
            patch_and_apply(&loader, spare, held, version, entities, config_hash)
        })
        .await;
        match applied {
            Ok(Ok(spare)) => {
                self.version = Some(version);
                self.spare = Some(spare);
                self.digest = digest;
                self.check.applied();
                tracing::info!(version, changes = count,
                    ms = started.elapsed().as_secs_f64() * 1e3, %hash,
                    "delta from the control plane applied");
                Outcome::Applied(hash)
            }
            Ok(Err(reason)) => Outcome::AskFull(self.ask(reason)),
            Err(e) => Outcome::AskFull(self.ask(format!("applying the delta failed: {e}"))),
        }
    }

    /// When the hash check of the deltas applied is due (None: nothing to check, or a check is under
    /// way).
    pub fn check_due(&self) -> Option<tokio::time::Instant> {
        self.check.due()
    }

    /// Starts the due hash check; it runs beside the link, and [`DeltaSync::checked`] gives its result.
    pub fn start_check(&mut self, loader: &Loader) {
        self.check.start(loader, self.digest.clone());
    }

    /// The result of the hash check under way, when it is done (never, when none is): Err is the
    /// request for the whole config when the config it checked is not the CP's, with that config's
    /// own hash, which the DP reports from then on.
    pub async fn checked(&mut self) -> Result<(), (Resync, Option<String>)> {
        match self.check.finished().await {
            Ok(()) => Ok(()),
            Err(Mismatch { found, reason }) => Err((self.ask(reason), found)),
        }
    }

    /// Drops what deltas built on and asks for the whole config.
    fn ask(&mut self, reason: String) -> Resync {
        tracing::warn!(held = ?self.version, %reason, "asking the control plane for the whole configuration");
        self.asked = true;
        self.spare = None;
        self.check = Check::default();
        Resync {
            version: self.version,
            reason,
        }
    }
}

/// Patches the live config (at version `held`) with a delta's `changes` and makes it live with the CP's
/// `hash`; the spare for the next delta. Err is why a full sync is needed.
fn patch_and_apply(
    loader: &Loader,
    spare: Option<Spare>,
    held: u64,
    version: u64,
    changes: Vec<EntityChange>,
    hash: String,
) -> Result<Spare, String> {
    let live = loader.snapshot().load().config().clone();
    let (mut config, in_place) =
        spare::next(spare, &live, held, &changes).map_err(|e| format!("{e:#}"))?;
    config.hash = hash;
    loader
        .apply(
            config,
            Some(Patch {
                base: &live,
                changes: &changes,
                routes_in_place: in_place.as_deref(),
            }),
        )
        .map_err(|e| e.to_string())?;
    Ok(Spare::new(live, changes, version))
}

/// A delta's change as DB mode's [`EntityChange`] (the entity as the store keeps it).
pub(super) fn entity_change(c: Change) -> Result<EntityChange, String> {
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
