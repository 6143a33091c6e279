//! The HTTP/1.1 client of the `sluice-log` thread: http-log, opentelemetry and zipkin deliver their batches
//! with it. A client sends to one endpoint with one method and one set of headers; its connections
//! (plain TCP, or TLS with rustls) are kept alive between deliveries and reused ([`pool`]), and one the
//! endpoint closed is replaced by a new connection. hyper's `client::conn::http1` speaks the protocol, each
//! connection's I/O driven by its own task on the log thread.
//!
//! Why not reqwest: its pool, tower layers and per-request setup cost ~68,000 instructions per delivered
//! batch on the log thread (callgrind, `sluice-perf`'s http-log case, the request and its connection's
//! task, the body's framing aside); this client ~22,500. `sluice-perf` counts them against every logged
//! request.

mod pool;
#[cfg(test)]
mod tests;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http::header::{HeaderValue, AUTHORIZATION, HOST};
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use pool::Pool;
use sluice_tls::rustls::pki_types::ServerName;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use url::{Host, Position, Url};

/// A kept or new connection: hyper's handle for sending requests on it.
type Sender = SendRequest<Full<Bytes>>;

/// Time limits of one delivery and how long an idle connection is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// For the TCP connection and the TLS handshake.
    pub connect: Duration,
    /// For the whole delivery: connecting, sending the request and reading the response.
    pub total: Duration,
    /// How long a connection may stay idle before it is closed (None: until the endpoint closes it).
    pub keepalive: Option<Duration>,
}

/// TLS toward an `https` endpoint: the connector and the name rustls checks and sends as SNI.
struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

/// The endpoint's answer.
pub struct Response {
    pub status: u16,
    pub body: Bytes,
}

/// Sends requests to one endpoint (see the module doc).
pub struct HttpClient {
    /// Where to connect: the host (a name or an IP address, without brackets) and port.
    host: String,
    port: u16,
    tls: Option<Tls>,
    method: Method,
    /// The request target: the URL's path and query.
    target: Uri,
    /// `Host` first, Basic authorization from the URL, then the caller's headers.
    headers: HeaderMap,
    limits: Limits,
    pool: Arc<Pool>,
}

impl HttpClient {
    /// A client for an `http` or `https` `url`. User info in the URL becomes Basic authorization, as
    /// written (percent-escapes kept, as lua-resty-http sends it), unless `headers` has an `Authorization`.
    /// `verify`: whether an https endpoint's certificate is checked against the system's CAs.
    pub fn new(
        url: &Url,
        method: Method,
        headers: HeaderMap,
        limits: Limits,
        verify: bool,
    ) -> Result<HttpClient, String> {
        let (host, name) = match url.host() {
            Some(Host::Domain(d)) => (d.to_owned(), ServerName::try_from(d.to_owned()).ok()),
            Some(Host::Ipv4(ip)) => (ip.to_string(), Some(ServerName::from(ip))),
            Some(Host::Ipv6(ip)) => (ip.to_string(), Some(ServerName::from(ip))),
            None => return Err(format!("no host in '{url}'")),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("no port in '{url}'"))?;
        let tls = match url.scheme() {
            "http" => None,
            "https" => {
                let spec = sluice_tls::UpstreamTls {
                    verify,
                    ..Default::default()
                };
                // A host rustls cannot name gets no SNI (and fails verification when checked).
                let unnamed = || ServerName::from(std::net::Ipv4Addr::UNSPECIFIED);
                Some(Tls {
                    connector: TlsConnector::from(sluice_tls::client_config(&spec)?),
                    name: name.unwrap_or_else(unnamed),
                })
            }
            other => return Err(format!("unsupported scheme '{other}' in '{url}'")),
        };
        // The URL leaves out the scheme's default port, as `Host` should.
        let authority = &url[Position::BeforeHost..Position::AfterPort];
        let mut all = HeaderMap::with_capacity(headers.len() + 1);
        all.insert(
            HOST,
            HeaderValue::from_str(authority).map_err(|e| e.to_string())?,
        );
        if let Some(userinfo) = userinfo(url).filter(|_| !headers.contains_key(AUTHORIZATION)) {
            let basic = format!("Basic {}", STANDARD.encode(userinfo));
            all.insert(
                AUTHORIZATION,
                HeaderValue::from_str(&basic).map_err(|e| e.to_string())?,
            );
        }
        all.extend(headers);
        let target = Uri::try_from(&url[Position::BeforePath..Position::AfterQuery])
            .map_err(|e| format!("invalid path in '{url}': {e}"))?;
        Ok(HttpClient {
            host,
            port,
            tls,
            method,
            target,
            headers: all,
            limits,
            pool: Pool::new(limits.keepalive),
        })
    }

    /// `host:port` of the endpoint, for warnings (never the user info or path).
    pub fn endpoint_name(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }

    /// Sends `body` and reads the whole response, on a kept connection when there is one, within the
    /// limits. The connection is kept for the next request unless either side closes it.
    pub async fn send(&self, body: Bytes) -> Result<Response, String> {
        match tokio::time::timeout(self.limits.total, self.exchange(body)).await {
            Ok(result) => result,
            Err(_) => Err("timeout".into()),
        }
    }

    async fn exchange(&self, body: Bytes) -> Result<Response, String> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.target.clone();
        *request.headers_mut() = self.headers.clone();
        let mut kept = self.pool.take();
        let (sender, response) = loop {
            let reused = kept.is_some();
            let mut sender = match kept.take() {
                Some(sender) => sender,
                None => self.connect().await?,
            };
            match sender.try_send_request(request).await {
                Ok(response) => break (sender, response),
                Err(mut e) => match e.take_message() {
                    // Not sent: the kept connection was closed meanwhile. Once more, on a new one.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(e.into_error().to_string()),
                },
            }
        };
        let status = response.status().as_u16();
        // The body is read to its end in any case, so that the connection can serve the next request.
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the response: {e}"))?
            .to_bytes();
        self.pool.put(sender);
        Ok(Response { status, body })
    }

    /// A new connection, handed to hyper.
    async fn connect(&self) -> Result<Sender, String> {
        let connect = TcpStream::connect((self.host.as_str(), self.port));
        let tcp = match tokio::time::timeout(self.limits.connect, connect).await {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => return Err(format!("connect: {e}")),
            Err(_) => return Err("connect: timeout".into()),
        };
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.tls else {
            return handshake(tcp).await;
        };
        let handshake_tls = tls.connector.connect(tls.name.clone(), tcp);
        match tokio::time::timeout(self.limits.connect, handshake_tls).await {
            Ok(Ok(stream)) => handshake(stream).await,
            Ok(Err(e)) => Err(format!("TLS handshake: {e}")),
            Err(_) => Err("TLS handshake: timeout".into()),
        }
    }
}

/// `user:password` of a URL, as written, when it has user info.
pub fn userinfo(url: &Url) -> Option<String> {
    (!url.username().is_empty() || url.password().is_some())
        .then(|| format!("{}:{}", url.username(), url.password().unwrap_or_default()))
}

/// Starts HTTP/1.1 on `io`: the connection's I/O runs as its own task until the connection closes or
/// its last [`Sender`] is dropped.
async fn handshake<T>(io: T) -> Result<Sender, String>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (sender, connection) = http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}
