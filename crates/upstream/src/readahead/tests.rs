//! The read-ahead body: the pump reads ahead of a client that does not read (memory, then the file), the
//! client gets every byte in order, the upstream waits once memory and file are full, a failure reaches
//! the client, and a client that leaves stops the pump.

use super::*;
use crate::body::ChannelBody;
use http_body_util::BodyExt;
use std::time::Duration;
use tokio::sync::mpsc;

fn settings(memory: usize, file_max: u64) -> ResponseBuffering {
    ResponseBuffering {
        memory,
        file_max,
        ..ResponseBuffering::default()
    }
}

type Tx = mpsc::Sender<Result<Frame<Bytes>, BoxError>>;

/// Sends `n` pieces of `size` bytes (piece i filled with i), returning how many the upstream side got rid
/// of within `within` (the channel holds 4 more).
async fn feed(tx: &Tx, n: usize, size: usize, within: Duration) -> usize {
    let mut sent = 0;
    for i in 0..n {
        let piece = Bytes::from(vec![i as u8; size]);
        match tokio::time::timeout(within, tx.send(Ok(Frame::data(piece)))).await {
            Ok(Ok(())) => sent += 1,
            _ => break,
        }
    }
    sent
}

#[tokio::test]
async fn the_upstream_is_read_ahead_of_a_client_that_does_not_read() {
    let (tx, upstream) = ChannelBody::channel();
    let mut body = ReadAhead::spawn(upstream, &settings(1024, 1 << 20));
    // 100 pieces of 1 KiB: memory holds one KiB, the file the rest; nobody reads meanwhile.
    assert_eq!(feed(&tx, 100, 1024, Duration::from_secs(2)).await, 100);
    drop(tx);
    tokio::task::yield_now().await;
    let mut got = Vec::new();
    while let Some(frame) = body.frame().await {
        got.extend_from_slice(&frame.unwrap().into_data().unwrap());
    }
    assert_eq!(got.len(), 100 * 1024);
    for (i, piece) in got.chunks(1024).enumerate() {
        assert!(
            piece.iter().all(|b| *b == i as u8),
            "piece {i} out of order"
        );
    }
    assert!(body.is_end_stream());
}

#[tokio::test]
async fn the_upstream_waits_once_memory_and_file_are_full() {
    let (tx, upstream) = ChannelBody::channel();
    let body = ReadAhead::spawn(upstream, &settings(1024, 4096));
    // 1 KiB in memory, 4 KiB in the file, 4 pieces in the channel: the rest must wait for the client.
    let sent = feed(&tx, 30, 1024, Duration::from_millis(300)).await;
    assert!((9..=12).contains(&sent), "{sent} pieces were taken");
    // Reading makes room again, and everything arrives in order.
    let reader = tokio::spawn(async move {
        let bytes = body.collect().await.unwrap().to_bytes();
        bytes.chunks(1024).map(|c| c[0]).collect::<Vec<u8>>()
    });
    let rest = feed(&tx, 30 - sent, 1024, Duration::from_secs(2)).await;
    assert_eq!(sent + rest, 30);
    drop(tx);
    let order = reader.await.unwrap();
    // Pieces were numbered per feed call: the first `sent`, then the rest from 0 again.
    let expected: Vec<u8> = (0..sent).chain(0..30 - sent).map(|i| i as u8).collect();
    assert_eq!(order, expected);
}

#[tokio::test]
async fn without_a_file_memory_is_all_there_is() {
    let (tx, upstream) = ChannelBody::channel();
    let _body = ReadAhead::spawn(upstream, &settings(2048, 0));
    let sent = feed(&tx, 30, 1024, Duration::from_millis(300)).await;
    assert!((6..=8).contains(&sent), "{sent} pieces were taken");
}

#[tokio::test]
async fn an_upstream_failure_reaches_the_client_after_the_data() {
    let (tx, upstream) = ChannelBody::channel();
    let mut body = ReadAhead::spawn(upstream, &settings(1024, 0));
    tx.send(Ok(Frame::data(Bytes::from_static(b"ab"))))
        .await
        .unwrap();
    tx.send(Err(box_err(std::io::Error::other("upstream reset"))))
        .await
        .unwrap();
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), &b"ab"[..]);
    assert!(body.frame().await.unwrap().is_err());
    assert!(body.frame().await.is_none());
}

#[tokio::test]
async fn a_client_that_leaves_stops_the_pump() {
    let (tx, upstream) = ChannelBody::channel();
    let body = ReadAhead::spawn(upstream, &settings(1024, 1 << 20));
    feed(&tx, 2, 10, Duration::from_secs(1)).await;
    drop(body);
    // The pump drops the upstream body: the sender sees the channel closed.
    tokio::time::timeout(Duration::from_secs(2), tx.closed())
        .await
        .expect("the pump let go of the upstream");
}
