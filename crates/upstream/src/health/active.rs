//! An upstream's active health check, compiled from Kong's `healthchecks.active`: the protocol (`tcp`,
//! `http(s)`, or `grpc(s)`: the gRPC health service), path, headers and timeout of a probe, how often
//! healthy and unhealthy targets are probed, and the rules that turn probe results into health. The probes themselves are [`crate::probe`]; the proxy runs them.

use super::Rules;
use http::{HeaderName, HeaderValue};
use sluice_model::ActiveHealthcheck;
use std::time::Duration;

/// The protocol of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tcp,
    Http,
    Https {
        verify: bool,
    },
    /// The gRPC health service over h2c.
    Grpc,
    /// The gRPC health service over TLS (ALPN `h2`).
    Grpcs {
        verify: bool,
    },
}

/// An upstream's active check, compiled.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: Kind,
    pub timeout: Duration,
    pub concurrency: usize,
    pub http_path: String,
    pub https_sni: Option<String>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// None: healthy targets are not probed.
    pub healthy_interval: Option<Duration>,
    /// None: unhealthy targets are not probed.
    pub unhealthy_interval: Option<Duration>,
    pub rules: Rules,
}

impl Spec {
    /// None when both intervals are 0 (Kong: active checks off).
    pub fn new(a: &ActiveHealthcheck) -> Option<Spec> {
        let interval = |s: Option<f64>| {
            s.filter(|s| *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
        };
        let healthy_interval = interval(a.healthy.interval);
        let unhealthy_interval = interval(a.unhealthy.interval);
        if healthy_interval.is_none() && unhealthy_interval.is_none() {
            return None;
        }
        let verify = a.https_verify_certificate;
        let kind = match a.kind.as_str() {
            "tcp" => Kind::Tcp,
            "https" => Kind::Https { verify },
            "grpc" => Kind::Grpc,
            "grpcs" => Kind::Grpcs { verify },
            _ => Kind::Http,
        };
        let headers = a
            .headers
            .iter()
            .flatten()
            .flat_map(|(name, values)| values.iter().map(move |v| (name, v)))
            .filter_map(|(name, v)| {
                Some((
                    HeaderName::from_bytes(name.as_bytes()).ok()?,
                    HeaderValue::from_str(v).ok()?,
                ))
            })
            .collect();
        Some(Spec {
            kind,
            timeout: Duration::try_from_secs_f64(a.timeout).unwrap_or(Duration::from_secs(1)),
            concurrency: (a.concurrency as usize).max(1),
            http_path: a.http_path.clone(),
            https_sni: a.https_sni.clone(),
            headers,
            healthy_interval,
            unhealthy_interval,
            rules: Rules::new(&a.healthy, &a.unhealthy),
        })
    }

    /// How often a target in this state is probed (None: not at all).
    pub fn interval(&self, healthy: bool) -> Option<Duration> {
        if healthy {
            self.healthy_interval
        } else {
            self.unhealthy_interval
        }
    }
}
