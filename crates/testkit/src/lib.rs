//! Test kit for Sluice's integration tests: a real echo upstream, a WebSocket echo upstream, misbehaving servers, a DNS server, a log
//! sink, a launcher for the real `sluice` binary, an HTTP client and a bounded load loop. Everything binds
//! 127.0.0.1 on ephemeral ports and cleans up on drop; servers run on their own threads, so any test runtime
//! (or none) can use them. [`Lan`] makes separate hosts (network namespaces) for cluster tests.

mod dns;
mod echo;
mod flaky;
mod gateway;
mod grpc;
mod h2raw;
mod load;
mod netns;
mod nginx;
mod pg;
mod recorder;
mod relay;
mod sink;
mod stream;
mod tls;
mod verdicts;
mod websocket;

pub use dns::DnsServer;
pub use echo::{closed_port, unused_port, EchoUpstream, SilentServer};
pub use flaky::{FlakyUpstream, Mode};
pub use gateway::{Gateway, GatewayBuilder};
pub use grpc::{Code, GrpcClient, GrpcRequest, GrpcUpstream, Msg};
pub use h2raw::{h2_request, H2Answer};
pub use load::{LoadLoop, LoadStats};
pub use netns::{Host, Lan};
pub use nginx::NginxPeer;
pub use pg::{pg_server, psql, psql_command, PgRelay, TestDb};
pub use recorder::{Received, Recorder};
pub use relay::TcpRelay;
pub use sink::{LogSink, SinkRequest};
pub use stream::{free_tcp_port, free_udp_port, TcpLineEcho, UdpEcho};
pub use tls::{
    handshake, handshake_with, https_client, insecure_client, self_signed, Handshake, TestCa,
    TestCert, TlsEchoUpstream, X509_V1_CERT, X509_V1_KEY,
};
pub use verdicts::Verdicts;
pub use websocket::{WsEchoUpstream, WsHandshake};

/// A client for tests: no proxy from the environment, HTTP/1.1.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_idle_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("building a reqwest client")
}

/// A GET with extra request headers: the status, the response headers and the JSON body (`null` when the
/// body is not JSON). Panics when no response arrives — tests that expect a transport error use [`client`].
pub async fn get_json(
    url: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let mut req = client().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (
        status,
        headers,
        resp.json().await.unwrap_or(serde_json::Value::Null),
    )
}

/// An Admin API call with a JSON body (or none): the status and the JSON answer (`null` when none).
pub async fn send_json(
    method: &str,
    url: &str,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut req = client().request(method.clone(), url);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(serde_json::Value::Null))
}

/// The status of a GET with one extra request header (e.g. a rate-limited tenant's), 0 when no response.
pub async fn status_with(url: String, header: &'static str, value: String) -> u16 {
    client()
        .get(url)
        .header(header, value)
        .send()
        .await
        .map_or(0, |r| r.status().as_u16())
}

/// Seconds left in the current UTC hour (tests of hourly limits wait past an hour's end).
pub fn seconds_left_in_hour() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    3600 - now % 3600
}

/// A client that speaks HTTP/2 without TLS (h2c, prior knowledge).
pub fn h2c_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .expect("building a reqwest client")
}
