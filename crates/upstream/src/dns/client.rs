//! One DNS question to the configured nameservers: UDP, retried over TCP when the answer is truncated,
//! each nameserver in turn for `attempts` rounds.

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

/// What the nameservers said to one question.
#[derive(Debug)]
pub enum Reply {
    /// NOERROR: the answer section (possibly without a record of the type asked for) and additionals.
    Answer(Message),
    /// NXDOMAIN: the name does not exist at all.
    NoSuchName,
    /// No usable answer: every nameserver timed out, failed or refused.
    Failed,
}

/// Asks nameservers; stateless apart from the settings, so one is shared by every worker.
#[derive(Debug)]
pub struct Client {
    pub servers: Vec<SocketAddr>,
    pub timeout: Duration,
    pub attempts: usize,
}

impl Client {
    /// Asks `name` (fully qualified) for records of `kind`.
    pub async fn ask(&self, name: &Name, kind: RecordType) -> Reply {
        for _ in 0..self.attempts.max(1) {
            for server in &self.servers {
                match tokio::time::timeout(self.timeout, exchange(*server, name, kind)).await {
                    Ok(Ok(reply)) => match reply.response_code {
                        ResponseCode::NoError => return Reply::Answer(reply),
                        ResponseCode::NXDomain => return Reply::NoSuchName,
                        code => tracing::debug!(%server, %name, %code, "nameserver refused"),
                    },
                    Ok(Err(e)) => tracing::debug!(%server, %name, error = %e, "DNS query failed"),
                    Err(_) => tracing::debug!(%server, %name, "DNS query timed out"),
                }
            }
        }
        Reply::Failed
    }
}

/// One question to one server: over UDP, and again over TCP when the UDP answer is truncated.
async fn exchange(server: SocketAddr, name: &Name, kind: RecordType) -> std::io::Result<Message> {
    let id = query_id();
    let mut query = Message::new(id, MessageType::Query, OpCode::Query);
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name.clone(), kind));
    let wire = query.to_vec().map_err(std::io::Error::other)?;
    let reply = over_udp(server, &wire, id, name, kind).await?;
    match reply.truncation {
        false => Ok(reply),
        true => over_tcp(server, &wire).await,
    }
}

async fn over_udp(
    server: SocketAddr,
    wire: &[u8],
    id: u16,
    name: &Name,
    kind: RecordType,
) -> std::io::Result<Message> {
    let local: SocketAddr = match server {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => ([0u16; 8], 0).into(),
    };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(server).await?;
    socket.send(wire).await?;
    let mut buf = vec![0u8; 4096];
    loop {
        let n = socket.recv(&mut buf).await?;
        // Ignore anything that does not answer this very question (late or forged packets).
        let Ok(reply) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        let asked = reply
            .queries
            .first()
            .is_some_and(|q| q.query_type() == kind && q.name() == name);
        if reply.id == id && reply.message_type == MessageType::Response && asked {
            return Ok(reply);
        }
    }
}

async fn over_tcp(server: SocketAddr, wire: &[u8]) -> std::io::Result<Message> {
    let mut stream = TcpStream::connect(server).await?;
    let len = u16::try_from(wire.len()).map_err(std::io::Error::other)?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(wire).await?;
    let len = stream.read_u16().await? as usize;
    let mut buf = vec![0u8; len];
    stream.read_exact(&mut buf).await?;
    Message::from_vec(&buf).map_err(std::io::Error::other)
}

/// An unpredictable query id (with the kernel's random source port, the defence against forged answers).
fn query_id() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish() as u16
}
