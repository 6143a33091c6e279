//! The control plane's side of the cluster link: `cluster_listen`, mutual TLS, one WebSocket per data
//! plane at `/v1/outlet`, and Kong's v1 conversation on it:
//! 1. the DP's query names it (`node_id`, `node_hostname`, `node_version`; 400 without id or version);
//! 2. its first frame is `basic_info` (its plugins); a DP of another major version, or a newer minor, is
//!    refused (`kong_version_incompatible`);
//! 3. the CP sends the whole config (`reconfigure`, gzipped) at once and after every change, unless the
//!    config uses a plugin the DP lacks (`plugin_set_incompatible`: the DP keeps its last config). A Sluice
//!    DP that offered deltas in `basic_info` gets the whole config once (with its delta version), then
//!    only the changes ([`super::push`]), and the whole config again when it asks (`sluice_resync`);
//! 4. the DP pings with its config hash; 45 s without a frame from it ends the link.

use super::push::{Push, Pushes};
use super::ClusterSettings;
use crate::loader::Loader;
use anyhow::{Context, Result};
use futures_util::{SinkExt, StreamExt};
use sluice_cluster::compat::{self, SyncStatus};
use sluice_cluster::delta::Held;
use sluice_cluster::frames::dp::{parse_ping, BasicInfo, DpMessage, Outlet, PluginInfo};
use sluice_cluster::frames::{PING_WAIT_SECS, TIMEOUT_SECS};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// What the CP knows of a connected (or recently seen) data plane: Kong's `clustering_data_planes` row.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DataPlane {
    pub id: String,
    pub ip: String,
    pub hostname: String,
    pub version: String,
    pub sync_status: &'static str,
    pub config_hash: String,
    /// Unix seconds.
    pub last_seen: u64,
    pub updated_at: u64,
    /// The DP's `cluster_dp_labels`.
    pub labels: std::collections::BTreeMap<String, String>,
}

/// The data planes by id.
pub type DataPlanes = Arc<Mutex<HashMap<String, DataPlane>>>;

/// Binds `cluster_listen` and returns the loop that serves it until the process ends. A control plane
/// that cannot bind (or has no usable certificate) must not start, as Kong's does not: its data planes
/// would otherwise reach whatever else holds that port.
pub async fn listen(
    settings: ClusterSettings,
    loader: Arc<Loader>,
    planes: DataPlanes,
) -> Result<impl std::future::Future<Output = ()>> {
    let tls = super::mtls::server_config(settings.identity()?, &settings.mtls)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("cluster_listen: cannot listen on {}", settings.listen))?;
    tracing::info!(addr = %settings.listen, "cluster listening (control plane)");
    Ok(serve(settings, listener, acceptor, loader, planes))
}

async fn serve(
    settings: ClusterSettings,
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    loader: Arc<Loader>,
    planes: DataPlanes,
) {
    let cp_plugins = Arc::new(super::plugin_infos(loader.registry()));
    let pushes = Arc::new(Pushes::default());
    tokio::spawn(super::warm::keep_full_frame_ready(
        loader.clone(),
        pushes.clone(),
    ));
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "cluster_listen: accept failed");
                continue;
            }
        };
        let (acceptor, loader, planes, plugins, pushes) = (
            acceptor.clone(),
            loader.clone(),
            planes.clone(),
            cp_plugins.clone(),
            pushes.clone(),
        );
        let max_payload = settings.max_payload;
        tokio::spawn(async move {
            let link = Link {
                peer,
                loader,
                planes,
                plugins,
                pushes,
                max_payload,
            };
            match link.run(acceptor, tcp).await {
                Err(e) if e.is::<super::oversize::Oversized>() => {
                    tracing::error!(%peer, error = %e, "data plane link closed: a frame over cluster_max_payload");
                }
                Err(e) => {
                    tracing::warn!(%peer, error = %format!("{e:#}"), "data plane link closed")
                }
                Ok(()) => {}
            }
        });
    }
}

struct Link {
    peer: SocketAddr,
    loader: Arc<Loader>,
    planes: DataPlanes,
    plugins: Arc<Vec<PluginInfo>>,
    pushes: Arc<Pushes>,
    max_payload: usize,
}

impl Link {
    async fn run(
        self,
        acceptor: tokio_rustls::TlsAcceptor,
        tcp: tokio::net::TcpStream,
    ) -> Result<()> {
        let timeout = Duration::from_secs(TIMEOUT_SECS);
        let tls = tokio::time::timeout(timeout, acceptor.accept(tcp))
            .await
            .context("TLS handshake timed out")?
            .context("TLS handshake (is the data plane's cluster certificate this cluster's?)")?;
        let mut outlet = None;
        // tungstenite's callback type fixes the error as a whole response.
        #[allow(clippy::result_large_err)]
        let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
            let refuse = |msg: &str| {
                let mut r = ErrorResponse::new(Some(msg.to_string()));
                *r.status_mut() = http::StatusCode::BAD_REQUEST;
                r
            };
            if req.uri().path() != sluice_cluster::frames::OUTLET_PATH {
                return Err(refuse("not a cluster endpoint"));
            }
            outlet = Some(Outlet::parse(req.uri().query().unwrap_or_default()).map_err(refuse)?);
            Ok(resp)
        };
        let config = super::ws_config(self.max_payload);
        let mut ws = tokio::time::timeout(
            timeout,
            tokio_tungstenite::accept_hdr_async_with_config(tls, check, Some(config)),
        )
        .await
        .context("WebSocket handshake timed out")??;
        let outlet = outlet.context("no outlet query")?;
        let hello = match tokio::time::timeout(timeout, ws.next()).await {
            Ok(Some(Ok(Message::Binary(data)))) => BasicInfo::decode(&data)?,
            Ok(Some(Err(WsError::Capacity(e)))) => {
                let (limit, detail) = (self.max_payload, e.to_string());
                let refused =
                    super::oversize::refuse(&mut ws, "control plane", limit, "basic_info", &detail);
                return Err(refused.await);
            }
            Ok(Some(Err(e))) => {
                return Err(anyhow::Error::new(e).context("no basic_info from the data plane"))
            }
            Err(_) => anyhow::bail!("no basic_info from the data plane within {TIMEOUT_SECS} s"),
            Ok(other) => anyhow::bail!("no basic_info from the data plane, but {other:?}"),
        };
        let mut plane = DataPlane {
            id: outlet.node_id.clone(),
            ip: self.peer.ip().to_string(),
            hostname: outlet.node_hostname.clone().unwrap_or_default(),
            version: outlet.node_version.clone(),
            sync_status: SyncStatus::Unknown.as_str(),
            config_hash: sluice_cluster::hash::EMPTY_CONFIG_HASH.to_string(),
            last_seen: now(),
            updated_at: now(),
            labels: hello.labels.clone().unwrap_or_default(),
        };
        if let Err(incompatible) =
            compat::check_kong_version(crate::KONG_VERSION, &outlet.node_version)
        {
            plane.sync_status = incompatible.status.as_str();
            self.record(&plane);
            anyhow::bail!("{}", incompatible.message);
        }
        self.record(&plane);
        tracing::info!(id = %plane.id, peer = %self.peer, version = %plane.version, "data plane connected");
        let dp_plugins = compat::plugin_map(&hello.plugins);
        let offers = hello.offers_deltas();
        let mut sent = Sent {
            deltas: offers,
            held: None,
            claimed: hello.sluice.and_then(|s| s.held).filter(|_| offers),
        };
        let mut changes = self.loader.subscribe();
        let mut push = true;
        loop {
            changes.mark_unchanged();
            if push && self.loader.is_ready() {
                // Exporting, hashing, diffing and gzipping a large config is CPU work: off the runtime.
                let (pushes, loader) = (self.pushes.clone(), self.loader.clone());
                let current = tokio::task::spawn_blocking(move || pushes.current(&loader)).await?;
                let dp = &dp_plugins;
                match compat::check_configuration(&self.plugins, &current.configured, dp, None) {
                    Ok(()) => {
                        let (pushes, mut state) = (self.pushes.clone(), sent);
                        let frames = tokio::task::spawn_blocking(move || {
                            (state.frames(&pushes, &current), state)
                        });
                        let (frames, after) = frames.await?;
                        sent = after;
                        for frame in frames {
                            if frame.len() > self.max_payload {
                                let detail = format!("a frame of {} bytes, not sent", frame.len());
                                return Err(super::oversize::refuse(
                                    &mut ws,
                                    "control plane",
                                    self.max_payload,
                                    "configuration",
                                    &detail,
                                )
                                .await);
                            }
                            ws.send(Message::Binary(frame)).await?;
                        }
                        plane.sync_status = SyncStatus::Normal.as_str();
                    }
                    Err(incompatible) => {
                        tracing::warn!(id = %plane.id, "{}", incompatible.message);
                        plane.sync_status = incompatible.status.as_str();
                    }
                }
                self.record(&plane);
            }
            push = false;
            tokio::select! {
                changed = changes.changed() => {
                    changed.context("the loader is gone")?;
                    push = true;
                }
                frame = tokio::time::timeout(Duration::from_secs(PING_WAIT_SECS), ws.next()) => {
                    match frame.context("no frame from the data plane for 45 s")? {
                        Some(Ok(Message::Ping(data))) => {
                            plane.config_hash = parse_ping(&data)?.to_string();
                            plane.last_seen = now();
                            self.record(&plane);
                        }
                        // Why a DP ends the link, when it says (e.g. 1009: a config over its cluster_max_payload).
                        Some(Ok(Message::Close(frame))) => return super::oversize::closed("data plane", frame),
                        None => return Ok(()),
                        Some(Ok(Message::Pong(_))) => plane.last_seen = now(),
                        // Only a DP that offered deltas may send more than pings (Kong's CP drops others).
                        Some(Ok(Message::Binary(data))) if sent.deltas => {
                            push = sent.read(&plane.id, &data)?;
                        }
                        Some(Ok(other)) => anyhow::bail!("unexpected frame from the data plane: {other:?}"),
                        Some(Err(e)) => return Err(e.into()),
                    }
                }
            }
        }
    }

    fn record(&self, plane: &DataPlane) {
        let plane = DataPlane {
            updated_at: now(),
            ..plane.clone()
        };
        let mut planes = self.planes.lock().unwrap_or_else(|p| p.into_inner());
        planes.insert(plane.id.clone(), plane);
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What one link has sent its DP.
struct Sent {
    /// The DP offered Sluice's deltas (`basic_info.sluice`).
    deltas: bool,
    /// The delta version of the config it was last sent (None: nothing yet, or it asked for a full sync).
    held: Option<u64>,
    /// What a reconnecting DP said it holds (`basic_info.sluice.held`), until the first push weighs it.
    claimed: Option<Held>,
}

impl Sent {
    /// The frames that bring the DP to `push`: nothing when it has it; deltas when it offered them and
    /// they lead from what it holds; else the whole config (Kong's push to a Kong DP, unchanged).
    fn frames(
        &mut self,
        pushes: &Pushes,
        push: &Push,
    ) -> Vec<tokio_tungstenite::tungstenite::Bytes> {
        if let Some(claim) = self.claimed.take() {
            // Taken when it is this config as this CP numbered it, or a version the CP's deltas start
            // from (the DP checks the hash each delta leads to, and asks for the whole config if wrong).
            if claim.version != push.version || claim.hash == push.hashes.config {
                self.held = Some(claim.version);
            }
        }
        let held = self.held.replace(push.version);
        if held == Some(push.version) {
            tracing::debug!(
                version = push.version,
                "data plane holds the current configuration"
            );
            return Vec::new();
        }
        if !self.deltas {
            return vec![push.kong_frame()];
        }
        match held.and_then(|h| pushes.deltas_from(h, push)) {
            Some(deltas) => {
                let bytes: usize = deltas.iter().map(|d| d.len()).sum();
                tracing::debug!(
                    version = push.version,
                    deltas = deltas.len(),
                    bytes,
                    "deltas sent"
                );
                deltas
            }
            None => {
                let frame = push.sluice_frame();
                tracing::debug!(
                    version = push.version,
                    bytes = frame.len(),
                    "full configuration sent"
                );
                vec![frame]
            }
        }
    }

    /// Reads a Sluice DP's frame; true when it asks for the whole config.
    fn read(&mut self, id: &str, data: &[u8]) -> Result<bool> {
        match DpMessage::decode(data)? {
            DpMessage::Resync(resync) => {
                tracing::info!(id, reason = %resync.reason, "data plane asked for a full sync");
                self.held = None;
                Ok(true)
            }
            DpMessage::Error(report) => {
                tracing::warn!(id, name = %report.name, message = %report.message, "data plane reported an error");
                Ok(false)
            }
            DpMessage::Other(kind) => {
                tracing::debug!(id, kind, "frame type skipped");
                Ok(false)
            }
        }
    }
}
