//! Unit tests of `sockets`: datagrams over real UDP and unix sockets.

use super::*;

fn framed(record: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"<");
    out.extend_from_slice(record);
    out.extend_from_slice(b">");
}

fn batch() -> Vec<Bytes> {
    vec![Bytes::from_static(b"one"), Bytes::from_static(b"two")]
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn udp_gets_one_framed_datagram_per_record() {
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let port = receiver.local_addr().unwrap().port();
    let peer = Peer::udp("localhost", port);
    assert_eq!(peer.name(), format!("localhost:{port}"));
    let sink = DatagramSink::new(peer, Duration::from_secs(5), framed);
    run(sink.deliver(&batch())).unwrap();
    let mut buf = [0u8; 64];
    for expected in [&b"<one>"[..], b"<two>"] {
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], expected);
    }
}

#[test]
fn unix_datagrams_and_a_missing_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.sock");
    let receiver = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let sink = DatagramSink::new(Peer::Unix(path.clone()), Duration::from_secs(1), framed);
    run(sink.deliver(&batch())).unwrap();
    let mut buf = [0u8; 64];
    for expected in [&b"<one>"[..], b"<two>"] {
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], expected);
    }
    let gone = dir.path().join("missing.sock");
    let sink = DatagramSink::new(Peer::Unix(gone.clone()), Duration::from_secs(1), framed);
    let err = run(sink.deliver(&batch())).unwrap_err();
    assert!(
        err.starts_with(&format!("could not connect to {}", gone.display())),
        "{err}"
    );
}

#[test]
fn a_full_unix_socket_times_out_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.sock");
    // Never read: its receive queue fills and sends would block.
    let _receiver = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    let sink = DatagramSink::new(Peer::Unix(path), Duration::from_millis(100), framed);
    let many: Vec<Bytes> = (0..2000).map(|_| Bytes::from(vec![b'x'; 1024])).collect();
    let started = std::time::Instant::now();
    let err = run(sink.deliver(&many)).unwrap_err();
    assert!(err.contains("timeout"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
