//! PEM parsing and the checks Kong makes on `certificates` entities: the PEM parses, the key matches the
//! certificate, and an alternate pair uses the other key type (one RSA, one ECDSA).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::SignatureAlgorithm;
use std::sync::Arc;

/// The key type of a certificate pair: a certificate entity may hold one pair of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Ecdsa,
    Rsa,
    Ed25519,
    Other,
}

impl KeyKind {
    fn of(key: &CertifiedKey) -> KeyKind {
        match key.key.algorithm() {
            SignatureAlgorithm::ECDSA => KeyKind::Ecdsa,
            SignatureAlgorithm::RSA => KeyKind::Rsa,
            SignatureAlgorithm::ED25519 => KeyKind::Ed25519,
            _ => KeyKind::Other,
        }
    }
}

/// Every certificate in a PEM text, leaf first (a chain may follow the leaf).
pub fn certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid certificate: {e}"))?;
    if certs.is_empty() {
        return Err("invalid certificate: no CERTIFICATE block in the PEM".into());
    }
    Ok(certs)
}

/// The private key in a PEM text (PKCS#8, PKCS#1 RSA or SEC1 EC).
pub fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| format!("invalid key: {e}"))
}

/// A certificate chain with its signing key, checked to belong together.
pub(crate) fn certified_key(cert: &str, key: &str) -> Result<Arc<CertifiedKey>, String> {
    let chain = certificates(cert)?;
    let key = private_key(key)?;
    let provider = crate::provider();
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("invalid key: {e}"))?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(rustls::Error::InconsistentKeys(_)) => {
            return Err("certificate does not match key".into())
        }
        // webpki refuses to read some certificates Kong takes (X.509 v1): compare the keys directly.
        Err(e) => match (
            certified
                .end_entity_cert()
                .ok()
                .and_then(|c| crate::cert_spki::subject_public_key_info(c.as_ref())),
            certified.key.public_key(),
        ) {
            (Some(cert), Some(key)) if cert == key.as_ref() => {}
            (Some(_), Some(_)) => return Err("certificate does not match key".into()),
            _ => return Err(format!("invalid certificate: {e}")),
        },
    }
    Ok(Arc::new(certified))
}

/// Builds a pair and tells its key type.
pub(crate) fn typed_key(cert: &str, key: &str) -> Result<(Arc<CertifiedKey>, KeyKind), String> {
    let certified = certified_key(cert, key)?;
    let kind = KeyKind::of(&certified);
    Ok((certified, kind))
}

/// Checks a `certificates` entity as Kong does; each error names the field it is about (`None`: the whole
/// entity).
pub fn check_certificate(
    cert: &str,
    key: &str,
    cert_alt: Option<&str>,
    key_alt: Option<&str>,
) -> Vec<(Option<&'static str>, String)> {
    let mut errors = Vec::new();
    let field_errors = |e: String| -> (Option<&'static str>, String) {
        let field = if e.starts_with("invalid key") {
            "key"
        } else if e.starts_with("invalid certificate") {
            "cert"
        } else {
            return (None, e);
        };
        (Some(field), e)
    };
    let main = typed_key(cert, key).map_err(field_errors);
    if let Err(e) = &main {
        errors.push(e.clone());
    }
    match (cert_alt, key_alt) {
        (None, None) => {}
        (Some(c), Some(k)) => match typed_key(c, k) {
            Err(e) => {
                let (field, msg) = field_errors(e);
                errors.push((
                    field.map(|f| if f == "key" { "key_alt" } else { "cert_alt" }),
                    msg,
                ));
            }
            Ok((_, alt_kind)) => {
                if matches!(&main, Ok((_, kind)) if *kind == alt_kind) {
                    errors.push((
                        None,
                        "certificate and alternative certificate need to have different types \
                         (e.g. RSA and ECDSA); both are of the same type"
                            .into(),
                    ));
                }
            }
        },
        _ => errors.push((
            None,
            "all or none of these fields must be set: 'cert_alt', 'key_alt'".into(),
        )),
    }
    errors
}
