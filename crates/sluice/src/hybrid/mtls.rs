//! The cluster link's mutual TLS, with Kong's two modes (`cluster_mtls`):
//! - `shared`: control plane and data planes hold the same certificate (`cluster_cert`). The DP connects with
//!   SNI `kong_clustering`; each side accepts the other only if the peer's certificate is byte for byte its
//!   own ([`sluice_tls::Pinned`]; Kong compares SHA-256 digests on the CP and trusts the cert as its own CA
//!   on the DP: pinning the exact certificate is the same check, and needs no name in the certificate);
//! - `pki`: each side presents its own certificate, verified against `cluster_ca_cert`; the DP checks the CP's
//!   name (`cluster_server_name`, else the host of `cluster_control_plane`).

use anyhow::{anyhow, Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use sluice_tls::Pinned;
use std::sync::Arc;

/// `cluster_mtls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Shared,
    /// With the CA certificate file.
    Pki {
        ca: String,
    },
}

/// This node's cluster certificate chain and key, from `cluster_cert` / `cluster_cert_key`.
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Identity {
    pub fn load(cert: &str, key: &str) -> Result<Identity> {
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| anyhow!("cluster_cert {cert}: {e}"))?;
        if chain.is_empty() {
            return Err(anyhow!("cluster_cert {cert}: no certificate in the file"));
        }
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| anyhow!("cluster_cert_key {key}: {e}"))?;
        Ok(Identity { chain, key })
    }

    /// The certificate itself (what `shared` mode pins).
    fn leaf(&self) -> CertificateDer<'static> {
        self.chain[0].clone()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    sluice_tls::provider()
}

fn roots(ca: &str) -> Result<Arc<rustls::RootCertStore>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in
        CertificateDer::pem_file_iter(ca).map_err(|e| anyhow!("cluster_ca_cert {ca}: {e}"))?
    {
        roots
            .add(cert.map_err(|e| anyhow!("cluster_ca_cert {ca}: {e}"))?)
            .context("cluster_ca_cert")?;
    }
    Ok(Arc::new(roots))
}

/// A data plane's TLS config from its settings.
pub fn client_config_for(settings: &super::ClusterSettings) -> Result<Arc<rustls::ClientConfig>> {
    client_config(settings.identity()?, &settings.mtls)
}

/// The control plane's TLS config for `cluster_listen`: a client certificate is required.
pub fn server_config(identity: Identity, mode: &Mode) -> Result<Arc<rustls::ServerConfig>> {
    let verifier: Arc<dyn ClientCertVerifier> = match mode {
        Mode::Shared => Pinned::new(identity.leaf()),
        Mode::Pki { ca } => {
            rustls::server::WebPkiClientVerifier::builder_with_provider(roots(ca)?, provider())
                .build()
                .context("cluster_ca_cert")?
        }
    };
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.chain, identity.key)
        .context("cluster_cert")?;
    Ok(Arc::new(config))
}

/// A data plane's TLS config for connecting to its control plane.
pub fn client_config(identity: Identity, mode: &Mode) -> Result<Arc<rustls::ClientConfig>> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?;
    let builder = match mode {
        Mode::Shared => builder
            .dangerous()
            .with_custom_certificate_verifier(Pinned::new(identity.leaf())),
        Mode::Pki { ca } => builder.with_root_certificates(roots(ca)?),
    };
    let config = builder
        .with_client_auth_cert(identity.chain, identity.key)
        .context("cluster_cert")?;
    Ok(Arc::new(config))
}
