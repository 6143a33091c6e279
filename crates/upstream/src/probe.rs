//! One probe of one target: a TCP connect, an HTTP(S) `GET http_path` whose status is the result, or a
//! call of the gRPC health service ([`grpc`], `type: grpc` / `grpcs`).

mod grpc;

use crate::balancer::Peer;
use crate::error::UpstreamError;
use crate::health::active::{Kind, Spec};
use crate::health::Failure;
use crate::lines::field;
use crate::pool::{self, PoolKey, TlsTarget};
use crate::tls::UpstreamTls;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The status of the response (0 for a TCP probe that connected or a gRPC target serving), or the kind
/// of failure.
pub async fn run(spec: &Spec, peer: &Peer) -> Result<u16, Failure> {
    let addr = peer.resolve().await.map_err(|_| Failure::Tcp)?;
    match tokio::time::timeout(spec.timeout, attempt(spec, peer, addr)).await {
        Err(_) => Err(Failure::Timeout),
        Ok(result) => result,
    }
}

async fn attempt(spec: &Spec, peer: &Peer, addr: std::net::SocketAddr) -> Result<u16, Failure> {
    let tls = match spec.kind {
        Kind::Tcp => {
            return tokio::net::TcpStream::connect(addr)
                .await
                .map(|_| 0)
                .map_err(|_| Failure::Tcp)
        }
        Kind::Http | Kind::Grpc => None,
        Kind::Https { verify } | Kind::Grpcs { verify } => {
            Some(client(verify).ok_or(Failure::Tcp)?)
        }
    };
    let host = peer.host_header.to_str().unwrap_or(&peer.host);
    let sni = spec
        .https_sni
        .clone()
        .unwrap_or_else(|| crate::forward::bare_host(host).to_string());
    let target = tls.as_ref().map(|tls| TlsTarget {
        tls,
        server_name: &sni,
    });
    // A key no request uses: probes never share connections with traffic.
    let key = PoolKey {
        addr,
        tls: u64::MAX,
    };
    if matches!(spec.kind, Kind::Grpc | Kind::Grpcs { .. }) {
        return grpc::check(spec, peer, key, target).await;
    }
    let mut conn = pool::checkout(key, target, spec.timeout, Instant::now())
        .await
        .map_err(|e| match e {
            UpstreamError::Timeout => Failure::Timeout,
            _ => Failure::Tcp,
        })?;
    let path = &spec.http_path;
    if !path.starts_with('/') || !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Failure::Http);
    }
    let mut lines = Vec::with_capacity(256);
    lines.extend_from_slice(b"GET ");
    lines.extend_from_slice(path.as_bytes());
    lines.extend_from_slice(b" HTTP/1.1\r\n");
    field(&mut lines, "host", peer.host_header.as_bytes());
    for (name, value) in &spec.headers {
        field(&mut lines, name.as_str(), value.as_bytes());
    }
    lines.extend_from_slice(b"\r\n");
    let head = conn
        .exchange_head(&lines, false)
        .await
        .map_err(|_| Failure::Tcp)?;
    Ok(head.status.as_u16())
}

/// The client TLS settings of probes (system roots when verifying), built once per process. Their keys
/// are none a service's settings get, and differ by `verify` (the HTTP/2 connector keeps a config with
/// ALPN `h2` per key).
fn client(verify: bool) -> Option<UpstreamTls> {
    static CONFIGS: OnceLock<[Option<Arc<sluice_tls::rustls::ClientConfig>>; 2]> = OnceLock::new();
    let configs = CONFIGS.get_or_init(|| {
        [false, true].map(|verify| {
            let spec = sluice_tls::UpstreamTls {
                verify,
                ..Default::default()
            };
            sluice_tls::client_config(&spec).ok()
        })
    });
    let config = configs[usize::from(verify)].clone()?;
    Some(UpstreamTls {
        config,
        key: u64::MAX - 1 - u64::from(verify),
    })
}
