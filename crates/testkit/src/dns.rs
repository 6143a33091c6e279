//! A tiny authoritative DNS server over UDP on 127.0.0.1 for resolution tests: the test sets A, AAAA,
//! SRV and CNAME records (with TTLs) at any time, can make the server slow or silent, and reads how many
//! questions each name got.
//!
//! Unknown names get NXDOMAIN; a known name without records of the asked type gets an empty NOERROR
//! answer. Names are compared lower-case without the final dot.

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, CNAME, SRV};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Zone {
    /// name → its records (each with its own TTL).
    records: HashMap<String, Vec<Record>>,
    /// name → questions asked about it (any type).
    queries: HashMap<String, usize>,
    /// How long each answer is held back (each on its own thread, so answers overlap).
    delay: Duration,
}

/// The running server; stops when dropped.
pub struct DnsServer {
    addr: SocketAddr,
    zone: Arc<Mutex<Zone>>,
    silent: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DnsServer {
    /// Binds 127.0.0.1 on an ephemeral port and serves on its own thread.
    pub fn start() -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind DNS socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("read timeout");
        let addr = socket.local_addr().expect("local addr");
        let zone = Arc::new(Mutex::new(Zone::default()));
        let (silent, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let thread = {
            let (zone, silent, stop) = (zone.clone(), silent.clone(), stop.clone());
            std::thread::spawn(move || serve(socket, zone, silent, stop))
        };
        DnsServer {
            addr,
            zone,
            silent,
            stop,
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the A records of `name`.
    pub fn set_a(&self, name: &str, ips: &[Ipv4Addr], ttl: u32) {
        self.set(
            name,
            RecordType::A,
            ips.iter().map(|ip| RData::A(A(*ip))),
            ttl,
        );
    }

    /// Replaces the AAAA records of `name`.
    pub fn set_aaaa(&self, name: &str, ips: &[Ipv6Addr], ttl: u32) {
        self.set(
            name,
            RecordType::AAAA,
            ips.iter().map(|ip| RData::AAAA(AAAA(*ip))),
            ttl,
        );
    }

    /// Replaces the SRV records of `name`: `(priority, weight, port, target)` each.
    pub fn set_srv(&self, name: &str, records: &[(u16, u16, u16, &str)], ttl: u32) {
        let data = records
            .iter()
            .map(|(p, w, port, target)| RData::SRV(SRV::new(*p, *w, *port, fqdn(target))));
        self.set(name, RecordType::SRV, data, ttl);
    }

    /// Makes `name` a CNAME of `target`.
    pub fn set_cname(&self, name: &str, target: &str, ttl: u32) {
        let data = std::iter::once(RData::CNAME(CNAME(fqdn(target))));
        self.set(name, RecordType::CNAME, data, ttl);
    }

    /// Forgets `name` entirely (it gets NXDOMAIN from now on).
    pub fn remove(&self, name: &str) {
        self.zone.lock().unwrap().records.remove(&key(name));
    }

    /// While silent, the server reads questions and answers none of them.
    pub fn set_silent(&self, silent: bool) {
        self.silent.store(silent, Ordering::SeqCst);
    }

    /// Holds every answer back for `delay` from now on.
    pub fn set_delay(&self, delay: Duration) {
        self.zone.lock().unwrap().delay = delay;
    }

    /// How many questions (of any type) `name` got so far.
    pub fn queries(&self, name: &str) -> usize {
        self.zone
            .lock()
            .unwrap()
            .queries
            .get(&key(name))
            .copied()
            .unwrap_or(0)
    }

    fn set(&self, name: &str, kind: RecordType, data: impl Iterator<Item = RData>, ttl: u32) {
        let owner = fqdn(name);
        let mut zone = self.zone.lock().unwrap();
        let records = zone.records.entry(key(name)).or_default();
        records.retain(|r| r.record_type() != kind);
        records.extend(data.map(|d| Record::from_rdata(owner.clone(), ttl, d)));
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn fqdn(name: &str) -> Name {
    let mut n = Name::from_ascii(name).unwrap_or_else(|e| panic!("bad DNS name {name}: {e}"));
    n.set_fqdn(true);
    n
}

fn serve(
    socket: UdpSocket,
    zone: Arc<Mutex<Zone>>,
    silent: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) {
    let mut buf = [0u8; 1500];
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let Ok(query) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        let (reply, delay) = {
            let mut zone = zone.lock().unwrap();
            (answer(&query, &mut zone), zone.delay)
        };
        if silent.load(Ordering::SeqCst) {
            continue;
        }
        let Ok(wire) = reply.to_vec() else {
            continue;
        };
        match (delay.is_zero(), socket.try_clone()) {
            (false, Ok(socket)) => {
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    let _ = socket.send_to(&wire, from);
                });
            }
            _ => {
                let _ = socket.send_to(&wire, from);
            }
        }
    }
}

fn answer(query: &Message, zone: &mut Zone) -> Message {
    let mut reply = Message::new(query.id, MessageType::Response, query.op_code);
    reply.metadata.authoritative = true;
    reply.metadata.recursion_desired = query.recursion_desired;
    let Some(q) = query.queries.first() else {
        reply.metadata.response_code = ResponseCode::FormErr;
        return reply;
    };
    reply.add_query(q.clone());
    let name = key(&q.name().to_ascii());
    *zone.queries.entry(name.clone()).or_default() += 1;
    match zone.records.get(&name) {
        None => reply.metadata.response_code = ResponseCode::NXDomain,
        Some(records) => {
            for r in records.iter().filter(|r| r.record_type() == q.query_type()) {
                reply.add_answer(r.clone());
            }
        }
    }
    reply
}
