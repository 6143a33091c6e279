//! Kong's stream router (`traditional_compatible`): which `tcp` / `tls` / `udp` / `tls_passthrough` route a
//! connection (or a UDP client's datagrams) belongs to, from its source and destination addresses and the
//! TLS server name. Pure: addresses in, route index out.
//!
//! A route matches when each of its matchers that is set matches: one of its `sources` (IP or CIDR range,
//! port, or both), one of its `destinations` (the same, against the address the client connected to), and
//! one of its `snis` (`example.com`, `*.example.com`, `example.*`). As in Kong, `snis` are looked at only
//! when the connection carried a server name: a client without SNI is routed as plain `tcp`.
//!
//! Priority is Kong's: a route with `snis`, or with both `sources` and `destinations`, ranks above the rest;
//! then its sources' weight, then its destinations' (an exact IP over a port over a CIDR range); ties go to
//! the larger route id.

use ipnet::IpNet;
use std::cmp::Reverse;
use std::net::{IpAddr, SocketAddr};

/// The protocols a stream route may list, as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamProtocols(u8);

impl StreamProtocols {
    pub const TCP: StreamProtocols = StreamProtocols(1);
    pub const TLS: StreamProtocols = StreamProtocols(2);
    pub const UDP: StreamProtocols = StreamProtocols(4);
    pub const TLS_PASSTHROUGH: StreamProtocols = StreamProtocols(8);

    /// The stream protocols among a route's `protocols` (HTTP ones add nothing).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> StreamProtocols {
        StreamProtocols(names.iter().fold(0, |bits, n| {
            bits | match n.as_ref() {
                "tcp" => 1,
                "tls" => 2,
                "udp" => 4,
                "tls_passthrough" => 8,
                _ => 0,
            }
        }))
    }

    pub fn union(self, other: StreamProtocols) -> StreamProtocols {
        StreamProtocols(self.0 | other.0)
    }

    pub fn intersects(self, other: StreamProtocols) -> bool {
        self.0 & other.0 != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// One stream route as the router sees it.
#[derive(Debug, Clone)]
pub struct StreamRouteSpec {
    /// The caller's index, returned by [`StreamRouter::find`].
    pub id: usize,
    pub protocols: StreamProtocols,
    /// `(ip or cidr, port)`, at least one of the two set.
    pub sources: Vec<(Option<String>, Option<u16>)>,
    pub destinations: Vec<(Option<String>, Option<u16>)>,
    pub snis: Vec<String>,
    /// The route's id (`Uuid::as_u128`), the tie-breaker.
    pub uuid: u128,
}

/// What a connection offers to the router.
#[derive(Debug, Clone, Copy)]
pub struct StreamParts<'a> {
    /// The routes the listener can serve: `TCP` on a plain listener, `TLS | TLS_PASSTHROUGH` on an `ssl`
    /// one, `UDP` on a `udp` one.
    pub accepts: StreamProtocols,
    pub source: SocketAddr,
    pub destination: SocketAddr,
    /// The server name of the client's TLS ClientHello, lower-case.
    pub sni: Option<&'a str>,
}

#[derive(Debug, Clone)]
enum IpMatch {
    Exact(IpAddr),
    Range(IpNet),
}

#[derive(Debug, Clone)]
struct Net {
    ip: Option<IpMatch>,
    port: Option<u16>,
}

impl Net {
    fn matches(&self, addr: &SocketAddr) -> bool {
        let ip = addr.ip().to_canonical();
        let ip_ok = match &self.ip {
            None => true,
            Some(IpMatch::Exact(x)) => x.to_canonical() == ip,
            Some(IpMatch::Range(n)) => n.contains(&ip),
        };
        ip_ok && self.port.is_none_or(|p| p == addr.port())
    }

    /// Kong's weight of a list: an exact IP (8), a port (4), a CIDR range (1), or'ed over the entries.
    fn weight(nets: &[Net]) -> u64 {
        nets.iter().fold(0, |w, n| {
            w | match n.ip {
                Some(IpMatch::Exact(_)) => 8,
                Some(IpMatch::Range(_)) => 1,
                None => 0,
            } | if n.port.is_some() { 4 } else { 0 }
        })
    }
}

#[derive(Debug, Clone)]
enum Sni {
    Exact(String),
    /// `*.example.com`: the name ends with `.example.com`.
    Suffix(String),
    /// `example.*`: the name starts with `example.`.
    Prefix(String),
}

impl Sni {
    fn parse(s: &str) -> Sni {
        let s = s.to_ascii_lowercase();
        if let Some(rest) = s.strip_prefix('*') {
            Sni::Suffix(rest.strip_suffix('.').unwrap_or(rest).to_string())
        } else if let Some(rest) = s.strip_suffix('*') {
            Sni::Prefix(rest.to_string())
        } else if s.len() > 1 && s.ends_with('.') {
            Sni::Exact(s[..s.len() - 1].to_string())
        } else {
            Sni::Exact(s)
        }
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Sni::Exact(s) => s == name,
            Sni::Suffix(s) => name.ends_with(s.as_str()),
            Sni::Prefix(s) => name.starts_with(s.as_str()),
        }
    }
}

#[derive(Debug, Clone)]
struct StreamRoute {
    id: usize,
    protocols: StreamProtocols,
    sources: Vec<Net>,
    destinations: Vec<Net>,
    snis: Vec<Sni>,
}

/// A stream route that could not be compiled (an address that does not parse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamBuildError {
    pub route: usize,
    pub message: String,
}

/// The stream routes of one config snapshot, best first.
#[derive(Debug, Default)]
pub struct StreamRouter {
    routes: Vec<StreamRoute>,
}

fn nets(
    route: usize,
    list: &[(Option<String>, Option<u16>)],
) -> Result<Vec<Net>, StreamBuildError> {
    list.iter()
        .map(|(ip, port)| {
            let ip = match ip.as_deref() {
                None => None,
                Some(s) if s.contains('/') => {
                    Some(IpMatch::Range(s.parse().map_err(|_| StreamBuildError {
                        route,
                        message: format!("invalid ip or cidr range: '{s}'"),
                    })?))
                }
                Some(s) => Some(IpMatch::Exact(s.parse().map_err(|_| StreamBuildError {
                    route,
                    message: format!("invalid ip or cidr range: '{s}'"),
                })?)),
            };
            Ok(Net { ip, port: *port })
        })
        .collect()
}

/// Kong's stream priority: the SNI bit (bit 61) for routes with `snis` or with both address lists, the
/// sources' weight shifted by 4, the destinations' weight.
fn priority(r: &StreamRoute) -> u64 {
    let both = !r.sources.is_empty() && !r.destinations.is_empty();
    let sni_bit = if !r.snis.is_empty() || both {
        1 << 61
    } else {
        0
    };
    sni_bit | (Net::weight(&r.sources) << 4) | Net::weight(&r.destinations)
}

impl StreamRouter {
    /// Compiles the routes and sorts them by Kong's priority; every bad address is reported.
    pub fn build(specs: Vec<StreamRouteSpec>) -> Result<StreamRouter, Vec<StreamBuildError>> {
        let mut errors = Vec::new();
        let mut keyed = Vec::with_capacity(specs.len());
        for spec in specs {
            let (sources, destinations) = match (
                nets(spec.id, &spec.sources),
                nets(spec.id, &spec.destinations),
            ) {
                (Ok(s), Ok(d)) => (s, d),
                (s, d) => {
                    errors.extend(s.err().into_iter().chain(d.err()));
                    continue;
                }
            };
            let route = StreamRoute {
                id: spec.id,
                protocols: spec.protocols,
                sources,
                destinations,
                snis: spec.snis.iter().map(|s| Sni::parse(s)).collect(),
            };
            keyed.push((Reverse((priority(&route), spec.uuid)), route));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        keyed.sort_by_key(|a| a.0);
        Ok(StreamRouter {
            routes: keyed.into_iter().map(|(_, r)| r).collect(),
        })
    }

    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Whether some route can be served by a listener accepting `protocols`.
    pub fn serves(&self, protocols: StreamProtocols) -> bool {
        self.routes
            .iter()
            .any(|r| r.protocols.intersects(protocols))
    }

    /// The best route for the connection, by Kong's priority.
    pub fn find(&self, parts: &StreamParts<'_>) -> Option<usize> {
        self.routes
            .iter()
            .find(|r| {
                r.protocols.intersects(parts.accepts)
                    && (r.sources.is_empty() || r.sources.iter().any(|n| n.matches(&parts.source)))
                    && (r.destinations.is_empty()
                        || r.destinations.iter().any(|n| n.matches(&parts.destination)))
                    && match parts.sni {
                        Some(name) if !r.snis.is_empty() => r.snis.iter().any(|s| s.matches(name)),
                        _ => true,
                    }
            })
            .map(|r| r.id)
    }
}

#[cfg(test)]
mod tests;
