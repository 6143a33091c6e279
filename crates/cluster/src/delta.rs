//! Sluice's delta extension to the v1 protocol (Kong has no such thing): between Sluice nodes, a change
//! ships only the changed entities instead of the whole config (Kong #11651). Types, codec and the DP's
//! ordering rule; the binary's `hybrid::{push, diff}` produce deltas on the CP and `hybrid::dp_delta`
//! applies them on the DP.
//!
//! Negotiation, invisible to Kong nodes (each field is one Kong ignores):
//! 1. a Sluice DP adds `"sluice": {"capabilities": ["delta.v1"]}` to `basic_info` ([`SluiceHello`]);
//! 2. a Sluice CP that sees it adds `"sluice": {"version": N}` to every `reconfigure` it sends that DP
//!    ([`SluiceFull`]); a Kong CP never does, so a Sluice DP under a Kong CP knows to expect full pushes;
//! 3. after that, the CP sends each change as a gzipped binary `sluice_delta` frame ([`Delta`]): the
//!    version it applies on (`base_version`), the version it produces, the changed entities in order, and
//!    the config hash after it (which the DP then pings with, as after a full push), and Sluice's digest
//!    of that config, which the DP checks its own against ([`crate::digest`]);
//! 4. a DP applies a delta only on its exact base version ([`check`]); on a gap it sends one binary
//!    `sluice_resync` frame ([`Resync`]) and the CP answers with a full `reconfigure`. A Kong DP never
//!    offers the capability, so it keeps Kong's full pushes;
//! 5. a DP that reconnects names the version and hash it holds (`basic_info.sluice.held`, [`Held`]): the
//!    CP sends nothing when that is its current config, the deltas since when it still has them, and the
//!    whole config otherwise.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::frames::{tagged_json, FrameError};
use crate::gzip;
use crate::hash::ConfigHashes;

/// The capability a DP offers in `basic_info`.
pub const DELTA_CAPABILITY: &str = "delta.v1";
/// The `type` of a delta frame (CP → DP).
pub const DELTA_TYPE: &str = "sluice_delta";
/// The `type` of a full-sync request (DP → CP).
pub const RESYNC_TYPE: &str = "sluice_resync";

/// `basic_info.sluice`: what a Sluice node offers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SluiceHello {
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// The config a reconnecting DP holds, from its last link; absent on its first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
}

/// The delta version and config hash a DP runs, as the CP that sent it numbered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub version: u64,
    pub hash: String,
}

impl SluiceHello {
    /// What this build offers, holding `held`.
    pub fn current(held: Option<Held>) -> SluiceHello {
        SluiceHello {
            capabilities: vec![DELTA_CAPABILITY.to_owned()],
            held,
        }
    }

    pub fn offers_deltas(&self) -> bool {
        self.capabilities.iter().any(|c| c == DELTA_CAPABILITY)
    }
}

/// `reconfigure.sluice`: the delta version of this full config; deltas continue from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SluiceFull {
    pub version: u64,
}

/// One changed entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The entity kind's declarative key (`routes`, `keyauth_credentials`, ...).
    pub kind: String,
    /// The entity's primary key (its UUID).
    pub id: String,
    #[serde(flatten)]
    pub op: Op,
}

/// What happened to the entity: `"op": "upsert"` with the whole entity as the declarative export has it,
/// or `"op": "delete"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    Upsert { entity: Value },
    Delete,
}

/// A `sluice_delta` frame. Its changes apply in order and all together (one transaction on the DP); a CP
/// lists what a change depends on first (a new service before the route that references it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub base_version: u64,
    pub version: u64,
    /// The config hash after the delta (Kong's algorithm over the whole new config), and its group hashes.
    pub config_hash: String,
    pub hashes: ConfigHashes,
    /// Sluice's digest of the config after the delta ([`crate::digest`]), which a DP checks at a cost of
    /// what the delta names; absent from a CP that predates it (the DP then checks Kong's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    pub changes: Vec<Change>,
}

impl Delta {
    /// The frame's JSON, before compression.
    pub fn to_json(&self) -> Vec<u8> {
        tagged_json(DELTA_TYPE, self)
    }

    /// The binary frame: gzipped JSON, the same envelope as `reconfigure`.
    pub fn encode(&self) -> Vec<u8> {
        gzip::deflate(&self.to_json())
    }
}

/// A `sluice_resync` frame (binary, plain JSON, DP → CP): the DP wants a full `reconfigure`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resync {
    /// The version the DP holds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Why, for the CP's log (e.g. "gap: have 7, delta applies on 9").
    pub reason: String,
}

impl Resync {
    pub fn encode(&self) -> Vec<u8> {
        tagged_json(RESYNC_TYPE, self)
    }

    /// Decodes a DP frame known to be a resync request.
    pub fn decode(data: &[u8]) -> Result<Resync, FrameError> {
        serde_json::from_slice(data).map_err(|err| FrameError::Json {
            what: RESYNC_TYPE,
            err,
        })
    }
}

/// What a DP holding `current` (the version of its last full config or delta) does with `delta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Apply it; afterwards the DP holds `delta.version`.
    Apply,
    /// Already applied (a version at or below the current one, e.g. replayed after a reconnect): skip it.
    Stale,
    /// Cannot be applied: ask for a full sync with this reason.
    Resync(String),
}

/// Kong-independent ordering rule for deltas.
pub fn check(current: Option<u64>, delta: &Delta) -> Verdict {
    let Some(current) = current else {
        return Verdict::Resync("no full config to apply a delta on".to_owned());
    };
    if delta.version <= delta.base_version {
        return Verdict::Resync(format!(
            "malformed delta: version {} does not follow base {}",
            delta.version, delta.base_version
        ));
    }
    if delta.version <= current {
        return Verdict::Stale;
    }
    if delta.base_version != current {
        return Verdict::Resync(format!(
            "gap: have {current}, delta applies on {}",
            delta.base_version
        ));
    }
    Verdict::Apply
}

#[cfg(test)]
mod tests;
