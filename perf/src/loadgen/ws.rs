//! The ws-echo case's load: `sluice-perf ws-load`, pinned to the load CPUs like the other generators,
//! opens `--connections` WebSocket tunnels through the gateway (tunnel `i` on route `/r{i mod routes}`,
//! [`OPENING`] handshakes at a time), then for the measured duration keeps one [`MESSAGE_SIZE`]-byte binary
//! message in flight on every tunnel, checks each echo's length, and prints one JSON line: messages/s
//! (echoes received before the deadline) with their round-trip percentiles. One thread, one core.

#[cfg(test)]
mod tests;

use super::{output, pinned, LoadSpec};
use crate::results::LoadResult;
use anyhow::{Context, Result};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// The size of every message, bytes.
pub const MESSAGE_SIZE: usize = 64;

/// Handshakes in progress at once while the tunnels open.
const OPENING: usize = 200;

/// How long after the deadline a tunnel's last echo may take before it counts as an error.
const GRACE: Duration = Duration::from_secs(5);

/// The marker that starts the result line `ws-load` prints.
pub const MARKER: &str = "SLUICE_PERF_WS_RESULT ";

/// The options of `sluice-perf ws-load`.
#[derive(clap::Args, Debug, Clone)]
pub struct WsLoadArgs {
    /// The gateway, `http://host:port` (plain) or `https://host:port` (TLS, certificate not checked).
    #[arg(long)]
    pub url: String,
    /// WebSocket tunnels.
    #[arg(long, default_value_t = 1)]
    pub tunnels: u32,
    /// Routes `/r0` .. the tunnels are spread over.
    #[arg(long, default_value_t = 1)]
    pub routes: usize,
    /// Measured time (`10s`, `500ms`).
    #[arg(long, default_value = "10s", value_parser = crate::runner::parse_duration)]
    pub duration: Duration,
    /// Counting mode (for instruction counts, scripts/ws-instructions.sh): every tunnel sends exactly
    /// this many messages, whatever the time, and all of them count.
    #[arg(long)]
    pub messages: Option<u64>,
}

impl WsLoadArgs {
    /// The arguments that make this again.
    fn to_args(&self) -> Vec<String> {
        vec![
            "ws-load".into(),
            "--url".into(),
            self.url.clone(),
            "--tunnels".into(),
            self.tunnels.to_string(),
            "--routes".into(),
            self.routes.to_string(),
            "--duration".into(),
            format!("{}ms", self.duration.as_millis()),
        ]
    }
}

/// Runs `sluice-perf ws-load` for `spec` on the load CPUs and reads its result.
pub fn run(spec: &LoadSpec) -> Result<LoadResult> {
    let args = WsLoadArgs {
        url: spec.base_url.clone(),
        tunnels: spec.connections,
        routes: spec.case.routes,
        duration: spec.duration,
        messages: None,
    };
    let me = std::env::current_exe().context("locating sluice-perf")?;
    let mut cmd = pinned(spec.cpus.as_deref(), me);
    cmd.args(args.to_args());
    parse(&output(cmd, "sluice-perf ws-load")?)
}

/// Reads the result line out of `ws-load`'s stdout.
pub fn parse(stdout: &str) -> Result<LoadResult> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(MARKER))
        .with_context(|| format!("ws-load printed no result line; output was:\n{stdout}"))?;
    serde_json::from_str(line).with_context(|| format!("bad ws-load result line: {line}"))
}

/// `sluice-perf ws-load`: drives the tunnels on a one-thread runtime and prints the result line.
pub fn main(args: &WsLoadArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(drive(args))?;
    println!("{MARKER}{}", serde_json::to_string(&result)?);
    Ok(())
}

/// One open tunnel, plain or over TLS.
enum Tunnel {
    Plain(Box<WebSocketStream<TcpStream>>),
    Tls(Box<WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>>),
}

/// What one tunnel did in the measured time.
#[derive(Default)]
struct Tally {
    messages: u64,
    errors: u64,
    /// Round trips, µs.
    rtt_us: Vec<f64>,
}

/// Opens the tunnels, pumps them for the duration, and sums what they did.
pub async fn drive(args: &WsLoadArgs) -> Result<LoadResult> {
    let (tls, authority) = match args.url.split_once("://") {
        Some(("https", a)) => (true, a),
        Some(("http", a)) => (false, a),
        _ => anyhow::bail!("ws-load: bad --url `{}`", args.url),
    };
    let authority = authority.trim_end_matches('/').to_string();
    let addr: std::net::SocketAddr = authority.parse().context("ws-load: --url host:port")?;
    let connector = tls.then(|| {
        let config = crate::conns::client::tls_config(crate::conns::client::Mode::Tls);
        tokio_rustls::TlsConnector::from(Arc::new(config))
    });
    let scheme = if tls { "wss" } else { "ws" };
    let mut tunnels = Vec::with_capacity(args.tunnels as usize);
    let mut opening = JoinSet::new();
    for i in 0..args.tunnels as usize {
        if opening.len() >= OPENING {
            tunnels.push(opening.join_next().await.context("opening")???);
        }
        let url = format!("{scheme}://{authority}/r{}", i % args.routes.max(1));
        opening.spawn(open(addr, url, connector.clone()));
    }
    while let Some(one) = opening.join_next().await {
        tunnels.push(one.context("opening")??);
    }
    let payload = Bytes::from(vec![b'm'; MESSAGE_SIZE]);
    let start = Instant::now();
    let (deadline, limit) = match args.messages {
        // A deadline no run reaches: the count alone ends it.
        Some(n) => (start + Duration::from_secs(86_400), n),
        None => (start + args.duration, u64::MAX),
    };
    let mut pumps = JoinSet::new();
    for t in tunnels {
        let payload = payload.clone();
        pumps.spawn(async move {
            match t {
                Tunnel::Plain(ws) => pump(*ws, payload, deadline, limit).await,
                Tunnel::Tls(ws) => pump(*ws, payload, deadline, limit).await,
            }
        });
    }
    let mut total = Tally::default();
    while let Some(t) = pumps.join_next().await {
        let t = t.context("a tunnel's task")?;
        total.messages += t.messages;
        total.errors += t.errors;
        total.rtt_us.extend(t.rtt_us);
    }
    let seconds = match args.messages {
        Some(_) => start.elapsed().as_secs_f64(),
        None => args.duration.as_secs_f64(),
    };
    Ok(LoadResult {
        requests: total.messages,
        duration_s: seconds,
        rps: total.messages as f64 / seconds.max(1e-9),
        latency: crate::stats::percentiles_ms(&mut total.rtt_us),
        errors: total.errors,
        non_2xx: 0,
    })
}

/// Connects and makes the WebSocket handshake.
async fn open(
    addr: std::net::SocketAddr,
    url: String,
    tls: Option<tokio_rustls::TlsConnector>,
) -> Result<Tunnel> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let fail = |e| anyhow::anyhow!("WebSocket handshake on {url}: {e}");
    Ok(match tls {
        None => Tunnel::Plain(Box::new(
            tokio_tungstenite::client_async(&url, tcp)
                .await
                .map_err(fail)?
                .0,
        )),
        Some(c) => {
            let name = sluice_tls::rustls::pki_types::ServerName::try_from("perf")?;
            let stream = c.connect(name, tcp).await?;
            let ws = tokio_tungstenite::client_async(&url, stream)
                .await
                .map_err(fail)?
                .0;
            Tunnel::Tls(Box::new(ws))
        }
    })
}

/// Sends a message and waits for its echo, again and again until `deadline` or `limit` echoes; echoes
/// that arrive after the deadline are not counted. A wrong or missing echo ends the tunnel's run as one
/// error.
async fn pump<S>(mut ws: WebSocketStream<S>, payload: Bytes, deadline: Instant, limit: u64) -> Tally
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut t = Tally::default();
    while Instant::now() < deadline && t.messages < limit {
        let sent = Instant::now();
        if ws.send(Message::Binary(payload.clone())).await.is_err() {
            t.errors += 1;
            break;
        }
        match tokio::time::timeout_at(deadline + GRACE, ws.next()).await {
            Ok(Some(Ok(Message::Binary(echo)))) if echo.len() == payload.len() => {
                let now = Instant::now();
                if now <= deadline {
                    t.messages += 1;
                    t.rtt_us.push((now - sent).as_secs_f64() * 1e6);
                }
            }
            _ => {
                t.errors += 1;
                break;
            }
        }
    }
    let _ = ws.close(None).await;
    t
}
