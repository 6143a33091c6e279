//! Which client a request comes from: nginx's realip rules as Kong configures them (`trusted_ips`,
//! `real_ip_header`, `real_ip_recursive`).

use crate::settings::ProxySettings;
use http::{HeaderMap, HeaderName};
use std::net::IpAddr;

/// Who is believed, and where the client address is read from when the peer is believed.
pub struct Trust {
    nets: Vec<ipnet::IpNet>,
    header: Option<HeaderName>,
    recursive: bool,
}

impl Trust {
    /// From the node settings; an invalid `real_ip_header` name disables the header (peer address only).
    pub fn new(settings: &ProxySettings) -> Trust {
        let header = HeaderName::from_bytes(settings.real_ip_header.trim().as_bytes()).ok();
        if header.is_none() && !settings.real_ip_header.trim().is_empty() {
            tracing::warn!(header = %settings.real_ip_header, "invalid real_ip_header; using the peer address");
        }
        Trust {
            nets: settings.trusted_ips.clone(),
            header,
            recursive: settings.real_ip_recursive,
        }
    }

    /// Whether `ip` is in `trusted_ips`.
    pub fn is_trusted(&self, ip: IpAddr) -> bool {
        !self.nets.is_empty() && self.nets.iter().any(|n| n.contains(&ip))
    }

    /// The client address: the peer, unless the peer is trusted and the real-IP header names another one.
    /// Not recursive: the last address of the header. Recursive: the last address, walking from the right,
    /// that is not trusted (the first one when all are).
    pub fn client_ip(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        let Some(name) = &self.header else {
            return peer;
        };
        if !self.is_trusted(peer) {
            return peer;
        }
        let mut addrs = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        if !self.recursive {
            addrs.drain(..addrs.len().saturating_sub(1));
        }
        let mut found = None;
        for addr in addrs.iter().rev() {
            let Ok(ip) = addr.parse::<IpAddr>() else {
                break;
            };
            found = Some(ip);
            if !self.is_trusted(ip) {
                break;
            }
        }
        found.unwrap_or(peer)
    }
}

#[cfg(test)]
mod tests;
