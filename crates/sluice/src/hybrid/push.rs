//! What the control plane sends for each published config, made once per config and shared by every link
//! (never once per data plane):
//! - the whole config as Kong's `reconfigure` (gzipped), for Kong DPs exactly as Kong's CP sends it, and for
//!   Sluice DPs with the delta version it carries (`"sluice": {"version": N}`); each is made the first time
//!   a link needs it;
//! - for Sluice DPs, the `sluice_delta` from the config before (see [`super::diff`]), with Kong's hashes of
//!   the new config. The last [`HISTORY`] deltas are kept, so a link that fell a few versions behind (changes
//!   published while it was sending) catches up with deltas rather than the whole config.
//!
//! The hashes of a config that follows the last push rehash only the kinds its delta changes
//! ([`super::rehash`]).

use super::{diff, rehash};
use crate::loader::Loader;
use sluice_cluster::delta::{Delta, SluiceFull};
use sluice_cluster::frames::cp::Reconfigure;
use sluice_cluster::hash::ConfigHashes;
use sluice_model::Config;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;
use tokio_tungstenite::tungstenite::Bytes;

/// Deltas kept for links that are behind.
pub const HISTORY: usize = 16;

/// One published config as the data planes get it.
pub struct Push {
    /// The delta version (grows by one per published config that differs from the one before).
    pub version: u64,
    config: Arc<Config>,
    pub hashes: ConfigHashes,
    /// The parts of `hashes.config` and the kept groups, for the next push to start from.
    parts: rehash::Hashed,
    /// The plugins the config uses (each DP must have them).
    pub configured: BTreeSet<String>,
    /// When it was exported, for `reconfigure.timestamp`.
    timestamp: f64,
    kong: OnceLock<Bytes>,
    sluice: OnceLock<Bytes>,
}

impl Push {
    /// Kong's full push (no Sluice field): what a Kong DP gets.
    pub fn kong_frame(&self) -> Bytes {
        self.kong.get_or_init(|| self.full(None)).clone()
    }

    /// The full push with its delta version: what a Sluice DP gets on connect, after a resync, or when
    /// it is too far behind for deltas.
    pub fn sluice_frame(&self) -> Bytes {
        let version = SluiceFull {
            version: self.version,
        };
        self.sluice.get_or_init(|| self.full(Some(version))).clone()
    }

    /// Whether the Sluice full frame has been made (it is then sent without delay).
    #[cfg(test)]
    pub fn sluice_frame_made(&self) -> bool {
        self.sluice.get().is_some()
    }

    fn full(&self, sluice: Option<SluiceFull>) -> Bytes {
        let reconfigure = Reconfigure {
            timestamp: Some(self.timestamp),
            config_table: sluice_model::declarative::export(&self.config),
            config_hash: self.hashes.config.clone(),
            hashes: Some(self.hashes.clone()),
            sluice,
        };
        reconfigure.encode().into()
    }
}

/// The last [`Push`] and the deltas that led to it.
#[derive(Default)]
pub struct Pushes(Mutex<State>);

#[derive(Default)]
struct State {
    last: Option<Arc<Push>>,
    /// Oldest first, each from the version before; the newest leads to `last`.
    deltas: VecDeque<Kept>,
}

/// A delta frame and the versions it leads from and to.
struct Kept {
    base: u64,
    version: u64,
    frame: Bytes,
}

impl Pushes {
    /// The push of the live config, made by the first link that asks after it was published.
    pub fn current(&self, loader: &Loader) -> Arc<Push> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let config = loader.snapshot().load().config().clone();
        let previous = match &state.last {
            Some(last) if Arc::ptr_eq(&last.config, &config) => return last.clone(),
            Some(last) => Some(last.clone()),
            None => None,
        };
        let changes = previous
            .as_ref()
            .and_then(|p| Some((p, diff::diff(&p.config, &config)?)));
        // The diff compares every kind and refuses a format change, so its changes name every part
        // that differs.
        let parts = match &changes {
            Some((p, changes)) => rehash::partial(&config, &p.parts, &rehash::touched(changes)),
            None => rehash::full(&config),
        };
        let hashes = parts.parts().hashes();
        let version = previous
            .as_ref()
            .map_or_else(first_version, |p| p.version + 1);
        let push = Arc::new(Push {
            version,
            configured: config.plugins.iter().map(|p| p.name.clone()).collect(),
            config,
            hashes,
            parts,
            timestamp: unix_seconds(),
            kong: OnceLock::new(),
            sluice: OnceLock::new(),
        });
        let delta = changes.map(|(p, changes)| {
            let delta = Delta {
                base_version: p.version,
                version,
                config_hash: push.hashes.config.clone(),
                hashes: push.hashes.clone(),
                digest: Some(push.parts.digest()),
                changes,
            };
            Kept {
                base: p.version,
                version,
                frame: delta.encode().into(),
            }
        });
        match delta {
            Some(d) => {
                if state.deltas.len() == HISTORY {
                    state.deltas.pop_front();
                }
                state.deltas.push_back(d);
            }
            // A change deltas cannot describe: no chain leads past it.
            None => state.deltas.clear(),
        }
        state.last = Some(push.clone());
        push
    }

    /// The delta frames that take a DP holding version `held` to `push`, in order; None when they are not
    /// kept (the DP needs the whole config).
    pub fn deltas_from(&self, held: u64, push: &Push) -> Option<Vec<Bytes>> {
        let state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let start = state.deltas.iter().position(|d| d.base == held)?;
        let end = state
            .deltas
            .iter()
            .position(|d| d.version == push.version)?;
        (start <= end).then(|| {
            state
                .deltas
                .range(start..=end)
                .map(|d| d.frame.clone())
                .collect()
        })
    }
}

/// A CP's first version: its start time in milliseconds, so versions of a restarted CP are newer than its
/// previous life's (a DP still compares them only within one connection).
fn first_version() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(1, |d| d.as_millis() as u64)
}

fn unix_seconds() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| (d.as_millis() as f64) / 1000.0)
}

#[cfg(test)]
mod tests;
