//! Raw L4 upstreams for the stream proxy's tests: a TCP line echo and a UDP datagram echo, each answering
//! with its name in front (`"<name> <what was sent>"`), so a test sees which upstream a route led to; and
//! free ports to give `stream_listen`.

use crate::echo::Background;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A TCP upstream that answers each line `l` with `"<name> l\n"`.
pub struct TcpLineEcho {
    server: Background,
    peers: Arc<Mutex<Vec<SocketAddr>>>,
}

impl TcpLineEcho {
    pub fn start(name: &str) -> TcpLineEcho {
        let name = name.to_string();
        let peers = Arc::new(Mutex::new(Vec::new()));
        let seen = peers.clone();
        let server = Background::start(move |listener| async move {
            loop {
                let Ok((stream, peer)) = listener.accept().await else {
                    continue;
                };
                seen.lock().expect("peers").push(peer);
                let name = name.clone();
                tokio::task::spawn_local(async move {
                    let (read, mut write) = stream.into_split();
                    let mut lines = BufReader::new(read).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let answer = format!("{name} {line}\n");
                        if write.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        TcpLineEcho { server, peers }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// Connections accepted so far, by the address they came from.
    pub fn peers(&self) -> Vec<SocketAddr> {
        self.peers.lock().expect("peers").clone()
    }
}

/// A UDP upstream that answers each datagram `d` with `"<name> d"` to its sender.
pub struct UdpEcho {
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl UdpEcho {
    pub fn start(name: &str) -> UdpEcho {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        socket.set_nonblocking(true).expect("nonblocking");
        let port = socket.local_addr().expect("local addr").port();
        let name = name.to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let socket = tokio::net::UdpSocket::from_std(socket).expect("udp socket");
                let serve = async {
                    let mut buf = vec![0u8; 65536];
                    loop {
                        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
                            continue;
                        };
                        let mut answer = format!("{name} ").into_bytes();
                        answer.extend_from_slice(&buf[..n]);
                        let _ = socket.send_to(&answer, from).await;
                    }
                };
                tokio::select! {
                    () = serve => {}
                    _ = stopped => {}
                }
            });
        });
        UdpEcho {
            port,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for UdpEcho {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (for `stream_listen`).
pub fn free_tcp_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("local addr").port()
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
pub fn free_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.local_addr().expect("local addr").port()
}
