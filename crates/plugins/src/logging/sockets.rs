//! What the socket log plugins (`tcp-log`, `udp-log`, `syslog`, `loggly`) share: the queue settings of
//! plugins that Kong sends without a queue, and [`DatagramSink`], which
//! sends every record as one datagram (UDP, or a unix datagram socket such as `/dev/log`), framed by the
//! plugin. Sinks run on the `sluice-log` thread; proxy workers only queue records. Their `host` and
//! `port` fields are in [`super::address`].

#[cfg(test)]
mod tests;

use super::queue::{secs, Queue, QueueConfig, Sink};
use super::runtime;
use crate::registry::BuildCtx;
use bytes::Bytes;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{UdpSocket, UnixDatagram};

/// Queue settings for plugins that have no `queue` in Kong (each record is sent on its own timer there):
/// whatever is waiting goes out at once, up to 1,000 records per delivery, up to 10,000 waiting, and no
/// retry — as in Kong, a record that could not be sent is lost (and logged).
pub fn unqueued() -> QueueConfig {
    QueueConfig {
        max_batch_size: 1000,
        max_coalescing_delay: 0.0,
        max_retry_time: -1.0,
        ..QueueConfig::default()
    }
}

/// The queue of a socket plugin's instance: instances with the same `key` share one (and a reload with
/// the same settings keeps it); when there is none, one starts with [`unqueued`] settings and the sink
/// `make` builds. `name` identifies the receiver in warnings.
pub fn shared_queue<S: Sink>(
    ctx: &BuildCtx<'_>,
    plugin: &'static str,
    key: String,
    name: String,
    make: impl FnOnce() -> Result<S, String>,
) -> Result<Arc<Queue>, String> {
    ctx.state.log_queues().get_or_start(key, || {
        let handle = runtime::handle()?;
        Ok(Queue::start(plugin, name, unqueued(), make()?, handle))
    })
}

/// Kong's millisecond settings (`timeout`, `keepalive`) as a duration.
pub fn millis(ms: f64) -> Duration {
    secs(ms / 1000.0)
}

/// Where datagrams go.
pub enum Peer {
    /// A UDP `host:port`; the host is resolved for every delivery.
    Udp { host: String, port: u16 },
    /// A unix datagram socket (the local syslog).
    Unix(PathBuf),
}

impl Peer {
    pub fn udp(host: &str, port: u16) -> Peer {
        Peer::Udp {
            host: host.to_string(),
            port,
        }
    }

    /// The receiver, for warnings.
    pub fn name(&self) -> String {
        match self {
            Peer::Udp { host, port } => format!("{host}:{port}"),
            Peer::Unix(path) => path.display().to_string(),
        }
    }
}

/// A socket connected to a [`Peer`].
enum Socket {
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

impl Socket {
    async fn open(peer: &Peer) -> std::io::Result<Socket> {
        match peer {
            Peer::Udp { host, port } => {
                // IPv4 first, as Kong's default `dns_order` asks for A records before anything else.
                let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), *port))
                    .await?
                    .collect();
                let addr = *addrs
                    .iter()
                    .find(|a| a.is_ipv4())
                    .or(addrs.first())
                    .ok_or_else(|| std::io::Error::other("no address"))?;
                let local: SocketAddr = match addr {
                    SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
                    SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
                };
                let socket = UdpSocket::bind(local).await?;
                socket.connect(addr).await?;
                Ok(Socket::Udp(socket))
            }
            Peer::Unix(path) => {
                let socket = UnixDatagram::unbound()?;
                socket.connect(path)?;
                Ok(Socket::Unix(socket))
            }
        }
    }

    async fn send(&self, datagram: &[u8]) -> std::io::Result<usize> {
        match self {
            Socket::Udp(s) => s.send(datagram).await,
            Socket::Unix(s) => s.send(datagram).await,
        }
    }
}

/// Sends each record of a batch as one datagram, made by `frame` (record in, datagram appended to the
/// buffer). A socket is opened per batch, as Kong opens one per record.
pub struct DatagramSink<F> {
    peer: Peer,
    /// Bound on resolving the host and on each send.
    timeout: Duration,
    frame: F,
}

impl<F> DatagramSink<F>
where
    F: Fn(&[u8], &mut Vec<u8>) + Send + Sync + 'static,
{
    pub fn new(peer: Peer, timeout: Duration, frame: F) -> DatagramSink<F> {
        DatagramSink {
            peer,
            timeout,
            frame,
        }
    }
}

impl<F> Sink for DatagramSink<F>
where
    F: Fn(&[u8], &mut Vec<u8>) + Send + Sync + 'static,
{
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let name = || self.peer.name();
        let socket = tokio::time::timeout(self.timeout, Socket::open(&self.peer))
            .await
            .map_err(|_| format!("could not connect to {}: timeout", name()))?
            .map_err(|e| format!("could not connect to {}: {e}", name()))?;
        let mut datagram = Vec::with_capacity(batch.first().map_or(0, |r| r.len() + 256));
        let mut failed = 0;
        let mut first_error = None;
        // Every record gets its own send: one refused does not keep the others from being sent, but
        // a peer that takes nothing for `timeout` gets nothing more of this batch.
        for (i, record) in batch.iter().enumerate() {
            datagram.clear();
            (self.frame)(record, &mut datagram);
            match tokio::time::timeout(self.timeout, socket.send(&datagram)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    failed += 1;
                    first_error.get_or_insert(e.to_string());
                }
                Err(_) => {
                    failed += batch.len() - i;
                    first_error.get_or_insert("timeout".to_string());
                    break;
                }
            }
        }
        match first_error {
            None => Ok(()),
            Some(e) => Err(format!(
                "could not send {failed} of {} records to {}: {e}",
                batch.len(),
                name()
            )),
        }
    }
}
