//! L4 proxying, Kong's `stream_listen`: TCP and UDP listeners whose connections (or UDP clients) are routed
//! to `tcp` / `tls` / `tls_passthrough` / `udp` routes by address and TLS server name
//! (`sluice_router::stream`), then copied both ways to a target of the route's service.
//!
//! Per connection, in Kong's order:
//! 1. on an `ssl` listener, the ClientHello is read (not answered) to learn the server name
//!    ([`client_hello`]);
//! 2. route ([`compiled::Streams`]); no route closes the connection, as Kong's preread does;
//! 3. `preread` of the stream-capable plugins (ip-restriction: a refusal closes the connection);
//! 4. a `tls` route's TLS is terminated here with the config's certificates by SNI; a `tls_passthrough`
//!    route's bytes, the ClientHello included, go on untouched;
//! 5. balance and connect (`connect_timeout`, retries on another target, passive health), TLS to the
//!    target when the service's protocol is `tls`;
//! 6. bytes are copied both ways until either side closes or nothing moved for the service's
//!    `read_timeout` (a stalled write: `write_timeout`), as `sluice_upstream::tunnel` does for upgrades;
//! 7. `log`: the session's record goes to the log plugins that apply to its route and list its protocol
//!    (file-log, http-log, tcp-log, udp-log), and its prometheus series counts it ([`finish`]). Every
//!    session ends there, refused or unrouted ones included (then with nginx's stream status: 403, 500,
//!    502, 503).
//!
//! UDP ([`udp`]): a session per client address, with its own socket to the target; datagrams go both ways
//! until the session is idle for the service's `read_timeout`.
//!
//! Each worker binds every stream address with `SO_REUSEPORT`, like the HTTP listeners. Sessions read the
//! snapshot once, when they start: a reload does not touch open sessions.

mod client_hello;
mod compiled;
mod connect;
mod finish;
mod listen;

mod tcp;
mod udp;

pub(crate) use compiled::{is_http_less, is_stream, Streams};
pub use listen::{parse_stream_listen, StreamListen};

use crate::listen::Bind;
use crate::shared::Shared;
use std::sync::Arc;

/// One bound stream socket of a worker.
pub(crate) enum Bound {
    Tcp {
        socket: std::net::TcpListener,
        /// An `ssl` listener: the ClientHello is read and `tls` / `tls_passthrough` routes are served.
        ssl: bool,
    },
    Udp(std::net::UdpSocket),
}

impl Bound {
    pub(crate) fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match self {
            Bound::Tcp { socket, .. } => socket.local_addr(),
            Bound::Udp(socket) => socket.local_addr(),
        }
    }
}

/// Binds one stream address (`SO_REUSEPORT`, so every worker binds it; the first claims it, see [`Bind`]).
pub(crate) fn bind(listen: &StreamListen, how: Bind) -> std::io::Result<Bound> {
    match listen.udp {
        true => listen::bind_udp(listen, how).map(Bound::Udp),
        false => Ok(Bound::Tcp {
            socket: listen::bind_tcp(listen, how)?,
            ssl: listen.ssl,
        }),
    }
}

/// Starts a worker's stream listeners on its runtime; the tasks accept until aborted.
pub(crate) fn spawn(bound: Vec<Bound>, shared: &Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    let acceptor = shared
        .settings
        .default_certificate
        .as_ref()
        .and_then(|default| {
            crate::tls::acceptor(&shared.snapshot, default, false)
                .map_err(|e| tracing::error!(error = %e, "no TLS for the stream listeners"))
                .ok()
        });
    let mut tasks = Vec::new();
    for b in bound {
        let shared = shared.clone();
        match b {
            Bound::Tcp { socket, ssl } => match tokio::net::TcpListener::from_std(socket) {
                Ok(l) => {
                    let tls = ssl.then(|| acceptor.clone()).flatten();
                    tasks.push(tokio::spawn(tcp::accept_loop(l, ssl, tls, shared)))
                }
                Err(e) => tracing::error!(error = %e, "cannot register a stream listener"),
            },
            Bound::Udp(socket) => match tokio::net::UdpSocket::from_std(socket) {
                Ok(s) => tasks.push(tokio::spawn(udp::serve(s, shared))),
                Err(e) => tracing::error!(error = %e, "cannot register a UDP stream listener"),
            },
        }
    }
    tasks
}
