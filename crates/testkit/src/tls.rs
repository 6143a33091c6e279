//! TLS for tests: certificates made on the spot (a test CA, leaf and client certificates), an echo
//! upstream over TLS that reports the SNI it saw and whether the client showed a certificate, and a raw
//! handshake that tells which certificate, protocol and ALPN a server chose.

use crate::echo::{serve_echo, Background, TlsSeen};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A certificate with its key, as PEM (what configs hold) and the leaf as DER (what handshakes show).
#[derive(Clone)]
pub struct TestCert {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: Vec<u8>,
}

fn params(names: &[&str]) -> rcgen::CertificateParams {
    let mut p =
        rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("certificate params");
    p.distinguished_name.push(
        rcgen::DnType::CommonName,
        names.first().copied().unwrap_or("test"),
    );
    p
}

fn key() -> rcgen::KeyPair {
    rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key")
}

/// A self-signed ECDSA certificate for `names`.
pub fn self_signed(names: &[&str]) -> TestCert {
    let k = key();
    let cert = params(names).self_signed(&k).expect("self-signed");
    TestCert {
        cert_pem: cert.pem(),
        key_pem: k.serialize_pem(),
        der: cert.der().to_vec(),
    }
}

/// A certificate authority that issues leaf and client certificates.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
    pub pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = key();
        let mut p = params(&[name]);
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = p.self_signed(&key).expect("CA");
        TestCa {
            pem: cert.pem(),
            cert,
            key,
        }
    }

    /// A leaf certificate for `names`, signed by this CA.
    pub fn issue(&self, names: &[&str]) -> TestCert {
        let k = key();
        let cert = params(names)
            .signed_by(&k, &self.cert, &self.key)
            .expect("issue");
        TestCert {
            cert_pem: cert.pem(),
            key_pem: k.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates")
}

fn private_key(pem: &str) -> PrivateKeyDer<'static> {
    use rustls::pki_types::pem::PemObject;
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).expect("PEM key")
}

/// A TLS acceptor serving `cert`; with `client_ca`, clients must present a certificate signed by it.
pub(crate) fn acceptor(cert: &TestCert, client_ca: Option<&str>) -> tokio_rustls::TlsAcceptor {
    let builder = rustls::ServerConfig::builder_with_provider(sluice_tls::provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs(ca) {
                roots.add(c).expect("CA");
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                sluice_tls::provider(),
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(certs(&cert.cert_pem), private_key(&cert.key_pem))
        .expect("server config");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// The echo upstream over TLS. Its JSON gains `"tls": {"sni": ..., "client_cert": bool}`.
pub struct TlsEchoUpstream {
    server: Background,
    connections: Arc<AtomicU64>,
}

impl TlsEchoUpstream {
    /// Serves with `cert`; with `client_ca`, clients must present a certificate signed by it.
    pub fn start(cert: &TestCert, client_ca: Option<&str>) -> TlsEchoUpstream {
        let acceptor = acceptor(cert, client_ca);
        let connections = Arc::new(AtomicU64::new(0));
        let counter = connections.clone();
        let server = Background::start(move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, counter) = (acceptor.clone(), counter.clone());
                tokio::task::spawn_local(async move {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                    let (_, conn) = stream.get_ref();
                    let seen = TlsSeen {
                        sni: conn.server_name().map(String::from),
                        client_cert: conn.peer_certificates().is_some_and(|c| !c.is_empty()),
                    };
                    serve_echo(stream, "tls-echo".into(), None, Some(seen)).await;
                });
            }
        });
        TlsEchoUpstream {
            server,
            connections,
        }
    }

    pub fn port(&self) -> u16 {
        self.server.addr.port()
    }

    /// TLS connections completed so far (pooled requests share one).
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

/// What a server chose in a handshake.
#[derive(Debug)]
pub struct Handshake {
    /// The leaf certificate the server presented (DER).
    pub leaf: Vec<u8>,
    pub alpn: Option<String>,
    pub version: Option<rustls::ProtocolVersion>,
    pub resumed: bool,
}

/// A client config that accepts any server certificate, offering `alpn`; `tls12_only` limits it to TLS 1.2.
pub fn insecure_client(alpn: &[&str], tls12_only: bool) -> Arc<rustls::ClientConfig> {
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12_only {
        &[&rustls::version::TLS12]
    } else {
        rustls::DEFAULT_VERSIONS
    };
    let mut config = rustls::ClientConfig::builder_with_provider(sluice_tls::provider())
        .with_protocol_versions(versions)
        .expect("protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(sluice_tls::unverified())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    Arc::new(config)
}

/// Connects to 127.0.0.1:`port` with `sni` (None: no SNI) and reports the handshake.
pub async fn handshake(
    port: u16,
    sni: Option<&str>,
    config: Arc<rustls::ClientConfig>,
) -> Result<Handshake, String> {
    let mut config = (*config).clone();
    let name = match sni {
        Some(s) => ServerName::try_from(s.to_string()).map_err(|e| e.to_string())?,
        None => {
            config.enable_sni = false;
            ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?
        }
    };
    handshake_with(port, name, Arc::new(config)).await
}

/// Like [`handshake`], reusing `config` as given (so its session cache allows resumption).
pub async fn handshake_with(
    port: u16,
    name: ServerName<'static>,
    config: Arc<rustls::ClientConfig>,
) -> Result<Handshake, String> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (_, conn) = stream.get_ref();
    Ok(Handshake {
        leaf: conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.to_vec())
            .unwrap_or_default(),
        alpn: conn
            .alpn_protocol()
            .map(|a| String::from_utf8_lossy(a).into_owned()),
        version: conn.protocol_version(),
        resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
    })
}

/// A self-signed X.509 v1 certificate for `v1.test` (PEM), as Kong's own test certificates are
/// (`fixtures/README.md`).
pub const X509_V1_CERT: &str = include_str!("../fixtures/x509-v1.crt");
/// The key of [`X509_V1_CERT`] (PEM).
pub const X509_V1_KEY: &str = include_str!("../fixtures/x509-v1.key");

/// An HTTPS client that accepts any certificate and resolves `host` to 127.0.0.1 (so SNI is `host`).
pub fn https_client(host: &str, port: u16, http1_only: bool) -> reqwest::Client {
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .danger_accept_invalid_certs(true)
        .resolve(host, std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .timeout(std::time::Duration::from_secs(30));
    if http1_only {
        b = b.http1_only();
    }
    b.build().expect("https client")
}
