//! Unit tests with certificates generated on the spot.

use super::*;

fn self_signed(names: &[&str], alg: &'static rcgen::SignatureAlgorithm) -> (String, String) {
    let key = rcgen::KeyPair::generate_for(alg).expect("key");
    let params =
        rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("params");
    let cert = params.self_signed(&key).expect("cert");
    (cert.pem(), key.serialize_pem())
}

fn ecdsa(name: &str) -> (String, String) {
    self_signed(&[name], &rcgen::PKCS_ECDSA_P256_SHA256)
}

fn pair(name: &str) -> CertPair {
    let (c, k) = ecdsa(name);
    CertPair::new(&c, &k, None, None).expect("pair")
}

#[test]
fn a_matching_pair_passes_the_entity_check() {
    let (c, k) = ecdsa("a.test");
    assert!(check_certificate(&c, &k, None, None).is_empty());
}

#[test]
fn mismatched_key_and_bad_pem_are_reported_per_field() {
    let (c, _) = ecdsa("a.test");
    let (_, other_key) = ecdsa("b.test");
    let errors = check_certificate(&c, &other_key, None, None);
    assert_eq!(
        errors,
        vec![(None, "certificate does not match key".to_string())]
    );
    let garbage = "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
    let errors = check_certificate(garbage, &other_key, None, None);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].0, Some("cert"));
    let errors = check_certificate(
        &c,
        "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----",
        None,
        None,
    );
    assert_eq!(errors[0].0, Some("key"), "{errors:?}");
}

#[test]
fn an_alternate_pair_must_be_of_the_other_type_and_complete() {
    let (c, k) = ecdsa("a.test");
    let (c2, k2) = ecdsa("a.test");
    let errors = check_certificate(&c, &k, Some(&c2), Some(&k2));
    assert!(errors[0].1.contains("different types"), "{errors:?}");
    let errors = check_certificate(&c, &k, Some(&c2), None);
    assert!(errors[0].1.contains("'cert_alt', 'key_alt'"), "{errors:?}");
}

#[test]
fn selection_follows_kongs_order() {
    let mut store = CertStore::default();
    let (exact, prefix, suffix, star) = (
        pair("api.example.com"),
        pair("x.example.com"),
        pair("example.org"),
        pair("any"),
    );
    let leaves = [
        exact.leaf().to_vec(),
        prefix.leaf().to_vec(),
        suffix.leaf().to_vec(),
    ];
    store.add(["API.example.com"], exact);
    store.add(["*.example.com"], prefix);
    store.add(["example.*"], suffix);
    let pick = |s: &CertStore, name: Option<&str>| s.select(name).map(|p| p.leaf().to_vec());
    assert_eq!(
        pick(&store, Some("api.EXAMPLE.com")),
        Some(leaves[0].clone())
    );
    assert_eq!(
        pick(&store, Some("web.example.com")),
        Some(leaves[1].clone())
    );
    assert_eq!(
        pick(&store, Some("a.b.example.com")),
        None,
        "one label only"
    );
    assert_eq!(pick(&store, Some("example.net")), Some(leaves[2].clone()));
    assert_eq!(pick(&store, Some("other.test")), None);
    assert_eq!(pick(&store, None), None);
    let star_leaf = star.leaf().to_vec();
    store.add(["*"], star);
    assert_eq!(pick(&store, Some("other.test")), Some(star_leaf.clone()));
    assert_eq!(pick(&store, None), Some(star_leaf));
}

#[test]
fn ecdsa_clients_get_the_ecdsa_pair() {
    // ring cannot generate RSA keys; Ed25519 stands in for "the other type".
    let (ec, ek) = ecdsa("a.test");
    let (dc, dk) = self_signed(&["a.test"], &rcgen::PKCS_ED25519);
    let p = CertPair::new(&ec, &ek, Some(&dc), Some(&dk)).expect("pair");
    let for_ecdsa = p.choose(&[rustls::SignatureScheme::ECDSA_NISTP256_SHA256]);
    let for_others = p.choose(&[rustls::SignatureScheme::ED25519]);
    assert_eq!(for_ecdsa.cert[0].as_ref(), p.leaf());
    assert_ne!(for_others.cert[0].as_ref(), p.leaf());
}

#[test]
fn the_default_certificate_is_generated_once_and_reused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = default_pair(dir.path()).expect("generate");
    let again = default_pair(dir.path()).expect("load");
    assert_eq!(first.leaf(), again.leaf());
    let mode = std::fs::metadata(dir.path().join(DEFAULT_KEY_FILE))
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
        .expect("key file");
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn client_configs_build_for_each_mode() {
    let (c, k) = ecdsa("client");
    for spec in [
        UpstreamTls::default(),
        UpstreamTls {
            verify: true,
            ..Default::default()
        },
        UpstreamTls {
            verify: true,
            depth: Some(1),
            ca_pems: vec![&c],
            client_cert: Some((&c, &k)),
        },
    ] {
        let config = client_config(&spec).expect("client config");
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
    assert!(client_config(&UpstreamTls {
        client_cert: Some((&c, "junk")),
        ..Default::default()
    })
    .is_err());
}

#[test]
fn verification_follows_the_chain_and_its_depth_limit() {
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::{ServerName, UnixTime};
    let alg = &rcgen::PKCS_ECDSA_P256_SHA256;
    let ca_key = rcgen::KeyPair::generate_for(alg).expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "root");
    let ca_cert = ca.self_signed(&ca_key).expect("CA");
    let mid_key = rcgen::KeyPair::generate_for(alg).expect("key");
    let mut mid = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    mid.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    mid.distinguished_name
        .push(rcgen::DnType::CommonName, "intermediate");
    let mid_cert = mid
        .signed_by(&mid_key, &ca_cert, &ca_key)
        .expect("intermediate");
    let leaf_key = rcgen::KeyPair::generate_for(alg).expect("key");
    let leaf = rcgen::CertificateParams::new(vec!["up.test".to_string()])
        .expect("params")
        .signed_by(&leaf_key, &mid_cert, &mid_key)
        .expect("leaf");
    let ca_pem = ca_cert.pem();
    let name = ServerName::try_from("up.test").expect("name");
    let check = |depth: Option<u32>, ca: &str| {
        let spec = UpstreamTls {
            verify: true,
            depth,
            ca_pems: vec![ca],
            client_cert: None,
        };
        client::verifier(&spec)
            .expect("verifier")
            .verify_server_cert(
                leaf.der(),
                &[mid_cert.der().clone()],
                &name,
                &[],
                UnixTime::now(),
            )
            .is_ok()
    };
    assert!(check(None, &ca_pem), "a valid chain verifies");
    assert!(
        check(Some(1), &ca_pem),
        "one intermediate is within depth 1"
    );
    assert!(!check(Some(0), &ca_pem), "depth 0 allows no intermediate");
    let other = self_signed(&["other"], alg).0;
    assert!(!check(None, &other), "an unrelated CA does not verify");
}

#[test]
fn an_x509_v1_certificate_passes_with_its_key_and_fails_with_another() {
    let cert = include_str!("../../testkit/fixtures/x509-v1.crt");
    let key = include_str!("../../testkit/fixtures/x509-v1.key");
    assert!(check_certificate(cert, key, None, None).is_empty());
    let (_, other) = ecdsa("b.test");
    assert_eq!(
        check_certificate(cert, &other, None, None),
        vec![(None, "certificate does not match key".to_string())]
    );
}
