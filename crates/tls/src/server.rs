//! The server side: a certificate resolver that reads the live config at each handshake, and the rustls
//! `ServerConfig` for proxy and admin listeners (TLS 1.2 and 1.3, ALPN, session resumption by cache and tickets).

use crate::store::{CertPair, CertStore};
use rustls::server::{ClientHello, ResolvesServerCert, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use std::sync::Arc;

/// Where the resolver finds the certificates of the config that is live now (the proxy's snapshot).
pub trait CertSource: Send + Sync + std::fmt::Debug {
    /// Calls `f` with the current certificate store.
    fn with_certs(&self, f: &mut dyn FnMut(&CertStore));
}

/// Picks the certificate for each handshake: the live config's choice for the SNI, else the default.
#[derive(Debug)]
pub struct SniResolver {
    source: Option<Arc<dyn CertSource>>,
    default: CertPair,
}

impl SniResolver {
    /// `source` None serves `default` to everyone (the admin listener).
    pub fn new(source: Option<Arc<dyn CertSource>>, default: CertPair) -> SniResolver {
        SniResolver { source, default }
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let schemes = hello.signature_schemes();
        let mut chosen = None;
        if let Some(source) = &self.source {
            source.with_certs(&mut |store| {
                chosen = store.select(hello.server_name()).map(|p| p.choose(schemes))
            });
        }
        Some(chosen.unwrap_or_else(|| self.default.choose(schemes)))
    }
}

/// A server config for one listener. `http2` offers `h2` before `http/1.1` in ALPN (Kong's `http2` flag).
pub fn server_config(resolver: Arc<SniResolver>, http2: bool) -> Result<Arc<ServerConfig>, String> {
    let mut config = ServerConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    config.session_storage = ServerSessionMemoryCache::new(20_000);
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(|e| e.to_string())?;
    Ok(Arc::new(config))
}
