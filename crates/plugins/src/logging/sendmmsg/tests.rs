//! `send_each` on real loopback sockets: every datagram arrives alone and in order across several
//! `sendmmsg` calls, and one the kernel refuses is skipped without losing those after it.

use super::{send_each, CHUNK};
use std::net::UdpSocket;
use std::time::Duration;

/// A receiver and a non-blocking sender connected to it.
fn pair() -> (UdpSocket, UdpSocket) {
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.connect(receiver.local_addr().unwrap()).unwrap();
    sender.set_nonblocking(true).unwrap();
    (receiver, sender)
}

/// The next `n` datagrams received, as strings.
fn receive(receiver: &UdpSocket, n: usize) -> Vec<String> {
    let mut buf = vec![0u8; 70_000];
    (0..n)
        .map(|_| {
            let len = receiver.recv(&mut buf).unwrap();
            String::from_utf8(buf[..len].to_vec()).unwrap()
        })
        .collect()
}

#[test]
fn every_datagram_of_a_batch_arrives_alone_and_in_order() {
    let (receiver, sender) = pair();
    // More than two calls' worth, of differing lengths (what a batch of metric lines looks like).
    let lines: Vec<String> = (0..CHUNK * 2 + 7)
        .map(|i| format!("kong.service.s.request.count:{}|c", "1".repeat(i % 9 + 1)))
        .collect();
    let datagrams: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
    assert!(send_each(&sender, &datagrams).is_none());
    assert_eq!(receive(&receiver, lines.len()), lines);
}

#[test]
fn a_refused_datagram_is_skipped_and_the_rest_still_arrive() {
    let (receiver, sender) = pair();
    let too_big = vec![b'x'; 70_000];
    let datagrams: Vec<&[u8]> = vec![b"a", b"b", &too_big, b"c", &too_big, b"d"];
    let error = send_each(&sender, &datagrams).expect("the oversized datagrams fail");
    assert_eq!(error.raw_os_error(), Some(libc::EMSGSIZE));
    assert_eq!(receive(&receiver, 4), ["a", "b", "c", "d"]);
}
