//! Public keys given as PEM text (the jwt plugin's `jwt_secrets.rsa_public_key`): parsed once, when a config
//! is validated (Kong's "invalid key" check) and when the jwt plugin indexes its credentials, never per
//! request.
//!
//! Accepted: a SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`) holding an RSA, EC (P-256, P-384, P-521)
//! or Ed25519 key, and a PKCS#1 RSA key (`-----BEGIN RSA PUBLIC KEY-----`). Other SPKI algorithms (Ed448,
//! DSA, other curves) parse, as OpenSSL would accept them, but as [`PublicKey::Unsupported`]: no signature
//! verifies against them.

use pkcs1::der::Decode;
use spki::ObjectIdentifier;

/// The curves of ES256, ES384 and ES512.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    P256,
    P384,
    P521,
}

/// A parsed public key, as the raw bytes verifiers take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// PKCS#1 `RSAPublicKey` DER (modulus and exponent).
    Rsa(Vec<u8>),
    /// A SEC1 point on the curve.
    Ec(Curve, Vec<u8>),
    /// The 32 key bytes.
    Ed25519(Vec<u8>),
    /// A well-formed key of an algorithm nothing here verifies with (named by its OID).
    Unsupported(String),
}

const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const P521: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");

/// The first key in `text`; any error is Kong's message, `invalid key`.
pub fn public_key(text: &str) -> Result<PublicKey, String> {
    let invalid = |_| "invalid key".to_string();
    let block = pem::parse(text.trim()).map_err(invalid)?;
    match block.tag() {
        "RSA PUBLIC KEY" => rsa(block.contents()),
        "PUBLIC KEY" => spki_key(block.contents()),
        _ => Err("invalid key".into()),
    }
}

/// A PKCS#1 key, checked to be a sequence of two integers.
fn rsa(der: &[u8]) -> Result<PublicKey, String> {
    pkcs1::RsaPublicKey::from_der(der).map_err(|_| "invalid key".to_string())?;
    Ok(PublicKey::Rsa(der.to_vec()))
}

fn spki_key(der: &[u8]) -> Result<PublicKey, String> {
    let info = spki::SubjectPublicKeyInfoRef::from_der(der).map_err(|_| "invalid key")?;
    let bits = info
        .subject_public_key
        .as_bytes()
        .ok_or("invalid key")?
        .to_vec();
    let oid = info.algorithm.oid;
    if oid == RSA {
        return rsa(&bits);
    }
    if oid == ED25519 {
        if bits.len() != 32 {
            return Err("invalid key".into());
        }
        return Ok(PublicKey::Ed25519(bits));
    }
    if oid == EC {
        let curve = info.algorithm.parameters_oid().map_err(|_| "invalid key")?;
        let curve = match curve {
            c if c == P256 => Curve::P256,
            c if c == P384 => Curve::P384,
            c if c == P521 => Curve::P521,
            other => return Ok(PublicKey::Unsupported(format!("EC curve {other}"))),
        };
        return Ok(PublicKey::Ec(curve, bits));
    }
    Ok(PublicKey::Unsupported(oid.to_string()))
}

#[cfg(test)]
mod tests;
