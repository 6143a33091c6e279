//! oauth2 client secrets stored hashed (`hash_secret: true`): Kong's PBKDF2 form in PHC notation,
//! `$pbkdf2-sha512$i=10000,l=32$<salt>$<hash>` (unpadded base64), made when a credential is written and
//! checked by the oauth2 plugin's token endpoint. Secrets hashed by Kong verify here and the other way round.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use ring::pbkdf2;
use std::num::NonZeroU32;

const ITERATIONS: u32 = 10_000;
const HASH_LEN: usize = 32;
const SALT_LEN: usize = 16;
const PREFIX: &str = "$pbkdf2-";

/// Whether `stored` is already a hash this module made (so a credential written again is not hashed twice).
pub fn is_hashed(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

/// `secret` hashed with a fresh random salt.
pub fn hash(secret: &str) -> String {
    let salt: [u8; SALT_LEN] = rand::random();
    let mut out = [0u8; HASH_LEN];
    let iterations = NonZeroU32::new(ITERATIONS).unwrap_or(NonZeroU32::MIN);
    pbkdf2::derive(
        pbkdf2::PBKDF2_HMAC_SHA512,
        iterations,
        &salt,
        secret.as_bytes(),
        &mut out,
    );
    format!(
        "{PREFIX}sha512$i={ITERATIONS},l={HASH_LEN}${}${}",
        STANDARD_NO_PAD.encode(salt),
        STANDARD_NO_PAD.encode(out)
    )
}

/// Whether `secret` matches the PHC string `stored` (in constant time); false for anything malformed.
pub fn verify(secret: &str, stored: &str) -> bool {
    let mut parts = stored.split('$');
    let (Some(""), Some(id), Some(params), Some(salt), Some(hash), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let algorithm = match id.strip_prefix("pbkdf2-") {
        Some("sha512") => pbkdf2::PBKDF2_HMAC_SHA512,
        Some("sha384") => pbkdf2::PBKDF2_HMAC_SHA384,
        Some("sha256") => pbkdf2::PBKDF2_HMAC_SHA256,
        Some("sha1") => pbkdf2::PBKDF2_HMAC_SHA1,
        _ => return false,
    };
    let iterations = params
        .split(',')
        .find_map(|p| p.trim().strip_prefix("i="))
        .and_then(|i| i.trim().parse::<u32>().ok())
        .and_then(NonZeroU32::new);
    let decode = |s: &str| {
        STANDARD_NO_PAD
            .decode(s.trim())
            .or_else(|_| STANDARD.decode(s.trim()))
    };
    let (Some(iterations), Ok(salt), Ok(hash)) = (iterations, decode(salt), decode(hash)) else {
        return false;
    };
    pbkdf2::verify(algorithm, iterations, &salt, secret.as_bytes(), &hash).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_are_salted() {
        let a = hash("s3cret");
        assert!(a.starts_with("$pbkdf2-sha512$i=10000,l=32$"), "{a}");
        assert!(is_hashed(&a) && !is_hashed("s3cret"));
        assert!(verify("s3cret", &a));
        assert!(!verify("s3cret!", &a));
        assert_ne!(a, hash("s3cret"));
        for bad in [
            "",
            "s3cret",
            "$pbkdf2-md5$i=1$AA$AA",
            "$pbkdf2-sha512$i=0$AA$AA",
        ] {
            assert!(!verify("s3cret", bad), "{bad}");
        }
    }

    /// A hash in Kong's form made independently (Python's hashlib.pbkdf2_hmac, sha512, 10000 rounds, salt
    /// "0123456789abcdef", secret "test").
    #[test]
    fn verifies_a_hash_made_elsewhere() {
        let salt = STANDARD_NO_PAD.encode(b"0123456789abcdef");
        let stored = format!("$pbkdf2-sha512$i=10000,l=32${salt}${KNOWN}");
        assert!(verify("test", &stored), "{stored}");
        assert!(!verify("tess", &stored));
    }

    const KNOWN: &str = "cN+P7cmLrxG5nwY09kDXs68BtZgKhyw8CoJkqOHvUeQ";
}
