//! Hybrid mode (`role = control_plane | data_plane`): a control plane (CP) owns the config and pushes it to
//! data planes (DPs) over Kong's v1 protocol (`sluice-cluster` has the frames, hashes and rules;
//! docs/hybrid.md describes them).
//!
//! - [`cp`]: `cluster_listen` (mTLS, [`mtls`]), a WebSocket per DP at `/v1/outlet`; each DP gets the whole
//!   config on connect and after every change, as Kong's CP sends it; the CP knows each DP's status.
//! - [`dp`]: connects to `cluster_control_plane`, says hello (`basic_info`), applies each config it gets
//!   through the loader (so it is validated like any other and stored in LMDB: a DP restarted without its CP
//!   serves its last config), pings every 30 s with its config hash, and reconnects with jittered backoff.
//! - Between Sluice nodes, after the first full config, each change ships as a delta of the changed
//!   entities ([`push`] and [`diff`] on the CP, [`dp_delta`] on the DP, which applies it the way DB mode
//!   applies a change: patch, incremental compile, only those entities written to the store).
//!
//! Not built yet: Kong's per-version payload rewrites (docs/hybrid.md).

pub mod cp;
mod diff;
pub mod dp;
mod dp_delta;
mod dp_ping;
pub mod mtls;
mod oversize;
mod push;
mod rehash;
#[cfg(test)]
mod testing;
mod warm;

use anyhow::{bail, Context, Result};
use std::net::SocketAddr;

/// `role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Traditional,
    ControlPlane,
    DataPlane,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Traditional => "traditional",
            Role::ControlPlane => "control_plane",
            Role::DataPlane => "data_plane",
        }
    }
}

/// The `cluster_*` settings, with Kong's names and defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSettings {
    pub role: Role,
    /// `cluster_listen` (CP), default `0.0.0.0:8005`.
    pub listen: SocketAddr,
    /// `cluster_control_plane` (DP): `host:port`.
    pub control_plane: Option<String>,
    pub cert: Option<String>,
    pub cert_key: Option<String>,
    pub mtls: mtls::Mode,
    /// `cluster_server_name` (pki mode): the name the DP checks on the CP's certificate.
    pub server_name: Option<String>,
    /// `cluster_max_payload`: the largest frame, and the largest inflated config, in bytes (16 MiB).
    pub max_payload: usize,
    /// `cluster_data_plane_purge_delay`, seconds (14 days).
    pub purge_delay: u64,
}

/// How much a cluster link's WebSocket reads at once. tungstenite zeroes that much of its buffer before
/// every read (its default is 128 KiB); a TLS record holds at most 16 KiB, so a read never gets more, and
/// a delta or a ping is a few hundred bytes.
const WS_READ_AT_ONCE: usize = 16 * 1024;

/// The WebSocket settings of a cluster link, on both ends: frames and messages up to `max_payload`.
pub(crate) fn ws_config(
    max_payload: usize,
) -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(max_payload))
        .max_frame_size(Some(max_payload))
        .read_buffer_size(WS_READ_AT_ONCE)
}

/// The setting names this module reads.
pub const SETTINGS: &[&str] = &[
    "role",
    "cluster_listen",
    "cluster_control_plane",
    "cluster_cert",
    "cluster_cert_key",
    "cluster_mtls",
    "cluster_ca_cert",
    "cluster_server_name",
    "cluster_max_payload",
    "cluster_data_plane_purge_delay",
];

impl ClusterSettings {
    /// Reads and checks the settings; `database` is the node's (`off` or `postgres`).
    pub fn from_values(
        get: &dyn Fn(&str) -> Option<String>,
        database: &str,
    ) -> Result<ClusterSettings> {
        let role = match get("role").as_deref() {
            None | Some("traditional") => Role::Traditional,
            Some("control_plane") => Role::ControlPlane,
            Some("data_plane") => Role::DataPlane,
            Some(other) => {
                bail!("role: expected traditional, control_plane or data_plane, got '{other}'")
            }
        };
        let mtls = match get("cluster_mtls").as_deref() {
            None | Some("shared") => mtls::Mode::Shared,
            Some("pki") => mtls::Mode::Pki {
                ca: get("cluster_ca_cert")
                    .context("cluster_ca_cert is required when cluster_mtls = pki")?,
            },
            Some(other) => bail!("cluster_mtls: expected shared or pki, got '{other}'"),
        };
        let listen = get("cluster_listen").unwrap_or_else(|| "0.0.0.0:8005".into());
        let number = |name: &str, default: u64| crate::settings::number(get, name, default);
        let settings = ClusterSettings {
            role,
            listen: listen
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .parse()
                .with_context(|| {
                    format!("cluster_listen: expected address:port, got '{listen}'")
                })?,
            control_plane: get("cluster_control_plane"),
            cert: get("cluster_cert"),
            cert_key: get("cluster_cert_key"),
            mtls,
            server_name: get("cluster_server_name"),
            max_payload: number("cluster_max_payload", 16 * 1024 * 1024)? as usize,
            purge_delay: number("cluster_data_plane_purge_delay", 14 * 24 * 3600)?,
        };
        if role != Role::Traditional && (settings.cert.is_none() || settings.cert_key.is_none()) {
            bail!(
                "role = {}: cluster_cert and cluster_cert_key are required",
                role.as_str()
            );
        }
        if role == Role::DataPlane {
            if database != "off" {
                bail!("role = data_plane: database must be off (the config comes from the control plane)");
            }
            if settings.control_plane.is_none() {
                bail!("role = data_plane: cluster_control_plane is required");
            }
        }
        Ok(settings)
    }

    /// This node's cluster certificate and key.
    pub fn identity(&self) -> Result<mtls::Identity> {
        match (&self.cert, &self.cert_key) {
            (Some(c), Some(k)) => mtls::Identity::load(c, k),
            _ => bail!("cluster_cert and cluster_cert_key are required"),
        }
    }
}

/// The plugins of this build as `basic_info` lists them (sorted by name, each with the node's version).
pub fn plugin_infos(
    registry: &sluice_plugins::Registry,
) -> Vec<sluice_cluster::frames::dp::PluginInfo> {
    use sluice_model::PluginRegistry;
    let mut names = registry.names();
    names.sort_unstable();
    names
        .into_iter()
        .map(|name| sluice_cluster::frames::dp::PluginInfo {
            name: name.to_string(),
            version: Some(crate::KONG_VERSION.to_string()),
        })
        .collect()
}
