//! An `hmacauth_credentials` credential made ready to verify signatures: indexed once per snapshot by
//! [`crate::Credentials`], with its secret keyed for each algorithm a request names (ring's `hmac::Key`
//! holds the inner and outer pad states, so a request hashes only its signing string and the outer block:
//! two SHA-256 blocks fewer than keying the secret per request, ~7k instructions of every request).

use super::signature::Algorithm;
use ring::hmac;
use sluice_model::HmacAuthCredential;
use std::sync::OnceLock;

/// A credential with its keys, each made the first time a request names its algorithm (a snapshot of many
/// credentials is not slowed by keys no request uses).
pub struct HmacCredential {
    pub credential: HmacAuthCredential,
    /// By [`Algorithm::index`].
    keys: [OnceLock<hmac::Key>; Algorithm::COUNT],
}

impl HmacCredential {
    pub fn new(credential: &HmacAuthCredential) -> HmacCredential {
        HmacCredential {
            credential: credential.clone(),
            keys: Default::default(),
        }
    }

    /// Whether `signature` (decoded) is the `algorithm` HMAC of `data` with this secret, compared in
    /// constant time (a shorter or longer signature never matches).
    pub fn verify(&self, algorithm: Algorithm, data: &[u8], signature: &[u8]) -> bool {
        let key = self.keys[algorithm.index()]
            .get_or_init(|| algorithm.key(self.credential.secret.as_bytes()));
        hmac::verify(key, data, signature).is_ok()
    }
}
