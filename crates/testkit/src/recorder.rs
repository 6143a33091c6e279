//! A raw-socket upstream that records exactly what arrives: every request a proxy sends, parsed only as far
//! as framing needs (head, then a `Content-Length` or chunked body), with its bytes as sent. Each request
//! gets `200 ok` on a keep-alive connection. Differential tests compare what two proxies delivered.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the upstream received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    pub target: String,
    /// Header fields as sent (names lowercased), in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked when it was chunked.
    pub body: Vec<u8>,
}

impl Received {
    /// Every value of header `name`.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// The recording upstream on 127.0.0.1, on its own thread.
pub struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<Received>>>,
    /// When the first byte of each request arrived.
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind recorder");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let (log, times) = (seen.clone(), arrivals.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, times) = (log.clone(), times.clone());
                std::thread::spawn(move || serve(stream, &log, &times));
            }
        });
        Recorder {
            port,
            seen,
            arrivals,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Takes when the first byte of each request arrived, so far (a test of buffering compares them with
    /// when its client finished sending).
    pub fn take_arrivals(&self) -> Vec<Instant> {
        std::mem::take(&mut *self.arrivals.lock().expect("recorder lock"))
    }

    /// Takes what arrived so far.
    pub fn take(&self) -> Vec<Received> {
        std::mem::take(&mut *self.seen.lock().expect("recorder lock"))
    }
}

/// Reads requests off one connection until it closes or breaks framing.
fn serve(mut stream: TcpStream, log: &Mutex<Vec<Received>>, arrivals: &Mutex<Vec<Instant>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = Vec::new();
    loop {
        let (req, used) = loop {
            match parse(&buf) {
                Parsed::Done(req, used) => break (req, used),
                Parsed::Bad => return,
                Parsed::More => {
                    let mut chunk = [0u8; 8192];
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if buf.is_empty() {
                                arrivals.lock().expect("recorder lock").push(Instant::now());
                            }
                            buf.extend_from_slice(&chunk[..n]);
                        }
                    }
                }
            }
        };
        buf.drain(..used);
        log.lock().expect("recorder lock").push(req);
        if stream
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok",
            )
            .is_err()
        {
            return;
        }
    }
}

enum Parsed {
    Done(Received, usize),
    More,
    Bad,
}

fn parse(buf: &[u8]) -> Parsed {
    let mut fields = [httparse::EMPTY_HEADER; 256];
    let mut req = httparse::Request::new(&mut fields);
    let head = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::More,
        Err(_) => return Parsed::Bad,
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            let value = String::from_utf8_lossy(h.value).into_owned();
            (h.name.to_ascii_lowercase(), value)
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    let rest = &buf[head..];
    let (body, used) = if chunked {
        match dechunk(rest) {
            Some(Some(done)) => done,
            Some(None) => return Parsed::More,
            None => return Parsed::Bad,
        }
    } else {
        let n = length.unwrap_or(0);
        if rest.len() < n {
            return Parsed::More;
        }
        (rest[..n].to_vec(), n)
    };
    let received = Received {
        method: req.method.unwrap_or("").to_string(),
        target: req.path.unwrap_or("").to_string(),
        headers,
        body,
    };
    Parsed::Done(received, head + used)
}

/// A chunked body from the front of `buf`: `Some(Some((body, bytes used)))`, `Some(None)` when incomplete,
/// `None` when malformed.
fn dechunk(buf: &[u8]) -> Option<Option<(Vec<u8>, usize)>> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = find_crlf(&buf[at..]) else {
            return Some(None);
        };
        let line = std::str::from_utf8(&buf[at..at + eol]).ok()?;
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        at += eol + 2;
        if size == 0 {
            // Trailer fields, then the blank line.
            loop {
                let Some(eol) = find_crlf(&buf[at..]) else {
                    return Some(None);
                };
                at += eol + 2;
                if eol == 0 {
                    return Some(Some((body, at)));
                }
            }
        }
        if buf.len() < at + size + 2 {
            return Some(None);
        }
        body.extend_from_slice(&buf[at..at + size]);
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return None;
        }
        at += size + 2;
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}
