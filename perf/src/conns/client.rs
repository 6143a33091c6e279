//! The idle clients of `sluice-perf conns`: many connections opened (TLS and HTTP/2 handshakes done), one
//! request each on demand, then held open and silent until dropped.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use sluice_tls::rustls;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio_rustls::client::TlsStream;

/// Connections opened at once.
const OPENING: usize = 200;
/// The request each idle client sends once (the case's one route).
const REQUEST: &[u8] = b"GET /r0 HTTP/1.1\r\nHost: perf\r\n\r\n";

/// How the clients speak to the gateway.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// HTTP/1.1 over plain TCP.
    Plain,
    /// HTTP/1.1 over TLS.
    Tls,
    /// HTTP/2 over TLS (ALPN h2).
    H2,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Plain => "plain",
            Mode::Tls => "tls",
            Mode::H2 => "h2",
        })
    }
}

/// One open client connection.
pub enum Held {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    /// The request handle; the connection runs in its own task.
    H2(SendRequest<Empty<Bytes>>),
}

/// Opens `n` connections to `addr`, [`OPENING`] at a time.
pub async fn open(addr: SocketAddr, mode: Mode, n: usize) -> Result<Vec<Held>> {
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls_config(mode)));
    let mut held = Vec::with_capacity(n);
    let mut opening = JoinSet::new();
    for _ in 0..n {
        if opening.len() >= OPENING {
            held.push(opening.join_next().await.context("opening")???);
        }
        opening.spawn(connect(addr, mode, tls.clone()));
    }
    while let Some(one) = opening.join_next().await {
        held.push(one??);
    }
    Ok(held)
}

async fn connect(addr: SocketAddr, mode: Mode, tls: tokio_rustls::TlsConnector) -> Result<Held> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    if mode == Mode::Plain {
        return Ok(Held::Plain(tcp));
    }
    let name = rustls::pki_types::ServerName::try_from("perf")?;
    let stream = tls.connect(name, tcp).await?;
    if mode == Mode::Tls {
        return Ok(Held::Tls(Box::new(stream)));
    }
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(Held::H2(send))
}

/// Sends one request on every connection, [`OPENING`] at a time, and reads its response; hands the
/// connections back with the number of requests that failed.
pub async fn one_request_each(held: Vec<Held>) -> (Vec<Held>, usize) {
    let (mut back, mut failed) = (Vec::with_capacity(held.len()), 0);
    let mut sending = JoinSet::new();
    let mut done = |(h, ok): (Held, bool)| {
        failed += usize::from(!ok);
        back.push(h);
    };
    for mut h in held {
        if sending.len() >= OPENING {
            if let Some(Ok(one)) = sending.join_next().await {
                done(one);
            }
        }
        sending.spawn(async move {
            let ok = request(&mut h).await.is_ok();
            (h, ok)
        });
    }
    while let Some(one) = sending.join_next().await {
        if let Ok(one) = one {
            done(one);
        }
    }
    (back, failed)
}

async fn request(held: &mut Held) -> Result<()> {
    match held {
        Held::Plain(s) => exchange_h1(s).await,
        Held::Tls(s) => exchange_h1(s.as_mut()).await,
        Held::H2(send) => {
            send.ready().await?;
            let req = http::Request::get("https://perf/r0").body(Empty::new())?;
            let resp = send.send_request(req).await?;
            let status = resp.status();
            resp.into_body().collect().await?;
            if status != 200 {
                bail!("status {status}");
            }
            Ok(())
        }
    }
}

/// Writes [`REQUEST`] and reads one response framed by Content-Length.
async fn exchange_h1<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S) -> Result<()> {
    s.write_all(REQUEST).await?;
    let mut buf = Vec::with_capacity(1024);
    loop {
        let mut chunk = [0u8; 1024];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            bail!("closed before the response ended");
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = std::str::from_utf8(&buf[..end])?;
        if !head.starts_with("HTTP/1.1 200") {
            bail!("{}", head.lines().next().unwrap_or(""));
        }
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .context("no Content-Length")?;
        if buf.len() >= end + 4 + length {
            return Ok(());
        }
    }
}

/// A client config that accepts the benchmark's self-made certificate and offers the mode's protocol.
pub(crate) fn tls_config(mode: Mode) -> rustls::ClientConfig {
    let mut config = rustls::ClientConfig::builder_with_provider(sluice_tls::provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(sluice_tls::unverified())
        .with_no_client_auth();
    config.alpn_protocols = match mode {
        Mode::H2 => vec![b"h2".to_vec()],
        _ => vec![b"http/1.1".to_vec()],
    };
    config
}
