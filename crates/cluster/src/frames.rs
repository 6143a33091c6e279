//! The messages of Kong's v1 hybrid protocol (`/v1/outlet`, kong/clustering/{data_plane,control_plane}.lua)
//! as types with their encoders and decoders. A CP runtime decodes what a DP sends ([`dp`]) and encodes
//! what it answers ([`cp`]); a DP runtime does the reverse. Nothing here touches a socket.
//!
//! The conversation, as Kong runs it:
//! 1. the DP opens a WebSocket (over mTLS) to [`OUTLET_PATH`] with its id, hostname and version in the
//!    query ([`dp::Outlet`]); the CP answers 400 without an id or a version;
//! 2. the DP's first frame is a binary, uncompressed JSON `basic_info` ([`dp::BasicInfo`]); the CP closes
//!    the connection when it is not one, then checks versions ([`crate::compat`]);
//! 3. the CP sends gzipped JSON `reconfigure` frames ([`cp::Reconfigure`]) on connect and after every change;
//! 4. the DP sends a WebSocket ping every [`PING_INTERVAL_SECS`] (and right after applying a config) whose
//!    payload is the 32-character hash of the config it runs ([`dp::ping_payload`]); the CP pongs. Either
//!    side drops the link after [`PING_WAIT_SECS`] without a frame;
//! 5. a DP that fails to apply a config may report it in a binary JSON `error` frame ([`dp::ErrorReport`];
//!    Kong only sends these in Konnect mode).

pub mod cp;
pub mod dp;

use serde::Serialize;

/// The v1 WebSocket endpoint on the CP's cluster listener.
pub const OUTLET_PATH: &str = "/v1/outlet";
/// The SNI a DP sends (and the CP expects) with `cluster_mtls = shared`.
pub const SHARED_MTLS_SNI: &str = "kong_clustering";
/// How often a DP pings (Kong's `CLUSTERING_PING_INTERVAL`).
pub const PING_INTERVAL_SECS: u64 = 30;
/// Silence after which either side gives the connection up (1.5 × the ping interval).
pub const PING_WAIT_SECS: u64 = 45;
/// Kong's WebSocket timeout for connecting and for each read (`CLUSTERING_TIMEOUT`, 5 s).
pub const TIMEOUT_SECS: u64 = 5;

/// A frame that cannot be used; the messages are Kong's where Kong has one.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// `basic_info` was not a JSON object.
    #[error("failed to decode websocket basic info data{}", .0.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    BasicInfoNotObject(Option<String>),
    #[error("invalid basic info data type: {0}")]
    BasicInfoType(String),
    #[error("missing plugins in basic info data")]
    BasicInfoPlugins,
    /// A ping's payload must be a 32-byte config hash.
    #[error("received a ping frame from the data plane with an invalid hash: '{0}'")]
    PingHash(String),
    #[error(transparent)]
    Inflate(#[from] crate::gzip::InflateError),
    #[error("invalid JSON in {what} frame: {err}")]
    Json {
        what: &'static str,
        err: serde_json::Error,
    },
    /// A `reconfigure` whose `config_table` is not an object (Kong asserts on it).
    #[error("reconfigure frame without a config_table object")]
    NoConfigTable,
}

/// Serializes `inner`'s fields after `"type": ty`, the shape of every v1 JSON message.
pub(crate) fn tagged_json<T: Serialize>(ty: &'static str, inner: &T) -> Vec<u8> {
    #[derive(Serialize)]
    struct Tagged<'a, T> {
        #[serde(rename = "type")]
        ty: &'static str,
        #[serde(flatten)]
        inner: &'a T,
    }
    serde_json::to_vec(&Tagged { ty, inner }).expect("frames serialize to JSON")
}

/// How the `type` field of a decoded message reads in Kong's error messages (`unknown` when absent).
pub(crate) fn type_name(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => "unknown".to_owned(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}
