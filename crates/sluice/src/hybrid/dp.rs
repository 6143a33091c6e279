//! The data plane's side of the cluster link: connect to `cluster_control_plane` (mutual TLS, WebSocket at
//! `/v1/outlet`), send `basic_info` (offering Sluice's deltas: a Kong CP ignores the offer), apply every
//! config the CP pushes and every delta a Sluice CP sends ([`super::dp_delta`]), ping every 30 s and after
//! a change with the running config's hash (after deltas at most once a second, [`super::dp_ping`]), and
//! reconnect with jittered backoff after any failure. While the CP is away the DP serves
//! its last config; a restarted DP serves the one in its store. A frame over `cluster_max_payload`
//! (compressed or inflated) is an error in the log, and the close frame tells the CP why ([`super::oversize`]).

use super::dp_delta::{DeltaSync, Outcome};
use super::dp_ping::Pings;
use super::oversize::{self, Oversized};
use super::ClusterSettings;
use crate::loader::{Loaded, Loader};
use anyhow::{Context, Result};
use futures_util::{SinkExt, StreamExt};
use sluice_cluster::delta::{Held, SluiceHello};
use sluice_cluster::frames::cp::CpMessage;
use sluice_cluster::frames::dp::{ping_payload, BasicInfo, Outlet};
use sluice_cluster::frames::FrameError;
use sluice_cluster::frames::{PING_INTERVAL_SECS, PING_WAIT_SECS, SHARED_MTLS_SNI, TIMEOUT_SECS};
use sluice_cluster::gzip::InflateError;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// Keeps the link to the control plane up until the process ends.
pub async fn run(
    settings: ClusterSettings,
    loader: Arc<Loader>,
    node_id: uuid::Uuid,
    hostname: String,
) {
    // The CP is the source of truth: deltas reach the store in batches. A DP restarted without its CP
    // serves the store's config, which may lack the last batch's changes until the CP's full config comes.
    loader.defer_change_commits(crate::loader::STORE_BATCH);
    let tls = match super::mtls::client_config_for(&settings) {
        Ok(tls) => tokio_rustls::TlsConnector::from(tls),
        Err(e) => {
            tracing::error!(error = %e, "cluster link disabled");
            return;
        }
    };
    let outlet = Outlet {
        node_id: node_id.to_string(),
        node_hostname: Some(hostname),
        node_version: crate::KONG_VERSION.to_string(),
    };
    // What the last link left running, named to the CP on the next one so that it can send only what
    // changed since (or nothing).
    let mut held = None;
    loop {
        let ended = link(&settings, &tls, &outlet, &loader, &mut held).await;
        // Without the CP, the store is the only other copy of what this DP serves (a restart serves it
        // until the CP is back): it takes the deltas still queued for it now, not at the next batch, and
        // before the line below says the link is gone.
        let flushing = loader.clone();
        let _ = tokio::task::spawn_blocking(move || flushing.flush_store()).await;
        match ended {
            Ok(()) => tracing::warn!("control plane closed the cluster link"),
            Err(e) if e.is::<Oversized>() => {
                tracing::error!(error = %e, "cluster link closed: a frame over cluster_max_payload");
            }
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "cluster link failed"),
        }
        // Kong's DP waits 5 to 10 s before it tries again.
        let wait = rand::Rng::gen_range(&mut rand::thread_rng(), 5000..10_000);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// One connection: until the CP goes away or a frame is wrong.
async fn link(
    settings: &ClusterSettings,
    tls: &tokio_rustls::TlsConnector,
    outlet: &Outlet,
    loader: &Arc<Loader>,
    held: &mut Option<Held>,
) -> Result<()> {
    let address = settings.control_plane.as_deref().unwrap_or_default();
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    let timeout = Duration::from_secs(TIMEOUT_SECS);
    let tcp = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address))
        .await
        .context("connecting timed out")?
        .with_context(|| format!("cannot connect to {address}"))?;
    let name = match &settings.mtls {
        super::mtls::Mode::Shared => SHARED_MTLS_SNI.to_string(),
        super::mtls::Mode::Pki { .. } => settings
            .server_name
            .clone()
            .unwrap_or_else(|| host.to_string()),
    };
    let name = rustls::pki_types::ServerName::try_from(name).context("cluster_server_name")?;
    let stream = tokio::time::timeout(timeout, tls.connect(name, tcp))
        .await
        .context("TLS handshake timed out")?
        .context("TLS handshake with the control plane")?;
    let url = format!("wss://{address}{}", outlet.path());
    let config = super::ws_config(settings.max_payload);
    let (mut ws, _) = tokio::time::timeout(
        timeout,
        tokio_tungstenite::client_async_with_config(url, stream, Some(config)),
    )
    .await
    .context("WebSocket handshake timed out")??;
    let mut current = current_hash(loader);
    // Only a hold that is still the running config is named (the store's config after a restart is not
    // one the CP numbered for this process).
    held.take_if(|h| current.as_deref() != Some(h.hash.as_str()));
    let hello = BasicInfo {
        plugins: super::plugin_infos(loader.registry()),
        sluice: Some(SluiceHello::current(held.clone())),
        ..BasicInfo::default()
    };
    ws.send(Message::Binary(hello.encode().into())).await?;
    tracing::info!(control_plane = %address, held = ?held.as_ref().map(|h| h.version), "connected to the control plane");
    let mut deltas = DeltaSync::default();
    if let Some(h) = held.as_ref() {
        deltas.full(Some(h.version), loader);
    }
    let mut ping = tokio::time::interval(Duration::from_secs(PING_INTERVAL_SECS));
    let mut pings = Pings::default();
    loop {
        let check_due = deltas.check_due();
        tokio::select! {
            _ = until(check_due) => deltas.start_check(loader),
            checked = deltas.checked() => {
                if let Err((resync, found)) = checked {
                    // The DP reports the hash of what it serves, so the whole config is applied when it comes.
                    current = found;
                    *held = None;
                    ws.send(Message::Binary(resync.encode().into())).await?;
                }
            }
            _ = ping.tick() => {
                send_ping(&mut ws, &current, &mut pings).await?;
            }
            _ = until(pings.due()) => send_ping(&mut ws, &current, &mut pings).await?,
            frame = tokio::time::timeout(Duration::from_secs(PING_WAIT_SECS), ws.next()) => {
                let data = match frame.context("no frame from the control plane for 45 s")? {
                    Some(Ok(Message::Binary(data))) => data,
                    Some(Ok(Message::Close(frame))) => return oversize::closed("control plane", frame),
                    None => return Ok(()),
                    Some(Ok(_)) => continue,
                    Some(Err(WsError::Capacity(e))) => {
                        return Err(oversize::refuse(&mut ws, "data plane", settings.max_payload, "configuration", &e.to_string()).await);
                    }
                    Some(Err(e)) => return Err(e.into()),
                };
                let message = match CpMessage::decode(&data, settings.max_payload) {
                    Err(FrameError::Inflate(InflateError::TooLarge { .. })) => {
                        let detail = format!("a frame of {} bytes inflates past it", data.len());
                        return Err(oversize::refuse(&mut ws, "data plane", settings.max_payload, "configuration", &detail).await);
                    }
                    decoded => decoded?,
                };
                match message {
                    CpMessage::Reconfigure(frame) => {
                        let version = frame.sluice.map(|s| s.version);
                        if current.as_deref() != Some(frame.config_hash.as_str()) {
                            if !apply_full(loader, frame.config_table, &frame.config_hash).await? {
                                continue;
                            }
                            current = Some(frame.config_hash);
                        }
                        deltas.full(version, loader);
                        *held = version.zip(current.clone()).map(|(version, hash)| Held { version, hash });
                        // Kong's DP pings right after applying, so the CP sees the new hash.
                        send_ping(&mut ws, &current, &mut pings).await?;
                    }
                    CpMessage::Delta(delta) => {
                        if deltas.version.is_none() {
                            anyhow::bail!("a delta frame from a control plane that did not announce deltas");
                        }
                        match deltas.apply(loader, delta).await {
                            Outcome::Applied(hash) => {
                                *held = deltas.version.map(|version| Held { version, hash: hash.clone() });
                                current = Some(hash);
                                if pings.after_delta() {
                                    send_ping(&mut ws, &current, &mut pings).await?;
                                }
                            }
                            Outcome::Skipped => {}
                            Outcome::AskFull(resync) => ws.send(Message::Binary(resync.encode().into())).await?,
                        }
                    }
                    CpMessage::Other(kind) => tracing::debug!(kind, "frame type skipped"),
                }
            }
        }
    }
}

/// Pings the CP with the hash of the running config.
async fn send_ping<S>(ws: &mut S, current: &Option<String>, pings: &mut Pings) -> Result<()>
where
    S: futures_util::Sink<Message, Error = WsError> + Unpin,
{
    let payload = ping_payload(current.as_deref()).as_bytes().to_vec();
    ws.send(Message::Ping(payload.into())).await?;
    pings.sent();
    Ok(())
}

/// Sleeps until `at`; never wakes without one.
async fn until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Loads a whole config from the CP through the loader (validated, stored, published); false when it was
/// refused (the last one keeps serving).
async fn apply_full(loader: &Arc<Loader>, table: serde_json::Value, hash: &str) -> Result<bool> {
    let loader = loader.clone();
    let loaded = tokio::task::spawn_blocking(move || loader.load_doc(table, false, true)).await?;
    match loaded {
        Ok(Loaded::Applied(..)) | Ok(Loaded::Unchanged) => {
            tracing::info!(hash, "configuration from the control plane applied");
            Ok(true)
        }
        Err(e) => {
            tracing::error!(error = %e, "configuration from the control plane refused; keeping the last one");
            Ok(false)
        }
    }
}

/// The Kong hash of the running config (None before any), so that a push of the same config is skipped.
fn current_hash(loader: &Loader) -> Option<String> {
    loader.is_ready().then(|| {
        let table = sluice_model::declarative::export(loader.snapshot().load().config());
        sluice_cluster::hash::config_hashes(&table).config
    })
}
