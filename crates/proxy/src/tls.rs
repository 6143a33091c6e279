//! TLS in the proxy: the acceptor of `ssl` listeners, which reads the live snapshot's certificates
//! (`snapshot::certs`) at each handshake, so a reload changes certificates without a restart. The upstream
//! TLS of services with `protocol: https` is `sluice_upstream::tls`.

use crate::snapshot::SharedSnapshot;
use sluice_tls::{CertPair, CertSource, CertStore, SniResolver};
use std::sync::Arc;

/// Serves the live snapshot's certificates to the resolver.
struct LiveCerts(SharedSnapshot);

impl std::fmt::Debug for LiveCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveCerts")
    }
}

impl CertSource for LiveCerts {
    fn with_certs(&self, f: &mut dyn FnMut(&CertStore)) {
        f(&self.0.load().certs)
    }
}

/// The acceptor of a proxy `ssl` listener.
pub(crate) fn acceptor(
    snapshot: &SharedSnapshot,
    default: &CertPair,
    http2: bool,
) -> std::io::Result<tokio_rustls::TlsAcceptor> {
    let resolver = SniResolver::new(Some(Arc::new(LiveCerts(snapshot.clone()))), default.clone());
    sluice_tls::server_config(Arc::new(resolver), http2)
        .map(tokio_rustls::TlsAcceptor::from)
        .map_err(std::io::Error::other)
}
