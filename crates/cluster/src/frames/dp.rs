//! What a DP sends: the connection query, the first `basic_info` frame, ping payloads and `error` reports.
//! Encoded by a DP runtime, decoded by a CP runtime, both with Kong's rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{tagged_json, type_name, FrameError, OUTLET_PATH};
use crate::delta::SluiceHello;
use crate::hash::EMPTY_CONFIG_HASH;

/// The query of the DP's WebSocket request: `/v1/outlet?node_id=&node_hostname=&node_version=`.
/// Kong writes the values unescaped and reads them unescaped (`ngx.var.arg_*`); so do we.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outlet {
    pub node_id: String,
    /// Kong's CP does not require it (only id and version).
    pub node_hostname: Option<String>,
    pub node_version: String,
}

impl Outlet {
    /// The request target a DP connects to.
    pub fn path(&self) -> String {
        format!(
            "{OUTLET_PATH}?node_id={}&node_hostname={}&node_version={}",
            self.node_id,
            self.node_hostname.as_deref().unwrap_or(""),
            self.node_version
        )
    }

    /// Reads a request's query on the CP. `Err` carries Kong's log message; the answer is a 400.
    pub fn parse(query: &str) -> Result<Outlet, &'static str> {
        let mut id = None;
        let mut hostname = None;
        let mut version = None;
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let slot = match k {
                "node_id" => &mut id,
                "node_hostname" => &mut hostname,
                "node_version" => &mut version,
                _ => continue,
            };
            // nginx's $arg_* is the first occurrence
            slot.get_or_insert_with(|| v.to_owned());
        }
        let node_id = id.ok_or("data plane didn't pass the id")?;
        let node_version = version.ok_or("data plane didn't pass the version")?;
        Ok(Outlet {
            node_id,
            node_hostname: hostname,
            node_version,
        })
    }
}

/// One plugin a node has (Kong lists every loaded plugin, sorted by lowercase name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginInfo {
    pub name: String,
    /// The handler's `VERSION`; Kong omits the key when a handler has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The DP's first frame (binary, plain JSON, `"type": "basic_info"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BasicInfo {
    pub plugins: Vec<PluginInfo>,
    /// `cluster_dp_labels` as a map (`"key:value"` split at the first `:`); absent when none are set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The DP's configuration with secrets masked (Kong's `remove_sensitive()`); an OSS CP ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_conf: Option<Map<String, Value>>,
    /// Wasm filters: a map name → `{name}` (an empty JSON object when wasm is off). Sluice has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Value>,
    /// Sluice's extension (ignored by Kong): the capabilities this node offers, e.g. deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sluice: Option<SluiceHello>,
}

impl BasicInfo {
    /// The frame's bytes.
    pub fn encode(&self) -> Vec<u8> {
        tagged_json("basic_info", self)
    }

    /// Reads the first frame on the CP with Kong's checks and messages: a JSON object, `type` =
    /// `basic_info`, `plugins` a table (a JSON object counts, and lists no plugins, as `ipairs` sees it).
    pub fn decode(data: &[u8]) -> Result<BasicInfo, FrameError> {
        let value: Value = serde_json::from_slice(data)
            .map_err(|e| FrameError::BasicInfoNotObject(Some(e.to_string())))?;
        let Value::Object(mut map) = value else {
            return Err(FrameError::BasicInfoNotObject(None));
        };
        if map.get("type").and_then(Value::as_str) != Some("basic_info") {
            return Err(FrameError::BasicInfoType(type_name(map.get("type"))));
        }
        match map.get("plugins") {
            Some(Value::Array(_)) => {}
            Some(Value::Object(_)) => {
                map.insert("plugins".into(), Value::Array(Vec::new()));
            }
            _ => return Err(FrameError::BasicInfoPlugins),
        }
        serde_json::from_value(Value::Object(map)).map_err(|err| FrameError::Json {
            what: "basic_info",
            err,
        })
    }

    /// Whether the DP offers Sluice's delta sync (see [`crate::delta`]).
    pub fn offers_deltas(&self) -> bool {
        self.sluice.as_ref().is_some_and(SluiceHello::offers_deltas)
    }
}

/// `cluster_dp_labels` entries (`key:value`) as the `labels` map; an entry without `:` is refused
/// (Kong's configuration loader refuses it too).
pub fn labels(entries: &[String]) -> Result<BTreeMap<String, String>, String> {
    entries
        .iter()
        .map(|e| match e.split_once(':') {
            Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
            None => Err(format!(
                "invalid cluster_dp_labels entry (want key:value): {e}"
            )),
        })
        .collect()
}

/// The payload of the DP's ping: the hash of the config it runs, or 32 zeros when it has none.
pub fn ping_payload(current_hash: Option<&str>) -> &str {
    match current_hash {
        Some(h) if !h.is_empty() => h,
        _ => EMPTY_CONFIG_HASH,
    }
}

/// Reads a ping on the CP: the payload must be 32 bytes (Kong checks the length only).
pub fn parse_ping(data: &[u8]) -> Result<&str, FrameError> {
    match std::str::from_utf8(data) {
        Ok(s) if s.len() == 32 => Ok(s),
        _ => Err(FrameError::PingHash(
            String::from_utf8_lossy(data).into_owned(),
        )),
    }
}

/// Kong's `CLUSTERING_DATA_PLANE_ERROR` names, for [`ErrorReport::name`].
pub mod error_names {
    pub const CONFIG_PARSE: &str = "declarative configuration parse failure";
    pub const DELTAS_PARSE: &str = "sync deltas parse failure";
    pub const RELOAD: &str = "configuration reload failed";
    pub const GENERIC: &str = "generic or unknown error";
}

/// A DP's report of a config it could not apply (`{"type": "error", "error": {...}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorReport {
    pub name: String,
    pub source: String,
    pub message: String,
    /// The hash of the config that failed (zeros when the frame had none).
    pub config_hash: String,
    /// Kong's extra fields: `flattened_errors` and `fields` (parse errors), `exception`, `traceback`.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ErrorReport {
    pub fn encode(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Body<'a> {
            error: &'a ErrorReport,
        }
        tagged_json("error", &Body { error: self })
    }
}

/// A binary frame a DP sends after `basic_info`, as a Sluice CP reads it. A Kong CP accepts nothing but
/// pings after `basic_info` (any other frame ends the connection), so a DP sends these only to a CP that
/// announced Sluice's extension (and error reports only where Kong would, in Konnect mode, or to Sluice).
#[derive(Debug, Clone, PartialEq)]
pub enum DpMessage {
    Error(ErrorReport),
    /// Sluice: the DP asks for a full `reconfigure` (see [`crate::delta::Resync`]).
    Resync(crate::delta::Resync),
    /// Any other type, with its name; ignored.
    Other(String),
}

impl DpMessage {
    pub fn decode(data: &[u8]) -> Result<DpMessage, FrameError> {
        let json = |err| FrameError::Json {
            what: "data plane",
            err,
        };
        let mut value: Value = serde_json::from_slice(data).map_err(json)?;
        let ty = type_name(value.get("type"));
        Ok(match ty.as_str() {
            "error" => {
                let report = value.get_mut("error").map(Value::take).unwrap_or_default();
                DpMessage::Error(serde_json::from_value(report).map_err(json)?)
            }
            crate::delta::RESYNC_TYPE => {
                DpMessage::Resync(serde_json::from_value(value).map_err(json)?)
            }
            _ => DpMessage::Other(ty),
        })
    }
}

#[cfg(test)]
mod tests;
