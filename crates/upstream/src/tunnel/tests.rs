//! The tunnel over real loopback sockets (the upstream side) and an in-memory pipe (the client side).

use super::*;
use crate::conn::{PoolKey, Stream};
use bytes::BytesMut;
use half::Half;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::{TcpListener, TcpStream};

/// An upstream connection as the pool would hand it out, with `behind_head` already read after the 101,
/// and the upstream's end of it.
async fn upstream_pair(behind_head: &[u8]) -> (Conn, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (ours, theirs) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let conn = Conn {
        stream: Stream::Plain(ours.unwrap()),
        buf: BytesMut::from(behind_head),
        key: PoolKey { addr, tls: 0 },
        served: 0,
        upgrade: true,
        deadline: Default::default(),
    };
    (conn, theirs.unwrap().0)
}

fn timeouts(idle_ms: u64, write_ms: u64) -> Timeouts {
    Timeouts {
        idle: Duration::from_millis(idle_ms),
        write: Duration::from_millis(write_ms),
    }
}

async fn read_exactly(s: &mut (impl AsyncReadExt + Unpin), n: usize) -> Vec<u8> {
    let mut out = vec![0; n];
    s.read_exact(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn copies_both_ways_and_ends_when_the_upstream_closes() {
    let (conn, mut upstream) = upstream_pair(b"early").await;
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let tunnel = tokio::spawn(run(client, conn, timeouts(5_000, 5_000)));
    // What came behind the 101 reaches the client first.
    assert_eq!(read_exactly(&mut peer, 5).await, b"early");
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let (_, got) = tokio::join!(
        async { peer.write_all(&big).await.unwrap() },
        read_exactly(&mut upstream, big.len())
    );
    assert_eq!(got, big);
    upstream.write_all(b"pong").await.unwrap();
    assert_eq!(read_exactly(&mut peer, 4).await, b"pong");
    drop(upstream);
    let moved = tunnel.await.unwrap();
    assert_eq!(moved.end, End::Upstream);
    assert_eq!((moved.to_upstream, moved.to_client), (200_000, 9));
    // The client's side was shut down.
    let mut rest = Vec::new();
    peer.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn ends_when_the_client_closes_after_its_bytes_went_upstream() {
    let (conn, mut upstream) = upstream_pair(b"").await;
    let (client, mut peer) = tokio::io::duplex(1024);
    let tunnel = tokio::spawn(run(client, conn, timeouts(5_000, 5_000)));
    peer.write_all(b"bye").await.unwrap();
    drop(peer);
    let moved = tunnel.await.unwrap();
    assert_eq!(moved.end, End::Client);
    let mut got = Vec::new();
    upstream.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"bye");
}

#[tokio::test]
async fn an_idle_tunnel_closes_and_traffic_keeps_it_open() {
    let (conn, mut upstream) = upstream_pair(b"").await;
    let (client, mut peer) = tokio::io::duplex(1024);
    let started = std::time::Instant::now();
    let tunnel = tokio::spawn(run(client, conn, timeouts(300, 5_000)));
    // A byte each 150 ms, one way only, keeps it open past the idle timeout.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        peer.write_all(b"x").await.unwrap();
        read_exactly(&mut upstream, 1).await;
    }
    assert!(!tunnel.is_finished());
    let moved = tunnel.await.unwrap();
    assert_eq!(moved.end, End::Idle);
    assert!(started.elapsed() >= Duration::from_millis(900));
    let mut rest = Vec::new();
    assert_eq!(upstream.read_to_end(&mut rest).await.unwrap(), 0);
}

#[tokio::test]
async fn a_client_that_stops_reading_ends_it_after_the_write_timeout() {
    let (conn, mut upstream) = upstream_pair(b"").await;
    let (client, _peer): (DuplexStream, DuplexStream) = tokio::io::duplex(1024);
    let tunnel = tokio::spawn(run(client, conn, timeouts(60_000, 200)));
    let flood = vec![7u8; 1 << 20];
    // The upstream's writes stop when both buffers are full; the tunnel then gives up.
    let _ = tokio::time::timeout(Duration::from_secs(5), upstream.write_all(&flood)).await;
    let moved = tokio::time::timeout(Duration::from_secs(5), tunnel)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(moved.end, End::WriteStalled);
}

/// Polls `half` once, moving bytes from `from` to `to`.
async fn pump_once(half: &mut Half, from: &mut DuplexStream, to: &mut DuplexStream) -> bool {
    poll_fn(|cx| Poll::Ready(half.pump(cx, from, to).unwrap().blocked)).await
}

#[tokio::test]
async fn a_direction_holds_memory_only_while_a_write_is_partial() {
    let (mut sender, mut from) = tokio::io::duplex(64 * 1024);
    let (mut to, mut receiver) = tokio::io::duplex(1024);
    let mut half = Half::new(&[]);
    sender.write_all(&[5u8; 3000]).await.unwrap();
    // The other side takes 1,024 bytes: the rest is kept back.
    assert!(pump_once(&mut half, &mut from, &mut to).await);
    assert_eq!(half.held(), 3000 - 1024);
    let mut got = Vec::new();
    while got.len() < 3000 {
        got.extend(read_exactly(&mut receiver, 1024.min(3000 - got.len())).await);
        pump_once(&mut half, &mut from, &mut to).await;
    }
    assert_eq!(got, vec![5u8; 3000]);
    // Everything went: nothing is held between messages.
    assert_eq!(half.held(), 0);
    sender.write_all(b"small").await.unwrap();
    assert!(!pump_once(&mut half, &mut from, &mut to).await);
    assert_eq!(read_exactly(&mut receiver, 5).await, b"small");
    assert_eq!((half.held(), half.moved), (0, 3005));
}
