//! `oauth2_credentials`: nested and top-level, generated client id and secret, hashed secrets outside the
//! config hash (and kept when already hashed), Kong's redirect URI messages, unique client ids.

use super::*;

#[test]
fn credentials_load_with_generated_and_hashed_secrets() {
    let text = "_format_version: '3.0'\nconsumers:\n- username: u\n  oauth2_credentials:\n  - name: gen\n  - {name: hashed, client_id: h, client_secret: s3cret, hash_secret: true}\noauth2_credentials:\n- {consumer: u, name: pub, client_id: p, client_type: public, redirect_uris: ['https://a.test/cb?x=1']}\n";
    let (a, b) = (ok(text), ok(text));
    let creds = &a.oauth2_credentials;
    assert_eq!(creds.len(), 3);
    assert!(creds.iter().all(|c| c.consumer.id == a.consumers[0].id));
    let generated = &creds[0];
    assert_eq!(
        (generated.client_id.len(), generated.client_secret.len()),
        (32, 32)
    );
    assert_eq!(
        (generated.client_type.as_str(), generated.hash_secret),
        ("confidential", false)
    );
    assert_ne!(generated.client_id, b.oauth2_credentials[0].client_id);
    let hashed = &creds[1].client_secret;
    assert!(crate::oauth2_secret::verify("s3cret", hashed), "{hashed}");
    assert_ne!(hashed, &b.oauth2_credentials[1].client_secret);
    assert_eq!(a.hash(), b.hash());
    assert_eq!(creds[2].client_type, "public");
    // A secret already hashed (an export loaded again) is kept as it is.
    let again = ok(&text.replace("s3cret", &format!("'{hashed}'")));
    assert_eq!(&again.oauth2_credentials[1].client_secret, hashed);
}

#[test]
fn kongs_messages_for_redirect_uris_and_duplicates() {
    let text = "_format_version: '3.0'\nconsumers:\n- username: u\n  oauth2_credentials:\n  - {name: a, client_id: c, redirect_uris: ['not-valid', 'https://a.test/#f', 'urn:x']}\n  - {name: b, client_id: c}\n  - {client_id: d}\n";
    let errors = errs(text);
    for expected in [
        "cannot parse 'not-valid'",
        "fragment not allowed in 'https://a.test/#f'",
        "cannot parse 'urn:x'",
        "uniqueness violation: 'oauth2_credentials' entity with client_id set to 'c' already declared",
        "required field missing",
    ] {
        assert!(errors.iter().any(|e| e.contains(expected)), "{expected} in {errors:?}");
    }
}
