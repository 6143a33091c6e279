//! Kong's listen syntax (`0.0.0.0:8000, 0.0.0.0:8443 ssl http2 reuseport backlog=16384`) and the sockets.

use socket2::{Domain, Protocol, Socket, Type};
use std::net::{SocketAddr, ToSocketAddrs};

/// One listen address with its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    pub addr: SocketAddr,
    /// TLS was asked for (`ssl`).
    pub ssl: bool,
    /// `http2` was given: TLS listeners offer `h2` in ALPN. Plain-text listeners speak HTTP/1.1 and h2c
    /// (prior knowledge) either way.
    pub http2: bool,
    /// The accept queue length (`backlog=N`, 16384 by default as in Kong).
    pub backlog: u32,
}

/// Parses a comma-separated listen setting (`proxy_listen`, `admin_listen`, ...). `off` gives an empty list;
/// flags nginx accepts but Sluice does not need (`reuseport`, `deferred`, `bind`, ...) are ignored.
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

/// Which of a process's sockets on one address is being bound.
///
/// Every worker binds each address with `SO_REUSEPORT`, and the kernel lets *any* process of the same user join
/// such a group: a second gateway started on the same port would then take half the connections, silently
/// (two test gateways that drew the same free port did exactly that). So the first socket claims the port
/// alone: it is bound without `SO_REUSEPORT`, which fails with "Address already in use" while anyone listens
/// there, and gets the option only after the bind, so this process's own workers can join it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bind {
    /// The first socket on the address: fails if another socket has it.
    Claim,
    /// A further worker's socket on an address this process has claimed.
    Join,
}

/// A non-blocking listener with `SO_REUSEPORT`, so every worker can bind the same address (see [`Bind`]).
pub(crate) fn bind(listen: &ListenAddr, how: Bind) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(
        Domain::for_address(listen.addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_nodelay(true)?;
    socket.set_nonblocking(true)?;
    bind_reusing_port(&socket, listen.addr, how)?;
    socket.listen(listen.backlog.min(i32::MAX as u32) as i32)?;
    Ok(socket.into())
}

/// Binds `socket` to `addr` with `SO_REUSEPORT` set before the bind when joining, after it when claiming.
pub(crate) fn bind_reusing_port(
    socket: &Socket,
    addr: SocketAddr,
    how: Bind,
) -> std::io::Result<()> {
    if how == Bind::Join {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.set_reuse_port(true)
}

#[cfg(test)]
mod tests;
