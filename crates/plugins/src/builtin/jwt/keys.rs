//! A `jwt_secrets` credential made ready to verify signatures: built once per snapshot when
//! [`crate::Credentials`] indexes it (the public key parsed, the HMAC keys derived), used per request.
//!
//! HMAC tags are compared in constant time (`ring::hmac::verify`). RSA (PKCS#1 v1.5 and PSS), ECDSA P-256 and
//! P-384 and Ed25519 are verified with ring; ECDSA P-521 (ES512), which ring lacks, with RustCrypto's `p521`.

use super::token::Alg;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use ring::{hmac, signature};
use sluice_model::JwtSecret;
use sluice_tls::{Curve, PublicKey};

/// Kong's base64 decoding for tokens and `secret_is_base64` secrets: the URL alphabet, padding optional.
pub(super) const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// What verifies a token's signature for one credential.
pub(super) enum Verifier {
    /// HS*: the secret as given, and base64url-decoded (None when it does not decode) for
    /// `secret_is_base64`.
    Hmac {
        plain: hmac::Key,
        decoded: Option<hmac::Key>,
    },
    /// RS*, PS*, ES256/384, EdDSA: ring's algorithm with the key bytes it takes.
    Ring(&'static dyn signature::VerificationAlgorithm, Vec<u8>),
    /// ES512.
    P521(p521::ecdsa::VerifyingKey),
    /// A public key of another type than the algorithm's, or one ring refuses: nothing verifies.
    Never,
    /// An asymmetric algorithm without a usable public key (Kong allows none, or one that does not parse,
    /// for ES*): "Invalid key/secret".
    Missing,
}

/// A credential with its verifier.
pub struct JwtCredential {
    pub secret: JwtSecret,
    pub(super) alg: Alg,
    pub(super) verifier: Verifier,
}

impl JwtCredential {
    /// Indexes `secret`; its algorithm and key were checked when the config was validated.
    pub fn new(secret: &JwtSecret) -> JwtCredential {
        let alg = Alg::from_name(&secret.algorithm).unwrap_or(Alg::HS256);
        let verifier = verifier(alg, secret);
        JwtCredential {
            secret: secret.clone(),
            alg,
            verifier,
        }
    }
}

fn verifier(alg: Alg, secret: &JwtSecret) -> Verifier {
    use signature as s;
    let hmac_alg = match alg {
        Alg::HS256 => Some(hmac::HMAC_SHA256),
        Alg::HS384 => Some(hmac::HMAC_SHA384),
        Alg::HS512 => Some(hmac::HMAC_SHA512),
        _ => None,
    };
    if let Some(h) = hmac_alg {
        let raw = secret.secret.as_bytes();
        return Verifier::Hmac {
            plain: hmac::Key::new(h, raw),
            decoded: BASE64URL.decode(raw).ok().map(|d| hmac::Key::new(h, &d)),
        };
    }
    let Some(pem) = &secret.rsa_public_key else {
        return Verifier::Missing;
    };
    // Only an ES key can be unparsable here (the schema checks the others): no key to verify with.
    let Ok(key) = sluice_tls::public_key(pem) else {
        return Verifier::Missing;
    };
    let ring = |a: &'static dyn s::VerificationAlgorithm, bytes: Vec<u8>| Verifier::Ring(a, bytes);
    match (alg, key) {
        (Alg::RS256, PublicKey::Rsa(k)) => ring(&s::RSA_PKCS1_2048_8192_SHA256, k),
        (Alg::RS384, PublicKey::Rsa(k)) => ring(&s::RSA_PKCS1_2048_8192_SHA384, k),
        (Alg::RS512, PublicKey::Rsa(k)) => ring(&s::RSA_PKCS1_2048_8192_SHA512, k),
        (Alg::PS256, PublicKey::Rsa(k)) => ring(&s::RSA_PSS_2048_8192_SHA256, k),
        (Alg::PS384, PublicKey::Rsa(k)) => ring(&s::RSA_PSS_2048_8192_SHA384, k),
        (Alg::PS512, PublicKey::Rsa(k)) => ring(&s::RSA_PSS_2048_8192_SHA512, k),
        (Alg::ES256, PublicKey::Ec(Curve::P256, k)) => ring(&s::ECDSA_P256_SHA256_FIXED, k),
        (Alg::ES384, PublicKey::Ec(Curve::P384, k)) => ring(&s::ECDSA_P384_SHA384_FIXED, k),
        (Alg::ES512, PublicKey::Ec(Curve::P521, k)) => {
            match p521::ecdsa::VerifyingKey::from_sec1_bytes(&k) {
                Ok(v) => Verifier::P521(v),
                Err(_) => Verifier::Never,
            }
        }
        (Alg::EdDSA, PublicKey::Ed25519(k)) => ring(&s::ED25519, k),
        _ => Verifier::Never,
    }
}

/// Why a signature was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Rejected {
    /// Kong's "Invalid key/secret": no key to verify with.
    NoKey,
    /// Kong's "Invalid signature".
    Signature,
}

impl JwtCredential {
    /// Checks `signature` over `signed` (the token's `header.claims` text). `base64_secret`: the plugin's
    /// `secret_is_base64`, for HS* secrets.
    pub(super) fn verify(
        &self,
        signed: &[u8],
        sig: &[u8],
        base64_secret: bool,
    ) -> Result<(), Rejected> {
        let ok = match &self.verifier {
            Verifier::Hmac { plain, decoded } => {
                let key = if base64_secret {
                    decoded.as_ref().ok_or(Rejected::NoKey)?
                } else {
                    plain
                };
                hmac::verify(key, signed, sig).is_ok()
            }
            Verifier::Ring(alg, key) => signature::UnparsedPublicKey::new(*alg, key)
                .verify(signed, sig)
                .is_ok(),
            Verifier::P521(key) => {
                use p521::ecdsa::signature::Verifier as _;
                p521::ecdsa::Signature::from_slice(sig)
                    .is_ok_and(|s| key.verify(signed, &s).is_ok())
            }
            Verifier::Never => false,
            Verifier::Missing => return Err(Rejected::NoKey),
        };
        if ok {
            Ok(())
        } else {
            Err(Rejected::Signature)
        }
    }
}
