//! A verifier that accepts exactly one certificate, on either side of a connection: hybrid mode's
//! `cluster_mtls = shared`, where every node holds the same cluster certificate and a peer is accepted only
//! if it presents that certificate (Kong compares SHA-256 digests; comparing the bytes is the same check).
//! Handshake signatures are verified as usual, so the peer also holds the key.

use crate::signatures::handshake_signatures;
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::DistinguishedName;
use std::sync::Arc;

/// Accepts only `cert` as the peer's certificate.
#[derive(Debug)]
pub struct Pinned {
    cert: CertificateDer<'static>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl Pinned {
    pub fn new(cert: CertificateDer<'static>) -> Arc<Pinned> {
        Arc::new(Pinned {
            cert,
            provider: crate::provider(),
        })
    }

    fn check(&self, cert: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        match cert.as_ref() == self.cert.as_ref() {
            true => Ok(()),
            false => Err(rustls::Error::General(
                "the peer's certificate is not this cluster's certificate (cluster_mtls = shared)"
                    .into(),
            )),
        }
    }
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|_| ServerCertVerified::assertion())
    }

    handshake_signatures!(self => &self.provider.signature_verification_algorithms);
}

impl ClientCertVerifier for Pinned {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|_| ClientCertVerified::assertion())
    }

    handshake_signatures!(self => &self.provider.signature_verification_algorithms);
}
