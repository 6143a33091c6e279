//! Request buffering: memory, the temporary file, the size limit, and the chunked request that leaves
//! with its length.

use super::*;
use crate::body::{full, ChannelBody};
use http::{HeaderMap, Method};

fn settings(memory: usize, max_body: u64) -> BodyBuffering {
    BodyBuffering {
        memory,
        max_body,
        ..BodyBuffering::default()
    }
}

/// A chunked body of `pieces`, fed by a task.
fn streamed(pieces: Vec<&'static [u8]>) -> ProxyBody {
    let (tx, body) = ChannelBody::channel();
    tokio::spawn(async move {
        for p in pieces {
            let _ = tx.send(Ok(Frame::data(Bytes::from_static(p)))).await;
        }
    });
    body.boxed()
}

async fn collect(body: SpooledBody) -> Vec<u8> {
    body.boxed().collect().await.unwrap().to_bytes().to_vec()
}

#[tokio::test]
async fn a_small_body_stays_in_memory_and_a_large_one_goes_to_a_file() {
    let small = read_whole(streamed(vec![b"ab", b"cd"]), &settings(8, 0))
        .await
        .unwrap();
    assert!(matches!(small, SpooledBody::Memory { .. }));
    assert_eq!((small.len(), small.size_hint().exact()), (4, Some(4)));
    assert_eq!(collect(small).await, b"abcd");

    // Past `memory`, everything goes to the file, in order, whatever the pieces.
    let big: Vec<&'static [u8]> = vec![b"0123", b"4567", b"89", b"abcdef", b"g"];
    let spooled = read_whole(streamed(big), &settings(5, 0)).await.unwrap();
    assert!(matches!(spooled, SpooledBody::File { .. }));
    assert_eq!(spooled.len(), 17);
    assert_eq!(collect(spooled).await, b"0123456789abcdefg");
}

#[tokio::test]
async fn a_file_body_is_read_back_in_pieces() {
    let data: &'static [u8] = Box::leak(vec![7u8; 200 * 1024].into_boxed_slice());
    let spooled = read_whole(streamed(vec![data, b"end"]), &settings(1024, 0))
        .await
        .unwrap();
    let mut body = spooled.boxed();
    let mut pieces = 0;
    let mut all = Vec::new();
    while let Some(frame) = body.frame().await {
        all.extend_from_slice(&frame.unwrap().into_data().unwrap());
        pieces += 1;
    }
    assert!(pieces >= 4, "{pieces}");
    assert_eq!(all.len(), 200 * 1024 + 3);
    assert!(all.ends_with(b"end"));
}

#[tokio::test]
async fn the_size_limit_refuses_a_declared_length_at_once_and_a_chunked_body_when_it_passes() {
    let declared = full(Bytes::from_static(b"123456"));
    assert!(over_declared_limit(&declared, 5) && !over_declared_limit(&declared, 6));
    assert!(!over_declared_limit(&declared, 0));
    assert!(matches!(
        read_whole(declared, &settings(8, 5)).await,
        Err(SpoolError::TooLarge)
    ));
    let chunked = streamed(vec![b"123", b"456"]);
    assert!(matches!(
        read_whole(chunked, &settings(8, 5)).await,
        Err(SpoolError::TooLarge)
    ));
    assert!(read_whole(streamed(vec![b"123", b"45"]), &settings(8, 5))
        .await
        .is_ok());
}

#[tokio::test]
async fn a_failing_body_fails_with_its_own_error() {
    let capped = crate::body::Capped::new(streamed(vec![b"123", b"456"]), 4).boxed();
    match read_whole(capped, &settings(8, 0)).await {
        Err(SpoolError::Body(Failed::OverLimit)) => {}
        other => panic!("{:?}", other.map(|b| b.len())),
    }
}

#[tokio::test]
async fn a_chunked_request_leaves_with_its_length() {
    let (mut req, lines) = crate::wire::tests::simple(
        &HeaderMap::new(),
        Method::POST,
        streamed(vec![b"abc", b"de"]),
    );
    assert!(req.chunked && lines.contains(&("transfer-encoding".into(), "chunked".into())));
    buffer_request(&mut req, &settings(8, 0)).await.unwrap();
    let mut head = BytesMut::new();
    req.head(b"up", &mut head);
    let lines = crate::wire::tests::lines(&head);
    assert!(!req.chunked);
    assert!(lines.contains(&("content-length".into(), "5".into())));
    assert!(!lines.iter().any(|(n, _)| n == "transfer-encoding"));
    let body = req.body.take().unwrap();
    assert_eq!(body.collect().await.unwrap().to_bytes(), &b"abcde"[..]);
}
