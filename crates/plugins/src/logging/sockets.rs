//! What the socket log plugins (`tcp-log`, `udp-log`, `syslog`, `loggly`) share: Kong's `host` and `port`
//! field types, the queue settings of plugins that Kong sends without a queue, and [`DatagramSink`], which
//! sends every record as one datagram (UDP, or a unix datagram socket such as `/dev/log`), framed by the
//! plugin. Sinks run on the `sluice-log` thread; proxy workers only queue records.

#[cfg(test)]
mod tests;

use super::queue::{secs, QueueConfig, Sink};
use bytes::Bytes;
use serde_json::Value;
use sluice_model::schema::Field;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::{UdpSocket, UnixDatagram};

/// Kong's `typedefs.host`: a host name, an IPv4 or an IPv6 address (bracketed or not), without a port.
pub fn host() -> Field {
    Field::string().check(check_host)
}

/// Kong's `typedefs.port`: an integer from 0 to 65535.
pub fn port() -> Field {
    Field::integer().between(0.0, 65535.0)
}

/// Kong's host validator, with its messages: `invalid value: <host>`, or `must not have a port`.
fn check_host(v: &Value) -> Result<(), String> {
    let host = v.as_str().unwrap_or_default();
    match parse_host(host) {
        Some(false) => Ok(()),
        Some(true) => Err("must not have a port".into()),
        None => Err(format!("invalid value: {host}")),
    }
}

/// Reads `host` as Kong's `normalize_ip` does: None when invalid, else whether it carries a port (a port
/// above 65535 counts as one, as Kong's "invalid port number" leads to the same message).
fn parse_host(host: &str) -> Option<bool> {
    let colons = host.matches(':').count();
    if colons > 1 {
        return ipv6_has_port(host);
    }
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (name, true)
        }
        Some(_) => return None,
        None => (host, false),
    };
    if host
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.' || b == b':')
    {
        // Kong takes digits and dots as an IPv4 address: each part 1 to 3 digits, at most 255.
        let parts: Vec<&str> = name.split('.').collect();
        let octet = |p: &&str| (1..=3).contains(&p.len()) && p.parse::<u8>().is_ok();
        return (parts.len() == 4 && parts.iter().all(octet)).then_some(port);
    }
    let chars_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    let labels: Vec<&str> = name.split('.').collect();
    let labels_ok = labels
        .iter()
        .enumerate()
        .all(|(i, l)| !l.ends_with('-') && (!l.is_empty() || i + 1 == labels.len()));
    (chars_ok && labels_ok).then_some(port)
}

/// An IPv6 address, `[addr]` or `[addr]:port`.
fn ipv6_has_port(host: &str) -> Option<bool> {
    let (addr, port) = match host.strip_prefix('[') {
        Some(rest) => {
            let (addr, after) = rest.split_once(']')?;
            match after.strip_prefix(':') {
                Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => (addr, true),
                Some(_) => return None,
                None if after.is_empty() => (addr, false),
                None => return None,
            }
        }
        None => (host, false),
    };
    // Kong's pattern takes eight hex groups after expanding `::`; no embedded IPv4.
    (!addr.contains('.') && addr.parse::<Ipv6Addr>().is_ok()).then_some(port)
}

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
    fn name(&self) -> String {
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
                let addr = tokio::net::lookup_host((host.as_str(), *port))
                    .await?
                    .next()
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

    /// The peer, for warnings.
    pub fn name(&self) -> String {
        self.peer.name()
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

/// Parses a config holding plugin `name` with `config` (a YAML flow mapping), for the socket plugins'
/// schema tests: the model, or every error as `field: message`, joined by `; `.
#[cfg(test)]
pub(crate) fn parse_plugin(name: &str, config: &str) -> Result<sluice_model::Config, String> {
    let yaml = format!("_format_version: \"3.0\"\nplugins:\n- name: {name}\n  config: {config}\n");
    sluice_model::declarative::parse(&yaml, &crate::Registry::builtin()).map_err(|e| {
        let fields = e.entities.iter().flat_map(|x| &x.errors);
        let lines: Vec<String> = fields
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect();
        lines.join("; ")
    })
}
