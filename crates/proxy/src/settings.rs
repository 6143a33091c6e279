//! Proxy settings: listen addresses, workers, trusted IPs, real-IP rules, Kong's `headers` setting, and
//! the DNS settings ([`DnsSettings`]).

use crate::listen::ListenAddr;
use sluice_upstream::dns::DnsSettings;
use std::time::Duration;

/// What the proxy needs from the node settings. Build it with `..ProxySettings::default()` so new fields
/// keep Kong's defaults.
#[derive(Debug, Clone)]
pub struct ProxySettings {
    /// Where to listen (Kong's `proxy_listen`, parsed by [`crate::parse_listen`]).
    pub listen: Vec<ListenAddr>,
    /// Kong's `stream_listen` (parsed by [`crate::parse_stream_listen`]); empty = off.
    pub stream_listen: Vec<crate::StreamListen>,
    /// Worker threads, each with its own runtime, listeners and upstream pool.
    pub workers: usize,
    /// Peers whose `X-Forwarded-*` and real-IP headers are believed (Kong's `trusted_ips`).
    pub trusted_ips: Vec<ipnet::IpNet>,
    /// Header carrying the client address when the peer is trusted (Kong's `real_ip_header`, lower-case).
    pub real_ip_header: String,
    /// Walk the real-IP header from the right past trusted addresses (Kong's `real_ip_recursive`).
    pub real_ip_recursive: bool,
    /// Gateway headers added to responses (Kong's `headers`).
    pub headers: HeaderSettings,
    /// Send `X-Kong-Request-Id` to the upstream (Kong's `headers_upstream`).
    pub upstream_request_id: bool,
    /// How upstream connections are kept between requests (Kong's `upstream_keepalive_*`).
    pub upstream_keepalive: sluice_upstream::pool::Keepalive,
    /// How long a client may take to send a request head (Kong's `client_header_timeout`).
    pub client_header_timeout: Duration,
    /// How long an idle keep-alive connection is kept after a response (nginx's `keepalive_timeout`); zero
    /// turns keep-alive off.
    pub keepalive_timeout: Duration,
    /// The longest wait between two reads of a request body (nginx's `client_body_timeout`): past it the
    /// request is answered 408 and its upstream request abandoned (HTTP/1.1: the connection closes; h2:
    /// the stream).
    pub client_body_timeout: Duration,
    /// The longest wait between two writes to a client that stopped reading (nginx's `send_timeout`): past
    /// it the connection is closed and the response's upstream connection dropped (h2: by an unanswered
    /// keep-alive PING, `worker::h2_builder`).
    pub send_timeout: Duration,
    /// Client connections per worker (nginx's `worker_connections`); one more is accepted and closed.
    pub worker_connections: usize,
    /// How large a request head may be (nginx's `large_client_header_buffers`).
    pub head_limits: sluice_h1::HeadLimits,
    /// The certificate `ssl` listeners present when no configured SNI matches (Kong's `ssl_cert`, or the
    /// generated default). Required when any listener has `ssl`.
    pub default_certificate: Option<sluice_tls::CertPair>,
    /// How service hosts and upstream targets are resolved (Kong's `dns_*` settings).
    pub dns: DnsSettings,
    /// Request buffering and the body size limit (`client_body_buffer_size`, `client_max_body_size`,
    /// the temporary directory).
    pub body_buffering: sluice_upstream::spool::BodyBuffering,
    /// Response buffering (`proxy_buffers`, `proxy_max_temp_file_size`, the temporary directory).
    pub response_buffering: sluice_upstream::readahead::ResponseBuffering,
}

impl Default for ProxySettings {
    fn default() -> Self {
        ProxySettings {
            listen: Vec::new(),
            stream_listen: Vec::new(),
            workers: 1,
            trusted_ips: Vec::new(),
            real_ip_header: "x-real-ip".into(),
            real_ip_recursive: false,
            headers: HeaderSettings::default(),
            upstream_request_id: true,
            upstream_keepalive: Default::default(),
            client_header_timeout: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(75),
            client_body_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            worker_connections: 16_384,
            head_limits: sluice_h1::HeadLimits::default(),
            default_certificate: None,
            dns: DnsSettings::default(),
            body_buffering: Default::default(),
            response_buffering: Default::default(),
        }
    }
}

/// Which gateway headers are added to responses (Kong's `headers` setting).
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
    /// Kong's default: `server_tokens, latency_tokens, X-Kong-Request-Id`.
    fn default() -> Self {
        HeaderSettings {
            upstream_status: false,
            ..HeaderSettings::ALL
        }
    }
}

impl HeaderSettings {
    /// No gateway header at all (`headers = off`).
    pub const OFF: HeaderSettings = HeaderSettings {
        via: false,
        server: false,
        upstream_latency: false,
        proxy_latency: false,
        response_latency: false,
        request_id: false,
        upstream_status: false,
    };

    /// Every gateway header.
    pub(crate) const ALL: HeaderSettings = HeaderSettings {
        via: true,
        server: true,
        upstream_latency: true,
        proxy_latency: true,
        response_latency: true,
        request_id: true,
        upstream_status: true,
    };

    /// Parses Kong's comma-separated list: `server_tokens` (Via + Server), `latency_tokens` (the three
    /// latency headers), single header names, or `off`.
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

#[cfg(test)]
mod tests;
