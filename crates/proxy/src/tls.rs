//! TLS in the proxy: the certificates of a snapshot by SNI, and the acceptor of `ssl` listeners (which reads
//! the live snapshot at each handshake, so a reload changes certificates without a restart). The upstream
//! TLS of services with `protocol: https` is `sluice_upstream::tls`.

use crate::snapshot::SharedSnapshot;
use sluice_model::Config;
use sluice_tls::{CertPair, CertSource, CertStore, SniResolver};
use std::sync::Arc;

/// The certificates of a config by SNI name (each certificate under the `snis` that name it).
pub(crate) fn cert_store(config: &Config) -> Result<CertStore, Vec<String>> {
    let mut store = CertStore::default();
    let mut errors = Vec::new();
    for cert in &config.certificates {
        let names = config
            .snis
            .iter()
            .filter(|s| s.certificate.id == cert.id)
            .map(|s| s.name.as_str());
        match CertPair::new(
            &cert.cert,
            &cert.key,
            cert.cert_alt.as_deref(),
            cert.key_alt.as_deref(),
        ) {
            Ok(pair) => store.add(names, pair),
            Err(e) => errors.push(format!("certificate {}: {e}", cert.id)),
        }
    }
    if errors.is_empty() {
        Ok(store)
    } else {
        Err(errors)
    }
}

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
