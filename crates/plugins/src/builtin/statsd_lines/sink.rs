//! Where a batch of samples goes: its lines written by the plugin's [`Format`], then sent to the StatsD
//! server, on the `sluice-log` thread.
//!
//! UDP (Kong's default): one socket, opened (and the host resolved) at the first batch and again after a
//! send error, non-blocking, so a dead or slow receiver costs a refused datagram and nothing else. With
//! `udp_packet_size` 0 every line is its own datagram; otherwise lines are joined by `\n` into datagrams as
//! Kong's logger does (see [`packets`]). A delivery's datagrams go out in few `sendmmsg` calls
//! ([`send_each`]), still one datagram each and in order. As in Kong, a failed send is logged and the
//! batch counts as delivered; only a host that does not resolve fails the batch (the queue retries it).
//!
//! TCP (`use_tcp`): one connection kept between batches (Kong's keepalive pool), each line followed by
//! `\n`; connecting (1 s timeout, as Kong) fails the batch, a failed write is logged and drops the
//! connection.

use super::{Format, Lines, Sample};
use crate::logging::queue::Sink;
use crate::logging::sendmmsg::send_each;
use bytes::Bytes;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Kong's socket timeout for the TCP connection (connect and send).
const TCP_TIMEOUT: Duration = Duration::from_secs(1);

/// How lines reach the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transport {
    /// Datagrams of up to `packet_size` bytes (0: one line per datagram).
    Udp {
        packet_size: f64,
    },
    Tcp,
}

/// A queue's sink for the metric plugins.
pub struct MetricSink<F> {
    format: F,
    host: String,
    port: u16,
    transport: Transport,
    udp: Mutex<Option<UdpSocket>>,
    tcp: tokio::sync::Mutex<Option<TcpStream>>,
    /// Seconds since the epoch of the last send-failure warning (one every 10 s at most).
    last_warn: AtomicU64,
    warned_packet_size: AtomicBool,
    /// Line buffers kept from one delivery to the next.
    spare: Mutex<Lines>,
}

impl<F: Format> MetricSink<F> {
    pub fn new(format: F, host: String, port: u16, transport: Transport) -> MetricSink<F> {
        MetricSink {
            format,
            host,
            port,
            transport,
            udp: Mutex::new(None),
            tcp: tokio::sync::Mutex::new(None),
            last_warn: AtomicU64::new(0),
            warned_packet_size: AtomicBool::new(false),
            spare: Mutex::default(),
        }
    }

    /// `host:port`, naming the queue in warnings.
    pub fn target(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Writes the lines of a batch, in the order of its samples, into `lines` (emptied first, its buffers
    /// kept).
    fn write_lines(&self, batch: &[Bytes], lines: &mut Lines) {
        // Kong's default metrics make up to 13 lines per request, most under 64 bytes.
        lines.clear_for(batch.len() * 16, 64);
        for record in batch {
            if let Some(sample) = Sample::unpack(record) {
                self.format.write(&sample, lines);
            }
        }
    }

    async fn resolve(&self) -> Result<SocketAddr, String> {
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, self.port));
        }
        let failed = |e: String| format!("failed to resolve {}: {e}", self.target());
        tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| failed(e.to_string()))?
            .next()
            .ok_or_else(|| failed("no address".into()))
    }

    async fn send_udp(&self, lines: &Lines, packet_size: f64) -> Result<(), String> {
        let open = self.udp.lock().unwrap_or_else(|p| p.into_inner()).is_some();
        if !open {
            let socket = open_udp(self.resolve().await?)
                .map_err(|e| format!("failed to connect to {}: {e}", self.target()))?;
            *self.udp.lock().unwrap_or_else(|p| p.into_inner()) = Some(socket);
        }
        let mut guard = self.udp.lock().unwrap_or_else(|p| p.into_inner());
        let Some(socket) = guard.as_ref() else {
            return Ok(());
        };
        let mut datagrams = Vec::with_capacity(lines.len());
        let oversized = packets(lines, packet_size, |datagram| datagrams.push(datagram));
        let failure = send_each(socket, &datagrams);
        if oversized && !self.warned_packet_size.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "statsd: configured udp_packet_size is smaller than a single metric line; such lines are sent alone"
            );
        }
        if let Some(e) = failure {
            // A refused or full socket stays usable; anything else gets a new socket next time.
            if !matches!(
                e.kind(),
                ErrorKind::ConnectionRefused | ErrorKind::WouldBlock
            ) {
                *guard = None;
            }
            self.warn_failed(&e.to_string());
        }
        Ok(())
    }

    async fn send_tcp(&self, lines: &Lines) -> Result<(), String> {
        let mut conn = self.tcp.lock().await;
        if conn.as_ref().is_some_and(closed) {
            *conn = None;
        }
        if conn.is_none() {
            let connect = TcpStream::connect((self.host.as_str(), self.port));
            let stream = match tokio::time::timeout(TCP_TIMEOUT, connect).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return Err(format!("failed to connect to {}: {e}", self.target())),
                Err(_) => return Err(format!("failed to connect to {}: timeout", self.target())),
            };
            *conn = Some(stream);
        }
        let Some(stream) = conn.as_mut() else {
            return Ok(());
        };
        let error = match tokio::time::timeout(TCP_TIMEOUT, stream.write_all(lines.all())).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "timeout".to_string(),
        };
        *conn = None;
        self.warn_failed(&error);
        Ok(())
    }

    /// Logs a failed send, at most once every 10 seconds.
    fn warn_failed(&self, error: &str) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.last_warn.load(Ordering::Relaxed);
        if now >= last + 10 && self.last_warn.swap(now, Ordering::Relaxed) == last {
            tracing::warn!(target_addr = %self.target(), %error, "failed to send metrics");
        }
    }
}

impl<F: Format> Sink for MetricSink<F> {
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        // The last delivery's buffers (empty when another delivery holds them, with `concurrency_limit`
        // -1): most batches are one request (Kong's default `max_batch_size`), and two fresh buffers
        // for each cost more than writing its lines.
        let mut lines = std::mem::take(&mut *self.spare.lock().unwrap_or_else(|p| p.into_inner()));
        self.write_lines(batch, &mut lines);
        let sent = match (lines.is_empty(), self.transport) {
            (true, _) => Ok(()),
            (false, Transport::Udp { packet_size }) => self.send_udp(&lines, packet_size).await,
            (false, Transport::Tcp) => self.send_tcp(&lines).await,
        };
        *self.spare.lock().unwrap_or_else(|p| p.into_inner()) = lines;
        sent
    }

    /// Lines sent one per datagram, or on a TCP stream, are the same whether the samples of several
    /// requests are delivered together or one by one; packed datagrams are cut per delivery, as Kong's
    /// are, so those keep the configured batches.
    fn merges_up_to(&self) -> usize {
        match self.transport {
            Transport::Udp { packet_size } if packet_size > 0.0 => 1,
            _ => MERGED_SAMPLES,
        }
    }
}

/// Samples one delivery takes of those already waiting (see [`Sink::merges_up_to`]).
const MERGED_SAMPLES: usize = 256;

/// A non-blocking UDP socket connected to `addr`.
fn open_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => ([0u16; 8], 0).into(),
    };
    let socket = UdpSocket::bind(local)?;
    socket.connect(addr)?;
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// Whether the server closed a kept connection (EOF, or an error, on a read that does not wait).
fn closed(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.try_read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

/// Calls `send` with each datagram of `lines`: one per line when `packet_size` is 0, otherwise runs of
/// lines joined by `\n`, cut as Kong's logger cuts them. Kong counts a datagram's size as its lines plus
/// one separator each, except right after a datagram was cut, where the line that started the next one
/// is counted without its separator (so a datagram may exceed `packet_size` by one byte, as in Kong).
/// A line longer than `packet_size` goes alone. True when such a line was seen.
pub fn packets<'a>(lines: &'a Lines, packet_size: f64, mut send: impl FnMut(&'a [u8])) -> bool {
    if packet_size <= 0.0 {
        (0..lines.len()).for_each(|i| send(lines.span(i, i)));
        return false;
    }
    let (mut first, mut size, mut oversized) = (0, 0.0, false);
    for i in 0..lines.len() {
        let len = lines.span(i, i).len() as f64;
        if size + len > packet_size {
            if size == 0.0 {
                oversized = true;
            } else {
                send(lines.span(first, i - 1));
            }
            (first, size) = (i, len);
        } else {
            if size == 0.0 {
                first = i;
            }
            size += len + 1.0;
        }
    }
    if size > 0.0 {
        send(lines.span(first, lines.len() - 1));
    }
    oversized
}
