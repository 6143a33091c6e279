//! The waiting room against real sockets on 127.0.0.1.

use super::{Room, Silent};
use crate::watchdog::now_ms;
use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A client connected to a fresh listener, and the server's side of it in a room entry.
async fn connected(guard: Arc<()>) -> (TcpStream, Silent<Arc<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (stream, peer) = listener.accept().await.unwrap();
    let silent = Silent {
        stream,
        peer,
        guard,
        accepted_ms: now_ms(),
    };
    (client, silent)
}

#[tokio::test]
async fn a_client_that_speaks_leaves_the_room_with_its_bytes_unread() {
    let mut room = Room::new(Duration::from_secs(60));
    let (mut client, silent) = connected(Arc::new(())).await;
    room.enter(silent);
    let (mut quiet, other) = connected(Arc::new(())).await;
    room.enter(other);
    client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let spoke = tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| room.poll_spoke(cx)))
        .await
        .expect("the speaking client leaves the room");
    assert_eq!(spoke.peer, client.local_addr().unwrap());
    let mut first = [0u8; 3];
    let mut stream = spoke.stream;
    stream.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"GET");
    // The quiet one is still waiting, its socket open.
    assert_eq!(room.len(), 1);
    quiet.write_all(b"x").await.unwrap();
}

#[tokio::test]
async fn a_silent_client_is_closed_after_the_header_timeout_and_its_guard_released() {
    let mut room = Room::new(Duration::from_millis(200));
    let guard = Arc::new(());
    let (mut client, silent) = connected(guard.clone()).await;
    room.enter(silent);
    assert_eq!(Arc::strong_count(&guard), 2);
    let started = std::time::Instant::now();
    // The room is polled as the accept loop polls it, while the client waits for the close.
    let closed = async {
        let mut buf = [0u8; 1];
        client.read(&mut buf).await
    };
    tokio::select! {
        _ = poll_fn(|cx| room.poll_spoke(cx)) => panic!("a silent client never speaks"),
        read = closed => assert_eq!(read.unwrap(), 0, "closed without a response"),
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(190),
        "closed early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "closed late: {waited:?}");
    // The emptied entry is gone with the next poll, and its guard with it.
    let _ =
        tokio::time::timeout(Duration::from_millis(50), poll_fn(|cx| room.poll_spoke(cx))).await;
    assert_eq!(room.len(), 0);
    assert_eq!(Arc::strong_count(&guard), 1);
}

#[tokio::test]
async fn a_client_that_closes_leaves_the_room_to_be_served_its_end() {
    let mut room = Room::new(Duration::from_secs(60));
    let (client, silent) = connected(Arc::new(())).await;
    room.enter(silent);
    drop(client);
    let left = tokio::time::timeout(Duration::from_secs(5), poll_fn(|cx| room.poll_spoke(cx)))
        .await
        .expect("a closed client leaves the room");
    let mut stream = left.stream;
    assert_eq!(stream.read(&mut [0u8; 1]).await.unwrap(), 0);
}
