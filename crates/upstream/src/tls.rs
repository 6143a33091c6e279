//! The upstream TLS of services with `protocol: https` (and `grpcs`, `wss`, `tls`): the client config a
//! service's connections use, and the part of the pool key that keeps connections of different settings
//! or server names apart.
//!
//! Upstream client configs are cached for the life of the process by what they contain, so a reload keeps
//! their TLS session caches (resumed handshakes) and 10,000 https services share one config.

use rustc_hash::FxHasher;
use sluice_model::{Config, Service};
use sluice_tls::rustls::ClientConfig;
use sluice_tls::UpstreamTls as Spec;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// How a service talks TLS to its upstream.
#[derive(Debug, Clone)]
pub struct UpstreamTls {
    pub config: Arc<ClientConfig>,
    /// Identifies `config`'s contents: pooled connections are shared only between equal settings.
    pub key: u64,
}

/// The upstream TLS of a service (None for plain-text protocols).
pub fn upstream_tls(config: &Config, s: &Service) -> Result<Option<UpstreamTls>, String> {
    if !matches!(s.protocol.as_str(), "https" | "grpcs" | "wss" | "tls") {
        return Ok(None);
    }
    let mut spec = Spec {
        verify: s.tls_verify.unwrap_or(false),
        depth: s.tls_verify_depth,
        ..Spec::default()
    };
    for id in s.ca_certificates.iter().flatten() {
        let ca = config
            .ca_certificates
            .iter()
            .find(|c| c.id == *id)
            .ok_or_else(|| format!("service {}: ca_certificate {id} does not exist", s.id))?;
        spec.ca_pems.push(&ca.cert);
    }
    if let Some(r) = &s.client_certificate {
        let c = config
            .certificates
            .iter()
            .find(|c| c.id == r.id)
            .ok_or_else(|| {
                format!(
                    "service {}: client_certificate {} does not exist",
                    s.id, r.id
                )
            })?;
        spec.client_cert = Some((&c.cert, &c.key));
    }
    let key = spec_key(&spec);
    static CACHE: OnceLock<Mutex<HashMap<u64, Arc<ClientConfig>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(config) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(Some(UpstreamTls { config, key }));
    }
    let built = sluice_tls::client_config(&spec).map_err(|e| format!("service {}: {e}", s.id))?;
    if let Ok(mut c) = cache.lock() {
        if c.len() > 1024 {
            c.clear();
        }
        c.insert(key, built.clone());
    }
    Ok(Some(UpstreamTls { config: built, key }))
}

fn spec_key(spec: &Spec<'_>) -> u64 {
    let mut h = FxHasher::default();
    (spec.verify, spec.depth, &spec.ca_pems, spec.client_cert).hash(&mut h);
    h.finish() | 1
}

/// The pool key part for a TLS connection: settings and server name (0 is plain text).
pub fn pool_key(tls: &UpstreamTls, sni: &str) -> u64 {
    let mut h = FxHasher::default();
    (tls.key, sni).hash(&mut h);
    h.finish() | 1
}
