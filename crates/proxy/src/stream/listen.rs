//! Kong's `stream_listen` syntax (`0.0.0.0:5555, 0.0.0.0:5556 ssl reuseport, 127.0.0.1:5557 udp`) and the
//! sockets.

use crate::listen::{bind_reusing_port, parse_listen, Bind, ListenAddr};
use socket2::{Domain, Protocol, Socket, Type};
use std::net::SocketAddr;

/// One stream listen address with its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamListen {
    pub addr: SocketAddr,
    /// `ssl`: TLS connections, routed by their server name to `tls` or `tls_passthrough` routes.
    pub ssl: bool,
    /// `udp`: datagrams, routed to `udp` routes.
    pub udp: bool,
    /// `backlog=N` (TCP only; 16384 by default as in Kong).
    pub backlog: u32,
}

/// Parses `stream_listen`: `proxy_listen`'s syntax ([`crate::parse_listen`]) plus `udp`, without `http2`.
/// `off` (Kong's default) gives an empty list. As in Kong, `udp` cannot go with `ssl`.
pub fn parse_stream_listen(value: &str) -> Result<Vec<StreamListen>, String> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let udp = item.split_whitespace().any(|w| w == "udp");
        let rest: Vec<&str> = item.split_whitespace().filter(|w| *w != "udp").collect();
        for l in parse_listen(&rest.join(" "))? {
            if l.http2 {
                return Err(format!("'{item}': http2 is not a stream listen flag"));
            }
            if udp && l.ssl {
                return Err(format!("'{item}': the udp flag cannot go with ssl"));
            }
            out.push(StreamListen {
                addr: l.addr,
                ssl: l.ssl,
                udp,
                backlog: l.backlog,
            });
        }
    }
    Ok(out)
}

pub(super) fn bind_tcp(listen: &StreamListen, how: Bind) -> std::io::Result<std::net::TcpListener> {
    crate::listen::bind(
        &ListenAddr {
            addr: listen.addr,
            ssl: listen.ssl,
            http2: false,
            backlog: listen.backlog,
        },
        how,
    )
}

/// A non-blocking UDP socket with `SO_REUSEPORT`: the kernel keeps each client on one worker. No
/// `SO_REUSEADDR`: on UDP it would let any other socket bind the same address (see [`Bind`]).
pub(super) fn bind_udp(listen: &StreamListen, how: Bind) -> std::io::Result<std::net::UdpSocket> {
    let socket = Socket::new(
        Domain::for_address(listen.addr),
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    socket.set_nonblocking(true)?;
    bind_reusing_port(&socket, listen.addr, how)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kongs_syntax() {
        let l = parse_stream_listen(
            "0.0.0.0:5555, 0.0.0.0:5556 ssl reuseport, 127.0.0.1:5557 udp backlog=10",
        )
        .unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!((l[0].ssl, l[0].udp), (false, false));
        assert_eq!((l[1].ssl, l[1].udp, l[1].addr.port()), (true, false, 5556));
        assert_eq!((l[2].udp, l[2].backlog), (true, 10));
        assert!(parse_stream_listen("off").unwrap().is_empty());
        assert!(parse_stream_listen("1.2.3.4:1 udp ssl").is_err());
        assert!(parse_stream_listen("1.2.3.4:1 http2").is_err());
        assert!(parse_stream_listen("nowhere").is_err());
    }

    #[test]
    fn a_claimed_udp_port_takes_its_own_workers_and_no_one_else() {
        let any = parse_stream_listen("127.0.0.1:0 udp").unwrap().remove(0);
        let first = bind_udp(&any, Bind::Claim).unwrap();
        let mut same = any.clone();
        same.addr = first.local_addr().unwrap();
        let _second_worker = bind_udp(&same, Bind::Join).unwrap();
        let err = bind_udp(&same, Bind::Claim).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    }
}
