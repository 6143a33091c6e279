//! Unit tests: keys of every accepted form parse to the right variant; anything else is "invalid key".

use super::*;

/// A 2048-bit RSA public key, as SubjectPublicKeyInfo and as PKCS#1 (made with Python's `cryptography`).
const RSA_SPKI: &str = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtznIk3KBlyfOa25koFrM\nYW3lTYbipSy4cAt+GzVBydFIj9CKpuMlm+8r1GbT/iVDRD1e5mqes5Mrz2ryRsI3\nl0E8w9i2VVkvWTff8ShqcyPQqCs1XEUtPFhUWQd8r42fSTFJ4ilX5cdDUuesKbYt\n1KjxqLIac7PpnSSnNNAKIgxuKgWbR20A1FVoGkdWmm1OX9iqs/MhRGJqz9B6jOXo\nY32h7drsh3dGSV1YyqzDG8SSbgugf2x/fze0oRXpe0cxJsU6kwagkTklS/o83FBn\n/A08/ktDeFvMxWU6OorUounVGgVFcW+6hoHmHKXXYeOrkTZpBa+U/I8hh9DDP1af\nRQIDAQAB\n-----END PUBLIC KEY-----";
const RSA_PKCS1: &str = "-----BEGIN RSA PUBLIC KEY-----\nMIIBCgKCAQEAtznIk3KBlyfOa25koFrMYW3lTYbipSy4cAt+GzVBydFIj9CKpuMl\nm+8r1GbT/iVDRD1e5mqes5Mrz2ryRsI3l0E8w9i2VVkvWTff8ShqcyPQqCs1XEUt\nPFhUWQd8r42fSTFJ4ilX5cdDUuesKbYt1KjxqLIac7PpnSSnNNAKIgxuKgWbR20A\n1FVoGkdWmm1OX9iqs/MhRGJqz9B6jOXoY32h7drsh3dGSV1YyqzDG8SSbgugf2x/\nfze0oRXpe0cxJsU6kwagkTklS/o83FBn/A08/ktDeFvMxWU6OorUounVGgVFcW+6\nhoHmHKXXYeOrkTZpBa+U/I8hh9DDP1afRQIDAQAB\n-----END RSA PUBLIC KEY-----";

fn spki_of(alg: &'static rcgen::SignatureAlgorithm) -> String {
    rcgen::KeyPair::generate_for(alg)
        .expect("key")
        .public_key_pem()
}

#[test]
fn rsa_keys_parse_in_both_forms_to_the_same_pkcs1_bytes() {
    let a = public_key(RSA_SPKI).expect("spki");
    let b = public_key(RSA_PKCS1).expect("pkcs1");
    assert!(matches!(a, PublicKey::Rsa(_)));
    assert_eq!(a, b);
}

#[test]
fn ec_and_ed25519_keys_parse_with_their_curve() {
    let p256 = public_key(&spki_of(&rcgen::PKCS_ECDSA_P256_SHA256)).expect("p256");
    assert!(matches!(p256, PublicKey::Ec(Curve::P256, ref b) if b.len() == 65));
    let p384 = public_key(&spki_of(&rcgen::PKCS_ECDSA_P384_SHA384)).expect("p384");
    assert!(matches!(p384, PublicKey::Ec(Curve::P384, ref b) if b.len() == 97));
    let ed = public_key(&spki_of(&rcgen::PKCS_ED25519)).expect("ed25519");
    assert!(matches!(ed, PublicKey::Ed25519(ref b) if b.len() == 32));
}

#[test]
fn garbage_truncated_and_private_keys_are_invalid() {
    for bad in [
        "",
        "not a key",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
        &RSA_SPKI.replace("MIIB", "MIIC"),
        &rcgen::KeyPair::generate().expect("key").serialize_pem(),
    ] {
        assert_eq!(public_key(bad), Err("invalid key".to_string()), "{bad}");
    }
}
