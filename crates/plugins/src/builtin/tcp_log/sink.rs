//! Delivering `tcp-log` batches: one connection (plain or TLS) kept between deliveries for `keepalive`,
//! and each record written as a line.

use crate::logging::queue::Sink;
use bytes::Bytes;
use sluice_tls::rustls::pki_types::ServerName;
use sluice_tls::rustls::ClientConfig;
use std::future::Future;
use std::mem::MaybeUninit;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// A connection to the server.
enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    async fn write(&mut self, payload: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(payload).await,
            Stream::Tls(s) => {
                s.write_all(payload).await?;
                s.flush().await
            }
        }
    }

    /// False when the server closed the connection or sent something (a log server has nothing to say).
    /// One non-blocking peek: tokio's readiness may not have seen a close that just happened.
    fn is_open(&self) -> bool {
        let mut byte = [MaybeUninit::<u8>::uninit()];
        let peeked = socket2::SockRef::from(self.tcp()).peek(&mut byte);
        matches!(peeked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

/// TLS settings: the client config and the name given to rustls.
struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

pub(super) struct TcpSink {
    host: String,
    port: u16,
    timeout: Duration,
    /// How long an idle connection may be reused (None: no limit).
    keepalive: Option<Duration>,
    tls: Option<Tls>,
    /// The connection kept from the last delivery and when it went idle.
    idle: Mutex<Option<(Stream, Instant)>>,
}

impl TcpSink {
    /// `tls`: None for plain TCP, else the SNI to send (None: no SNI, as Kong without `tls_sni`).
    pub fn new(
        host: String,
        port: u16,
        timeout: Duration,
        keepalive: Option<Duration>,
        tls: Option<Option<&str>>,
    ) -> Result<TcpSink, String> {
        let tls = tls.map(|sni| tls_for(&host, sni)).transpose()?;
        Ok(TcpSink {
            host,
            port,
            timeout,
            keepalive,
            tls,
            idle: Mutex::new(None),
        })
    }

    fn name(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The kept connection, when it is still within `keepalive` and open.
    fn take_idle(&self) -> Option<Stream> {
        let (stream, since) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        let fresh = self.keepalive.is_none_or(|k| since.elapsed() <= k);
        (fresh && stream.is_open()).then_some(stream)
    }

    fn keep(&self, stream: Stream) {
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = Some((stream, Instant::now()));
    }

    /// Runs one step of a delivery within `timeout`, naming the step in its error as Kong does.
    async fn step<T>(
        &self,
        what: &str,
        f: impl Future<Output = std::io::Result<T>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(format!("failed to {what} {}: {e}", self.name())),
            Err(_) => Err(format!("failed to {what} {}: timeout", self.name())),
        }
    }

    async fn connect(&self) -> Result<Stream, String> {
        let address = (self.host.as_str(), self.port);
        let tcp = self.step("connect to", TcpStream::connect(address)).await?;
        let Some(tls) = &self.tls else {
            return Ok(Stream::Plain(tcp));
        };
        let handshake = tls.connector.connect(tls.name.clone(), tcp);
        let stream = self.step("perform TLS handshake to", handshake).await?;
        Ok(Stream::Tls(Box::new(stream)))
    }
}

/// A client config that verifies nothing (Kong's `sslhandshake(false, sni, false)`) and sends `sni` when
/// given.
fn tls_for(host: &str, sni: Option<&str>) -> Result<Tls, String> {
    let mut config = ClientConfig::builder_with_provider(sluice_tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(sluice_tls::unverified())
        .with_no_client_auth();
    config.enable_sni = sni.is_some();
    let name = match sni {
        Some(sni) => ServerName::try_from(sni.to_string())
            .map_err(|_| format!("tls_sni '{sni}' is not a valid server name"))?,
        // Not sent and not verified: any name does.
        None => match host.parse::<IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(host.to_string())
                .unwrap_or_else(|_| ServerName::IpAddress(IpAddr::from([0, 0, 0, 0]).into())),
        },
    };
    Ok(Tls {
        connector: TlsConnector::from(Arc::new(config)),
        name,
    })
}

/// The batch as Kong frames each record: the JSON and a newline.
pub(super) fn lines(batch: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::with_capacity(batch.iter().map(|r| r.len() + 1).sum());
    for record in batch {
        out.extend_from_slice(record);
        out.push(b'\n');
    }
    out
}

impl Sink for TcpSink {
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let payload = lines(batch);
        if let Some(mut stream) = self.take_idle() {
            if self
                .step("send data to", stream.write(&payload))
                .await
                .is_ok()
            {
                self.keep(stream);
                return Ok(());
            }
            // The server dropped the kept connection after the check: one new connection.
        }
        let mut stream = self.connect().await?;
        self.step("send data to", stream.write(&payload)).await?;
        self.keep(stream);
        Ok(())
    }
}
