//! TCP stream sessions: accept, read the ClientHello on `ssl` listeners, route, run ip-restriction,
//! terminate or pass TLS through, connect, copy bytes both ways, and end in the log phase.

use super::client_hello::{self, Hello};
use super::connect::{self, Kind, Opened};
use super::finish::Session;
use crate::rewind::Rewind;
use crate::shared::Shared;
use crate::snapshot::{ServiceInfo, Snapshot};
use sluice_router::stream::{StreamParts, StreamProtocols};
use sluice_upstream::tunnel::{self, Timeouts};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

/// How long a client may take to send its ClientHello (nginx's `preread_timeout`).
const PREREAD_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) async fn accept_loop(
    listener: TcpListener,
    ssl: bool,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "stream accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (tls, shared) = (tls.clone(), shared.clone());
        tokio::spawn(async move {
            let local = match stream.local_addr() {
                Ok(a) => a,
                Err(_) => return,
            };
            match ssl {
                false => session(stream, peer, local, None, None, &shared).await,
                true => {
                    let read = tokio::time::timeout(PREREAD_TIMEOUT, read_hello(stream)).await;
                    let Ok(Some((stream, hello, sni))) = read else {
                        tracing::debug!(%peer, "no TLS ClientHello on a stream ssl listener");
                        return;
                    };
                    let client = Rewind::new(hello, stream);
                    session(client, peer, local, Some(sni), tls, &shared).await
                }
            }
        });
    }
}

/// Reads until a whole ClientHello is in; the bytes read and its server name (None: the hello had none).
async fn read_hello(mut stream: TcpStream) -> Option<(TcpStream, Vec<u8>, Option<String>)> {
    let mut buf = Vec::with_capacity(2048);
    loop {
        match client_hello::parse(&buf) {
            Hello::Done(sni) => return Some((stream, buf, sni)),
            Hello::NotTls => return None,
            Hello::More if buf.len() > client_hello::MAX_HELLO + 1024 => return None,
            Hello::More => {}
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// One session on the snapshot live when it started. `tls` is Some on `ssl` listeners: then `sni` is
/// Some (holding the ClientHello's name, if any) and the route decides termination or passthrough. When
/// it ends, its log plugins and metrics run ([`Session::finish`]).
async fn session<C>(
    client: C,
    peer: SocketAddr,
    local: SocketAddr,
    sni: Option<Option<String>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: &Shared,
) where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let snapshot: Arc<Snapshot> = shared.snapshot.load_full();
    let protocol = match sni.is_some() {
        true => StreamProtocols::TLS,
        false => StreamProtocols::TCP,
    };
    let mut s = Session::new(peer, local, protocol);
    run(&mut s, client, sni, tls, &snapshot).await;
    s.finish(&snapshot);
}

/// Routes the session, runs ip-restriction, terminates its TLS when the route says so, connects and
/// copies; what happened (route, protocol, status, TLS, tries, bytes) goes into `s`.
async fn run<C>(
    s: &mut Session,
    client: C,
    sni: Option<Option<String>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    snapshot: &Snapshot,
) where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (peer, ssl) = (s.peer, sni.is_some());
    let sni = sni.flatten();
    let accepts = match ssl {
        true => StreamProtocols::TLS.union(StreamProtocols::TLS_PASSTHROUGH),
        false => StreamProtocols::TCP,
    };
    let parts = StreamParts {
        accepts,
        source: peer,
        destination: s.local,
        sni: sni.as_deref(),
    };
    let Some(found) = snapshot.streams.router.find(&parts) else {
        tracing::info!(%peer, local = %s.local, ?sni, "no stream route found with those values");
        return;
    };
    s.route = Some(found);
    let route = &snapshot.streams.routes[found];
    s.protocol = match (ssl, route.terminate) {
        (false, _) => StreamProtocols::TCP,
        (true, true) => StreamProtocols::TLS,
        (true, false) => StreamProtocols::TLS_PASSTHROUGH,
    };
    if route.refuses(s.protocol, peer.ip()) {
        tracing::info!(%peer, "stream connection refused by ip-restriction");
        s.status = 403;
        return;
    }
    let Some(svc) = route.service.and_then(|i| snapshot.services.get(i)) else {
        tracing::warn!(%peer, "the stream route has no service");
        s.status = 503;
        return;
    };
    let client_sni = sni.as_deref().filter(|_| route.preserve_host);
    if !(ssl && route.terminate) {
        return proxy(s, client, svc, client_sni).await;
    }
    let Some(acceptor) = tls else { return };
    match tokio::time::timeout(PREREAD_TIMEOUT, acceptor.accept(client)).await {
        Ok(Ok(stream)) => {
            s.tls = sluice_tls::Negotiated::of(stream.get_ref().1);
            proxy(s, stream, svc, client_sni).await
        }
        _ => {
            tracing::debug!(%peer, "stream TLS handshake failed");
            s.status = 400;
        }
    }
}

/// Connects to a target of `svc` and copies bytes both ways until the session ends.
async fn proxy<C>(s: &mut Session, client: C, svc: &ServiceInfo, client_sni: Option<&str>)
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let peer = s.peer;
    let kind = Kind::Tcp { client_sni };
    let Some(Opened::Tcp(conn)) = connect::open(svc, peer.ip(), kind, &mut s.tries).await else {
        tracing::warn!(%peer, "no stream target could be connected");
        s.status = 502;
        return;
    };
    let timeouts = Timeouts {
        idle: svc.read_timeout,
        write: svc.write_timeout,
    };
    let moved = tunnel::run(client, conn, timeouts).await;
    (s.status, s.from_client, s.to_client) = (200, moved.to_upstream, moved.to_client);
    tracing::debug!(%peer, up = moved.to_upstream, down = moved.to_client, end = ?moved.end, "stream session closed");
}
