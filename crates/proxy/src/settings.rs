//! Proxy settings: listen addresses, workers, trusted IPs, and Kong's `headers` setting.

use crate::listen::ListenAddr;
use std::time::Duration;

/// What the proxy needs from the node settings.
#[derive(Debug, Clone)]
pub struct ProxySettings {
    pub listen: Vec<ListenAddr>,
    pub workers: usize,
    /// Peers whose `X-Forwarded-*` headers are believed.
    pub trusted_ips: Vec<ipnet::IpNet>,
    pub headers: HeaderSettings,
    /// Idle upstream connections kept per target address and worker.
    pub upstream_keepalive: usize,
    pub upstream_idle_timeout: Duration,
}

impl Default for ProxySettings {
    fn default() -> Self {
        ProxySettings {
            listen: Vec::new(),
            workers: 1,
            trusted_ips: Vec::new(),
            headers: HeaderSettings::default(),
            upstream_keepalive: 256,
            upstream_idle_timeout: Duration::from_secs(60),
        }
    }
}

/// Which gateway headers are added (Kong's `headers` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderSettings {
    pub via: bool,
    pub server: bool,
    pub upstream_latency: bool,
    pub proxy_latency: bool,
    pub response_latency: bool,
    pub request_id: bool,
    pub upstream_status: bool,
}

impl Default for HeaderSettings {
    fn default() -> Self {
        HeaderSettings::parse("server_tokens, latency_tokens, X-Kong-Request-Id")
            .unwrap_or(HeaderSettings::OFF)
    }
}

impl HeaderSettings {
    const OFF: HeaderSettings = HeaderSettings {
        via: false,
        server: false,
        upstream_latency: false,
        proxy_latency: false,
        response_latency: false,
        request_id: false,
        upstream_status: false,
    };

    /// Parses Kong's comma-separated list (`server_tokens`, `latency_tokens`, header names, or `off`).
    pub fn parse(value: &str) -> Result<HeaderSettings, String> {
        let mut h = HeaderSettings::OFF;
        for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.to_ascii_lowercase().as_str() {
                "off" => return Ok(HeaderSettings::OFF),
                "server_tokens" => (h.via, h.server) = (true, true),
                "latency_tokens" => {
                    (h.upstream_latency, h.proxy_latency, h.response_latency) = (true, true, true)
                }
                "via" => h.via = true,
                "server" => h.server = true,
                "x-kong-upstream-latency" => h.upstream_latency = true,
                "x-kong-proxy-latency" => h.proxy_latency = true,
                "x-kong-response-latency" => h.response_latency = true,
                "x-kong-request-id" => h.request_id = true,
                "x-kong-upstream-status" => h.upstream_status = true,
                "x-kong-admin-latency" | "x-kong-admin-request-id" => {}
                other => return Err(format!("unknown header '{other}'")),
            }
        }
        Ok(h)
    }
}
