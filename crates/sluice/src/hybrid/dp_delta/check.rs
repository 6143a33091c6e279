//! The data plane's check that the config it built from deltas is the control plane's: its digest
//! against the one the CP sent with the last delta (`sluice_cluster::digest`), or its Kong hash against
//! the one the live config carries when the CP sent no digest. A delta goes live on its version alone (it follows
//! the version held, as Kong's incremental sync trusts its versions); the hash is checked once per
//! burst of deltas, off the apply: [`QUIET`] after the delta that finds no check scheduled, and no
//! sooner than [`EVERY`] after the check before. A change every 100 ms on the 10,000-route config then
//! costs one check a second instead of one per change: a pass over the kept entities with the digest,
//! MD5 over up to ~6 MB (5-10 ms of CPU) with Kong's hash.
//!
//! The hashing runs on a thread at the idle policy ([`idle`]): a DP whose workers keep its CPU busy
//! serves requests first and checks later (then a check can take seconds, and the next comes
//! [`EVERY`] after it), so the check takes no CPU from requests. `ms` in its log line is wall time.
//! Nothing on the link waits for it: a check runs as a task of its own ([`Check::start`]), and deltas
//! keep going live while it runs (a starved check once held the link's loop, and with it every delta,
//! for as long as other work kept the CPU busy).
//!
//! The check rehashes only the parts the deltas since the last check touched ([`rehash::verify`],
//! from the parts of the config checked last); a partial hash that differs is confirmed over the whole
//! config. A mismatch means the DP serves a config unlike the CP's: the caller asks for the whole config
//! ([`super::DeltaSync::check`]).

use crate::hybrid::rehash::{self, Hashed, Touch};
use crate::idle;
use crate::loader::Loader;
use sluice_cluster::delta::Change;
use std::time::Duration;
use tokio::time::Instant;

/// How long after the delta that schedules it a check runs (the deltas that come meanwhile join it).
pub const QUIET: Duration = Duration::from_millis(50);
/// The least time between two checks while deltas keep coming: a config unlike the CP's serves at most
/// about this long.
pub const EVERY: Duration = Duration::from_secs(1);

/// The hash parts of the config checked last.
pub(super) enum Base {
    Ready(Hashed),
    /// Being computed on an idle thread, after a full config went live.
    Hashing(tokio::task::JoinHandle<std::io::Result<Hashed>>),
}

/// The check's state on one link to the CP.
#[derive(Default)]
pub(super) struct Check {
    /// None: unknown (the next check hashes the whole config).
    pub(super) base: Option<Base>,
    /// What the deltas since the base touched.
    touch: Touch,
    /// Deltas applied since the base (the CP's hash for the last one is the live config's own
    /// `hash`: the DP sets it when it applies a delta).
    pub(super) deltas: usize,
    due: Option<Instant>,
    last: Option<Instant>,
    /// The check under way, if any: it verifies the config that was live when it started.
    running: Option<tokio::task::JoinHandle<Result<Hashed, Mismatch>>>,
}

/// A check that found the live config's hash unlike the CP's.
pub(super) struct Mismatch {
    /// The live config's own hash (None: the check itself failed).
    pub found: Option<String>,
    pub reason: String,
}

impl Check {
    /// After a full config went live: its parts are computed in the background when deltas will follow.
    pub fn after_full(deltas_follow: bool, loader: &Loader) -> Check {
        let live =
            (deltas_follow && loader.is_ready()).then(|| loader.snapshot().load().config().clone());
        let base = live.map(|live| {
            Base::Hashing(tokio::spawn(idle::run("sluice-hash", move || {
                let parts = rehash::full(&live);
                tracing::info!(
                    kept_bytes = parts.kept_bytes(),
                    "hash parts of the full config kept for deltas"
                );
                parts
            })))
        });
        Check {
            base,
            ..Check::default()
        }
    }

    /// A delta with `changes` is being applied (if it fails, the DP asks for the whole config and the
    /// check starts anew).
    pub fn touch(&mut self, changes: &[Change]) {
        self.touch.add(changes);
    }

    /// The delta went live. Schedules the check unless one is due already: the deltas that come
    /// meanwhile do not move it, so a stream of deltas, however fast, is checked about once every
    /// [`EVERY`].
    pub fn applied(&mut self) {
        self.deltas += 1;
        let quiet = Instant::now() + QUIET;
        let due = self.last.map_or(quiet, |last| quiet.max(last + EVERY));
        self.due.get_or_insert(due);
    }

    /// When the next check is due (None: nothing to check, or a check is under way).
    pub fn due(&self) -> Option<Instant> {
        self.due.filter(|_| self.running.is_none())
    }

    /// Starts checking the live config of `loader` against `digest`, the CP's for the last delta, or
    /// without one against the hash the config carries (the CP's too), as a task of its own; [`Check::finished`] gives its result. Deltas applied meanwhile are
    /// checked by the next check, which starts from the parts this one computes.
    pub fn start(&mut self, loader: &Loader, digest: Option<String>) {
        let deltas = std::mem::take(&mut self.deltas);
        let touch = std::mem::take(&mut self.touch);
        let base = self.base.take();
        self.due = None;
        let live = loader.snapshot().load().config().clone();
        self.running = Some(tokio::spawn(async move {
            let base = match base {
                Some(Base::Ready(parts)) => Some(parts),
                Some(Base::Hashing(hashing)) => hashing.await.ok().and_then(Result::ok),
                None => None,
            };
            let expected = live.hash().to_owned();
            let started = std::time::Instant::now();
            let against = if digest.is_some() {
                "digest"
            } else {
                "kong hash"
            };
            let verified = idle::run("sluice-hash", move || {
                rehash::verify(&live, base.as_ref(), &touch, live.hash(), digest.as_deref())
            })
            .await;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            match verified {
                Ok(Ok((parts, how))) => {
                    tracing::info!(deltas, ms, rehashed = ?how, against, hash = %expected, "config hash checked");
                    Ok(parts)
                }
                Ok(Err(found)) => Err(Mismatch {
                    reason: format!(
                        "hash mismatch: the {deltas} deltas before the check give {found}, the control plane has {expected}"
                    ),
                    found: Some(found),
                }),
                Err(e) => Err(Mismatch {
                    reason: format!("checking the config hash failed: {e}"),
                    found: None,
                }),
            }
        }));
    }

    /// The result of the check under way, when it is done (never, when none is): Err when the config
    /// it checked is not the CP's (confirmed over the whole config). Either way the next check starts
    /// from here, and no sooner than [`EVERY`] after.
    pub async fn finished(&mut self) -> Result<(), Mismatch> {
        let Some(running) = self.running.as_mut() else {
            return std::future::pending().await;
        };
        let result = running.await;
        self.running = None;
        let now = Instant::now();
        self.last = Some(now);
        if let Some(due) = &mut self.due {
            *due = (*due).max(now + EVERY);
        }
        match result {
            Ok(Ok(parts)) => {
                self.base = Some(Base::Ready(parts));
                Ok(())
            }
            Ok(Err(mismatch)) => Err(mismatch),
            Err(e) => Err(Mismatch {
                reason: format!("checking the config hash failed: {e}"),
                found: None,
            }),
        }
    }
}
