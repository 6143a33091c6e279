//! A minimal blocking HTTP/1.1 client for Admin writes and proxy probes (one connection per request,
//! `Connection: close`), so timings contain nothing but the request.

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A reply as the client saw it.
pub struct Reply {
    pub status: u16,
    /// The body (Admin replies are small JSON documents).
    pub body: String,
    /// Request sent → whole reply read, in ms.
    pub wall_ms: f64,
}

/// `method path` with an optional JSON body; reads the whole reply.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Reply> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let started = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.set_nodelay(true)?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: perf\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("reading the reply to {method} {path}"))?;
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&raw);
    let status = status_of(&text).with_context(|| format!("bad reply to {method} {path}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok(Reply {
        status,
        body,
        wall_ms,
    })
}

/// The status of `GET path`, 0 when there is no answer.
pub fn status(addr: SocketAddr, path: &str) -> u16 {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_nodelay(true);
    if write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: perf\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return 0;
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    status_of(&String::from_utf8_lossy(&raw)).unwrap_or(0)
}

fn status_of(text: &str) -> Option<u16> {
    text.lines().next()?.split_whitespace().nth(1)?.parse().ok()
}

/// What [`until_routed`] saw: the time since `since` until the route answered, and how many probes it
/// sent.
pub struct Routed {
    pub took: Duration,
    pub probes: usize,
}

/// Polls `GET path` on `addr` every `every` until it answers something other than 404 (and not
/// nothing); None after `limit`.
pub fn until_routed(
    addr: SocketAddr,
    path: &str,
    since: Instant,
    every: Duration,
    limit: Duration,
) -> Option<Routed> {
    let mut probes = 0;
    loop {
        let s = status(addr, path);
        probes += 1;
        if s != 0 && s != 404 {
            return Some(Routed {
                took: since.elapsed(),
                probes,
            });
        }
        if since.elapsed() > limit {
            return None;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn status_lines() {
        assert_eq!(super::status_of("HTTP/1.1 201 Created\r\n\r\n"), Some(201));
        assert_eq!(super::status_of("garbage"), None);
    }
}
