//! The machine's resolver files: `/etc/resolv.conf` (nameservers, search list, `ndots`, `timeout`,
//! `attempts`) and the hosts file, each read once when the proxy starts.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// What `/etc/resolv.conf` says, with glibc's defaults where it is silent — except the timeout and
/// attempts, which default to 2 s and 2 (a lookup gives up within 4 s per nameserver, not 10).
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvConf {
    pub nameservers: Vec<SocketAddr>,
    /// Suffixes tried for names with fewer than `ndots` dots (and after the name itself otherwise).
    pub search: Vec<String>,
    pub ndots: usize,
    /// How long one query waits for its answer.
    pub timeout: Duration,
    /// How many rounds over the nameservers a lookup makes.
    pub attempts: usize,
}

impl Default for ResolvConf {
    fn default() -> Self {
        ResolvConf {
            nameservers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(2),
            attempts: 2,
        }
    }
}

impl ResolvConf {
    /// Reads `/etc/resolv.conf`; a missing file gives the defaults and a nameserver on 127.0.0.1:53. As in
    /// glibc, the environment variables `LOCALDOMAIN` (search list) and `RES_OPTIONS` (options) override it.
    pub fn system() -> ResolvConf {
        let mut text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        if let Ok(search) = std::env::var("LOCALDOMAIN") {
            text.push_str(&format!("\nsearch {search}"));
        }
        if let Ok(options) = std::env::var("RES_OPTIONS") {
            text.push_str(&format!("\noptions {options}"));
        }
        let mut conf = ResolvConf::parse(&text);
        if conf.nameservers.is_empty() {
            conf.nameservers
                .push(SocketAddr::from(([127, 0, 0, 1], 53)));
        }
        conf
    }

    /// Parses the resolv.conf format; unknown lines and options are ignored.
    pub fn parse(text: &str) -> ResolvConf {
        let mut conf = ResolvConf::default();
        for line in text.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    let ip = words.next().and_then(|w| w.split('%').next()?.parse().ok());
                    if let Some(ip) = ip {
                        conf.nameservers.push(SocketAddr::new(ip, 53));
                    }
                }
                // The last `search` or `domain` line wins, as in glibc.
                Some("search") | Some("domain") => {
                    conf.search = words.map(|w| w.trim_end_matches('.').to_string()).collect();
                }
                Some("options") => {
                    for option in words {
                        let (name, value) = option.split_once(':').unwrap_or((option, ""));
                        let Ok(n) = value.parse::<u64>() else {
                            continue;
                        };
                        match name {
                            "ndots" => conf.ndots = n.min(15) as usize,
                            "timeout" => conf.timeout = Duration::from_secs(n.clamp(1, 30)),
                            "attempts" => conf.attempts = n.clamp(1, 5) as usize,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        conf
    }
}

/// Names of a hosts file (lower-case) and their addresses, in file order.
pub type Hosts = HashMap<String, Vec<IpAddr>>;

/// Reads a hosts file; a missing or unreadable one gives no names (and a warning).
pub fn read_hosts(path: &std::path::Path) -> Hosts {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_hosts(&text),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the hosts file (dns_hostsfile)");
            Hosts::new()
        }
    }
}

/// Parses the hosts format: `address name [aliases...]`, `#` comments.
pub fn parse_hosts(text: &str) -> Hosts {
    let mut hosts = Hosts::new();
    for line in text.lines() {
        let mut words = line.split('#').next().unwrap_or("").split_whitespace();
        let Some(Ok(ip)) = words
            .next()
            .map(|w| w.split('%').next().unwrap_or(w).parse::<IpAddr>())
        else {
            continue;
        };
        for name in words {
            let ips = hosts
                .entry(name.trim_end_matches('.').to_ascii_lowercase())
                .or_default();
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
    }
    hosts
}
