//! A data plane's side of Sluice's deltas (`sluice_cluster::delta`). A delta is applied the way DB mode
//! applies a change: the changed entities patch the config (the one before the live one when nothing holds
//! it any more: `dbnode::spare`), the snapshot is compiled incrementally (unchanged routes keep their
//! compiled form), only those entities are written to the store, and the result is published
//! ([`Loader::apply`]). Never a full rebuild per change.
//!
//! Before it goes live the patched config's Kong hash must equal the one the CP sent: a config that differs
//! from the CP's never serves. The DP keeps the hash parts of the live config, so only the kinds a delta
//! names are exported and rehashed ([`super::rehash`]); a partial hash that differs is confirmed over the
//! whole config before it counts as a mismatch. A delta that does not follow the version held (a gap),
//! whose entities cannot be read, or whose result does not have the CP's hash makes the DP ask for the
//! whole config, once: the deltas that arrive until it comes are dropped. (A frame that is not even JSON
//! ends the link, as any bad frame does; the reconnect brings the whole config.)

use super::rehash::{self, Hashed, Rehashed};
use crate::dbnode::spare::{self, Spare};
use crate::loader::{EntityChange, Loader, Patch};
use sluice_cluster::delta::{self, Change, Delta, Op, Resync, Verdict};
use sluice_model::declarative::kinds::Kind;
use sluice_model::Config;
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The delta state of one link to the CP.
#[derive(Default)]
pub(super) struct DeltaSync {
    /// The delta version of the running config; None until a full config that carried one (from a CP that
    /// speaks the extension: a Kong CP never sends one, nor deltas).
    pub version: Option<u64>,
    /// The config before the live one, for the next delta to be built on.
    spare: Option<Spare>,
    /// The hash parts of the live config: from the last delta, or being computed since a full config
    /// went live; None when unknown (the next delta hashes the whole config).
    parts: Option<Known>,
    /// A full sync was asked for and has not come yet.
    asked: bool,
}

/// The hash parts of one config. The `Weak` keeps its allocation, so no other config can have its
/// address: parts are used only for the config they were computed for.
struct LiveParts {
    config: Weak<Config>,
    parts: Hashed,
}

impl LiveParts {
    /// The parts, when they are of `live`.
    fn of(self, live: &Arc<Config>) -> Option<Hashed> {
        std::ptr::eq(self.config.as_ptr(), Arc::as_ptr(live)).then_some(self.parts)
    }
}

/// The hash parts of the live config, when known.
enum Known {
    /// Kept from the last delta.
    Ready(LiveParts),
    /// Being computed on a blocking thread, after a full config went live: the first delta waits for
    /// them rather than hashing the whole config itself.
    Hashing(tokio::task::JoinHandle<LiveParts>),
}

impl Known {
    async fn get(self) -> Option<LiveParts> {
        match self {
            Known::Ready(parts) => Some(parts),
            Known::Hashing(hashing) => hashing.await.ok(),
        }
    }
}

/// A delta made live.
struct Applied {
    spare: Spare,
    parts: LiveParts,
    hash: String,
    rehashed: Rehashed,
    /// Time spent checking the hash.
    hash_ms: f64,
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
    /// A full config went live (or was already running): deltas continue from `version`. With a
    /// version (a CP that sends deltas), the live config's hash parts are computed in the background, so
    /// the first delta rehashes only what it touches.
    pub fn full(&mut self, version: Option<u64>, loader: &Loader) {
        let live = loader
            .is_ready()
            .then(|| loader.snapshot().load().config().clone());
        let parts = version.and(live).map(|live| {
            Known::Hashing(tokio::task::spawn_blocking(move || {
                let parts = rehash::full(&live);
                tracing::info!(
                    kept_bytes = parts.kept_bytes(),
                    "hash parts of the full config kept for deltas"
                );
                LiveParts {
                    config: Arc::downgrade(&live),
                    parts,
                }
            }))
        });
        *self = DeltaSync {
            version,
            parts,
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
        let parts = match self.parts.take() {
            Some(known) => known.get().await,
            None => None,
        };
        let loader = loader.clone();
        let applied = tokio::task::spawn_blocking(move || {
            patch_and_apply(&loader, spare, parts, held, delta)
        })
        .await;
        match applied {
            Ok(Ok(applied)) => {
                self.version = Some(version);
                self.spare = Some(applied.spare);
                self.parts = Some(Known::Ready(applied.parts));
                tracing::info!(version, changes = count, ms = started.elapsed().as_secs_f64() * 1e3,
                    hash_ms = applied.hash_ms, rehashed = ?applied.rehashed, hash = %applied.hash,
                    "delta from the control plane applied");
                Outcome::Applied(applied.hash)
            }
            Ok(Err(reason)) => self.ask(reason),
            Err(e) => self.ask(format!("applying the delta failed: {e}")),
        }
    }

    fn ask(&mut self, reason: String) -> Outcome {
        tracing::warn!(held = ?self.version, %reason, "asking the control plane for the whole configuration");
        self.asked = true;
        self.spare = None;
        self.parts = None;
        Outcome::AskFull(Resync {
            version: self.version,
            reason,
        })
    }
}

/// Patches the live config (at version `held`, with hash parts `parts` if known) with `delta`, checks its
/// hash and makes it live. Err is why a full sync is needed.
fn patch_and_apply(
    loader: &Loader,
    spare: Option<Spare>,
    parts: Option<LiveParts>,
    held: u64,
    delta: Delta,
) -> Result<Applied, String> {
    let touched = rehash::touched(&delta.changes);
    let changes = delta
        .changes
        .into_iter()
        .map(entity_change)
        .collect::<Result<Vec<_>, _>>()?;
    let live = loader.snapshot().load().config().clone();
    let base = parts.and_then(|p| p.of(&live));
    let mut config = spare::next(spare, &live, held, &changes).map_err(|e| format!("{e:#}"))?;
    let hashing = Instant::now();
    let (parts, rehashed) = rehash::verify(&config, base.as_ref(), &touched, &delta.config_hash)
        .map_err(|found| {
            format!(
                "hash mismatch: delta {} gives {found}, the control plane has {}",
                delta.version, delta.config_hash
            )
        })?;
    let hash_ms = hashing.elapsed().as_secs_f64() * 1e3;
    if rehashed == Rehashed::FullAfterMiss {
        tracing::warn!(
            version = delta.version,
            "the partial config hash missed; the whole config's matches"
        );
    }
    config.hash = delta.config_hash.clone();
    let published = loader
        .apply(
            config,
            Some(Patch {
                base: &live,
                changes: &changes,
            }),
        )
        .map_err(|e| e.to_string())?;
    Ok(Applied {
        spare: Spare::new(live, changes, delta.version),
        parts: LiveParts {
            config: Arc::downgrade(&published),
            parts,
        },
        hash: delta.config_hash,
        rehashed,
        hash_ms,
    })
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
