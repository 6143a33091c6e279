//! Kong's listen syntax (`0.0.0.0:8000, 0.0.0.0:8443 ssl http2 reuseport backlog=16384`) and the sockets.

use socket2::{Domain, Protocol, Socket, Type};
use std::net::{SocketAddr, ToSocketAddrs};

/// One listen address with its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    pub addr: SocketAddr,
    pub ssl: bool,
    pub http2: bool,
    pub backlog: u32,
}

/// Parses a comma-separated listen setting. `off` gives an empty list.
pub fn parse_listen(value: &str) -> Result<Vec<ListenAddr>, String> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "off" {
            continue;
        }
        let mut words = item.split_whitespace();
        let Some(addr) = words.next() else { continue };
        let addr = addr
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| format!("'{addr}' is not an address:port"))?;
        let mut listen = ListenAddr {
            addr,
            ssl: false,
            http2: false,
            backlog: 16384,
        };
        for flag in words {
            match flag {
                "ssl" => listen.ssl = true,
                "http2" => listen.http2 = true,
                "reuseport" | "deferred" | "bind" | "proxy_protocol" => {}
                f if f.starts_with("backlog=") => {
                    listen.backlog = f[8..]
                        .parse()
                        .map_err(|_| format!("invalid backlog in '{item}'"))?;
                }
                f if f.starts_with("so_keepalive=") || f.starts_with("ipv6only=") => {}
                other => return Err(format!("unknown listen flag '{other}' in '{item}'")),
            }
        }
        out.push(listen);
    }
    Ok(out)
}

/// A non-blocking listener with `SO_REUSEPORT`, so every worker can bind the same address.
pub(crate) fn bind(listen: &ListenAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(
        Domain::for_address(listen.addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nodelay(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&listen.addr.into())?;
    socket.listen(listen.backlog.min(i32::MAX as u32) as i32)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kong_listen_syntax() {
        let l =
            parse_listen("0.0.0.0:8000 reuseport backlog=16384, 127.0.0.1:8443 http2 ssl").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].addr, "0.0.0.0:8000".parse().unwrap());
        assert!(!l[0].ssl && l[1].ssl && l[1].http2);
        assert!(parse_listen("off").unwrap().is_empty());
        assert!(parse_listen("nonsense").is_err());
        assert!(parse_listen("127.0.0.1:1 bogus")
            .unwrap_err()
            .contains("bogus"));
    }
}
