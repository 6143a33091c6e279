//! `jwt_secrets`: nested and top-level, generated key and secret, Kong's algorithm list and public key check.

use super::*;

const RSA_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtznIk3KBlyfOa25koFrM\nYW3lTYbipSy4cAt+GzVBydFIj9CKpuMlm+8r1GbT/iVDRD1e5mqes5Mrz2ryRsI3\nl0E8w9i2VVkvWTff8ShqcyPQqCs1XEUtPFhUWQd8r42fSTFJ4ilX5cdDUuesKbYt\n1KjxqLIac7PpnSSnNNAKIgxuKgWbR20A1FVoGkdWmm1OX9iqs/MhRGJqz9B6jOXo\nY32h7drsh3dGSV1YyqzDG8SSbgugf2x/fze0oRXpe0cxJsU6kwagkTklS/o83FBn\n/A08/ktDeFvMxWU6OorUounVGgVFcW+6hoHmHKXXYeOrkTZpBa+U/I8hh9DDP1af\nRQIDAQAB\n-----END PUBLIC KEY-----";

#[test]
fn nested_and_top_level_secrets_load_with_defaults_and_generated_values() {
    let text = "_format_version: '3.0'\nconsumers:\n- username: u\n  jwt_secrets:\n  - {}\n  - key: k2\n    secret: s2\n    algorithm: HS512\njwt_secrets:\n- consumer: u\n  key: k3\n";
    let c = ok(text);
    assert_eq!(c.jwt_secrets.len(), 3);
    let generated = &c.jwt_secrets[0];
    assert_eq!(generated.algorithm, "HS256");
    assert_eq!((generated.key.len(), generated.secret.len()), (32, 32));
    assert_eq!(generated.consumer.id, c.consumers[0].id);
    // Both are random, as Kong's: a file that leaves them out gets new ones on each load.
    let again = ok(text);
    assert_ne!(again.jwt_secrets[0].key, generated.key);
    assert_ne!(again.jwt_secrets[0].secret, generated.secret);
    assert_eq!(c.jwt_secrets[1].secret, "s2");
    assert!(c.jwt_secrets.iter().any(|s| s.key == "k3"));
}

#[test]
fn asymmetric_algorithms_need_a_key_that_parses_except_es() {
    let with = |alg: &str, key: &str| {
        format!("_format_version: '3.0'\nconsumers:\n- username: u\n  jwt_secrets:\n  - key: k\n    algorithm: {alg}\n{key}")
    };
    let missing = errs(&with("RS256", ""));
    assert!(
        missing
            .iter()
            .any(|e| e.ends_with("rsa_public_key: required field missing")),
        "{missing:?}"
    );
    assert!(
        missing.iter().any(|e| e
            .ends_with("@entity: failed conditional validation given value of field 'algorithm'")),
        "{missing:?}"
    );
    let bad = errs(&with("EdDSA", "    rsa_public_key: nope\n"));
    assert!(
        bad.iter()
            .any(|e| e.ends_with("rsa_public_key: invalid key")),
        "{bad:?}"
    );
    // Kong's check leaves ES out: no key is accepted (each request then fails with "Invalid key/secret").
    assert_eq!(ok(&with("ES256", "")).jwt_secrets[0].rsa_public_key, None);
    let pem = format!(
        "    rsa_public_key: \"{}\"\n",
        RSA_PUBLIC_KEY.replace('\n', "\\n")
    );
    assert!(ok(&with("PS384", &pem)).jwt_secrets[0]
        .rsa_public_key
        .is_some());
    let unknown = errs(&with("none", ""));
    assert!(
        unknown
            .iter()
            .any(|e| e.contains("algorithm: expected one of: HS256")),
        "{unknown:?}"
    );
}

#[test]
fn keys_are_unique() {
    let text = "_format_version: '3.0'\nconsumers:\n- username: u\n  jwt_secrets:\n  - key: same\n  - key: same\n";
    let e = errs(text);
    assert!(
        e.iter().any(|m| m.contains(
            "uniqueness violation: 'jwt_secrets' entity with key set to 'same' already declared"
        )),
        "{e:?}"
    );
}
