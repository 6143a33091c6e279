//! A TCP relay the tests can cut and restore, to break a link between two real peers without stopping
//! either (a database "down" under a DB-mode node, a data plane's link to its control plane).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A TCP relay on 127.0.0.1 to a server. [`TcpRelay::cut`] closes every relayed connection and refuses
/// new ones (the server is "down", or the link broken); [`TcpRelay::restore`] lets them through again.
pub struct TcpRelay {
    pub port: u16,
    open: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl TcpRelay {
    /// A relay to the PostgreSQL server the tests use.
    pub fn to_postgres() -> TcpRelay {
        let (host, port, _) = crate::pg_server();
        TcpRelay::to(host, port)
    }

    /// A relay to `host:port`.
    pub fn to(host: String, server_port: u16) -> TcpRelay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
        let port = listener.local_addr().expect("addr").port();
        let open = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (o, c, s) = (open.clone(), conns.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(client) = client else { continue };
                if !o.load(Ordering::Relaxed) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect((host.as_str(), server_port)) else {
                    continue;
                };
                let mut list = c.lock().unwrap();
                list.push(client.try_clone().expect("clone"));
                list.push(server.try_clone().expect("clone"));
                pipe(
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                pipe(server, client);
            }
        });
        TcpRelay {
            port,
            open,
            conns,
            stop,
        }
    }

    /// The server goes "down": relayed connections are closed and new ones refused.
    pub fn cut(&self) {
        self.open.store(false, Ordering::Relaxed);
        for conn in self.conns.lock().unwrap().drain(..) {
            let _ = conn.shutdown(Shutdown::Both);
        }
    }

    /// The server is reachable again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::Relaxed);
    }
}

impl Drop for TcpRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to` on a thread until either side ends, then closes both.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
