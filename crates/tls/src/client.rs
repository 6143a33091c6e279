//! Client configs for TLS to upstreams (services with `protocol: https`): verification on or off
//! (`tls_verify`), the chain depth limit (`tls_verify_depth`), trusted CAs (the service's `ca_certificates`,
//! else the system store, as Kong's `lua_ssl_trusted_certificate = system`), and a client certificate for
//! mTLS (`client_certificate`). Built when a snapshot is compiled and shared by every worker; rustls keeps
//! session tickets per config, so reconnects resume.

use crate::pem::certified_key;
use crate::signatures::handshake_signatures;
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, RootCertStore, SignatureScheme};
use std::sync::{Arc, OnceLock};

/// What a service asks of its upstream TLS.
#[derive(Debug, Default, Clone)]
pub struct UpstreamTls<'a> {
    pub verify: bool,
    /// Most intermediates accepted between the leaf and the trust anchor (`proxy_ssl_verify_depth`).
    pub depth: Option<u32>,
    /// PEM texts of trusted CAs; empty means the system store.
    pub ca_pems: Vec<&'a str>,
    /// PEM certificate and key presented to the upstream.
    pub client_cert: Option<(&'a str, &'a str)>,
}

/// The system's trusted CAs (Debian and Red Hat bundle paths), read once.
pub fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        [
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem",
        ]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|pem| crate::pem::certificates(&pem).ok())
        .unwrap_or_default()
    })
}

/// Builds the client config for one kind of upstream TLS.
pub fn client_config(spec: &UpstreamTls<'_>) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let verifier = verifier(spec)?;
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match spec.client_cert {
        Some((cert, key)) => {
            builder.with_client_cert_resolver(Arc::new(ClientCert(certified_key(cert, key)?)))
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The client config of a connection that is not HTTP (PostgreSQL, Redis, LDAP): the system's CAs when
/// `verify` (Kong's `lua_ssl_trusted_certificate = system`), any certificate otherwise, and no ALPN (none of
/// those protocols negotiates one).
pub fn client_config_without_alpn(verify: bool) -> Result<Arc<ClientConfig>, String> {
    let spec = UpstreamTls {
        verify,
        ..Default::default()
    };
    let mut config = (*client_config(&spec)?).clone();
    config.alpn_protocols.clear();
    Ok(Arc::new(config))
}

/// The verifier of `tls_verify: false`: accepts any server certificate (tests use it for their clients too).
pub fn unverified() -> Arc<dyn ServerCertVerifier> {
    Arc::new(Verifier {
        webpki: None,
        depth: None,
        provider: crate::provider(),
    })
}

/// Presents one certificate to every upstream that asks.
#[derive(Debug)]
struct ClientCert(Arc<CertifiedKey>);

impl ResolvesClientCert for ClientCert {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// The server-certificate check a spec asks for.
pub(crate) fn verifier(spec: &UpstreamTls<'_>) -> Result<Arc<Verifier>, String> {
    let provider = crate::provider();
    let webpki = if spec.verify {
        let mut roots = RootCertStore::empty();
        if spec.ca_pems.is_empty() {
            roots.add_parsable_certificates(system_roots().iter().cloned());
        } else {
            for pem in &spec.ca_pems {
                for cert in crate::pem::certificates(pem)? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("invalid CA certificate: {e}"))?;
                }
            }
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| e.to_string())?;
        Some(webpki)
    } else {
        None
    };
    Ok(Arc::new(Verifier {
        webpki,
        depth: spec.depth,
        provider,
    }))
}

/// The server-certificate check of one config: WebPKI verification with the chain depth limit, or none
/// (`tls_verify` off). Handshake signatures are always checked, so the session keys belong to the
/// certificate shown.
#[derive(Debug)]
pub(crate) struct Verifier {
    webpki: Option<Arc<WebPkiServerVerifier>>,
    depth: Option<u32>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        if let Some(depth) = self.depth {
            // OpenSSL's depth: level 0 is the leaf, levels 1..=depth may be intermediates.
            if intermediates.len() as u64 > u64::from(depth) {
                return Err(rustls::Error::General(format!(
                    "certificate chain longer than tls_verify_depth {depth}"
                )));
            }
        }
        webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }

    handshake_signatures!(self => &self.provider.signature_verification_algorithms);
}
