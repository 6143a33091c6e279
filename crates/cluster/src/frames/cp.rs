//! What a CP sends: gzipped JSON binary frames, Kong's `reconfigure` (the whole config) and, to Sluice DPs
//! that asked for it, Sluice's `sluice_delta`. Encoded by a CP runtime; decoded by a DP runtime with Kong's
//! DP rules ([`CpMessage::decode`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{tagged_json, type_name, FrameError};
use crate::delta::{Delta, SluiceFull, DELTA_TYPE};
use crate::gzip;
use crate::hash::{config_hashes, ConfigHashes};

/// A full config push (`"type": "reconfigure"`), as Kong 3.9's CP builds it in
/// `export_deflated_reconfigure_payload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconfigure {
    /// When the CP exported the config: seconds since the epoch with milliseconds (`ngx.now()`); Kong's
    /// DP only logs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// The declarative export: `_format_version` and one list per entity kind.
    pub config_table: Value,
    pub config_hash: String,
    /// Absent only when a CP sends none (Kong's DP then keeps it absent; see [`CpMessage::decode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashes: Option<ConfigHashes>,
    /// Sluice's extension (Kong ignores it): the delta version this config is, sent only to DPs that
    /// offered deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sluice: Option<SluiceFull>,
}

impl Reconfigure {
    /// A push of `config_table`, with Kong's hashes computed over it.
    pub fn new(config_table: Value, timestamp: f64) -> Reconfigure {
        let hashes = config_hashes(&config_table);
        Reconfigure {
            timestamp: Some(timestamp),
            config_table,
            config_hash: hashes.config.clone(),
            hashes: Some(hashes),
            sluice: None,
        }
    }

    /// The frame's JSON, before compression.
    pub fn to_json(&self) -> Vec<u8> {
        tagged_json("reconfigure", self)
    }

    /// The binary frame: gzipped JSON.
    pub fn encode(&self) -> Vec<u8> {
        gzip::deflate(&self.to_json())
    }

    /// The names of the plugins the config configures (Kong's `plugins_configured`, which
    /// [`crate::compat::check_configuration`] checks against each DP's plugin list).
    pub fn configured_plugins(&self) -> std::collections::BTreeSet<String> {
        configured_plugins(&self.config_table)
    }
}

/// The `name` of every entry of `config_table.plugins`.
pub fn configured_plugins(config_table: &Value) -> std::collections::BTreeSet<String> {
    let plugins = config_table.get("plugins").and_then(Value::as_array);
    plugins
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("name")?.as_str().map(str::to_owned))
        .collect()
}

/// A binary frame from the CP, decoded by a DP.
#[derive(Debug, Clone, PartialEq)]
pub enum CpMessage {
    Reconfigure(Reconfigure),
    Delta(Delta),
    /// Any other type, with its name: Kong's DP skips it.
    Other(String),
}

impl CpMessage {
    /// Inflates (at most `max_payload` bytes) and reads a frame as Kong's DP does. For `reconfigure`:
    /// `config_table` must be an object; when `config_hash` is missing the DP computes both the hash and
    /// the group hashes itself; group hashes missing from `hashes` are zeros.
    ///
    /// The frame's `type` is read first, skipping the rest: a delta (ten a second while changes stream
    /// in) is then read straight into a [`Delta`], not into a JSON tree first.
    pub fn decode(frame: &[u8], max_payload: usize) -> Result<CpMessage, FrameError> {
        let json = gzip::inflate(frame, max_payload)?;
        let invalid = |err| FrameError::Json {
            what: "control plane",
            err,
        };
        let tag: Tag = serde_json::from_slice(&json).map_err(invalid)?;
        let ty = type_name(tag.ty.as_ref());
        match ty.as_str() {
            "reconfigure" => {
                let mut value: Value = serde_json::from_slice(&json).map_err(invalid)?;
                decode_reconfigure(&mut value).map(CpMessage::Reconfigure)
            }
            DELTA_TYPE => serde_json::from_slice(&json)
                .map(CpMessage::Delta)
                .map_err(|err| FrameError::Json {
                    what: DELTA_TYPE,
                    err,
                }),
            _ => Ok(CpMessage::Other(ty)),
        }
    }
}

/// A frame's `type`, whatever JSON it is (Kong's DP logs a non-string type as it reads it).
#[derive(Deserialize)]
struct Tag {
    #[serde(rename = "type", default)]
    ty: Option<Value>,
}

fn decode_reconfigure(value: &mut Value) -> Result<Reconfigure, FrameError> {
    let Some(map) = value.as_object_mut() else {
        return Err(FrameError::NoConfigTable);
    };
    let config_table = match map.remove("config_table") {
        Some(t @ Value::Object(_)) => t,
        _ => return Err(FrameError::NoConfigTable),
    };
    let json = |err| FrameError::Json {
        what: "reconfigure",
        err,
    };
    let field =
        |map: &mut serde_json::Map<String, Value>, k: &str| map.remove(k).filter(|v| !v.is_null());
    let timestamp = field(map, "timestamp").and_then(|t| t.as_f64());
    let sluice = field(map, "sluice")
        .map(serde_json::from_value)
        .transpose()
        .map_err(json)?;
    let (config_hash, hashes) = match field(map, "config_hash") {
        Some(Value::String(h)) => {
            let hashes = field(map, "hashes")
                .map(serde_json::from_value)
                .transpose()
                .map_err(json)?;
            (h, hashes)
        }
        _ => {
            let h = config_hashes(&config_table);
            (h.config.clone(), Some(h))
        }
    };
    Ok(Reconfigure {
        timestamp,
        config_table,
        config_hash,
        hashes,
        sluice,
    })
}

#[cfg(test)]
mod tests;
