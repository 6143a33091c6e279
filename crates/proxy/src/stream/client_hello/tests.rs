//! The ClientHello reader against real ClientHellos (made by rustls) and broken ones.

use super::*;
use sluice_tls::rustls;
use std::sync::Arc;

/// The first flight of a rustls client (its ClientHello records) for `sni`.
fn client_hello(sni: Option<&str>) -> Vec<u8> {
    let mut config = rustls::ClientConfig::builder_with_provider(sluice_tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(sluice_tls::unverified())
        .with_no_client_auth();
    let name = match sni {
        Some(s) => rustls::pki_types::ServerName::try_from(s.to_string()).unwrap(),
        None => {
            config.enable_sni = false;
            rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap()
        }
    };
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut out = Vec::new();
    conn.write_tls(&mut out).unwrap();
    out
}

#[test]
fn reads_the_server_name_of_a_real_hello() {
    let hello = client_hello(Some("Api.Example.com"));
    assert_eq!(parse(&hello), Hello::Done(Some("api.example.com".into())));
    assert_eq!(parse(&client_hello(None)), Hello::Done(None));
}

#[test]
fn asks_for_more_until_the_hello_is_whole() {
    let hello = client_hello(Some("a.test"));
    for cut in [0, 1, 3, 5, 9, hello.len() / 2, hello.len() - 1] {
        assert_eq!(parse(&hello[..cut]), Hello::More, "cut at {cut}");
    }
}

#[test]
fn a_hello_split_over_two_records_is_joined() {
    let hello = client_hello(Some("split.test"));
    let body = &hello[5..];
    let (a, b) = body.split_at(40);
    let mut two = Vec::new();
    for part in [a, b] {
        two.extend_from_slice(&[22, 3, 1]);
        two.extend_from_slice(&(part.len() as u16).to_be_bytes());
        two.extend_from_slice(part);
    }
    assert_eq!(parse(&two), Hello::Done(Some("split.test".into())));
}

#[test]
fn refuses_what_is_not_a_client_hello() {
    assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Hello::NotTls);
    // A handshake record whose message is not a ClientHello (type 2).
    assert_eq!(parse(&[22, 3, 1, 0, 4, 2, 0, 0, 0]), Hello::NotTls);
    // A ClientHello that claims more than the bound.
    assert_eq!(parse(&[22, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff]), Hello::NotTls);
    // A record of length 0.
    assert_eq!(parse(&[22, 3, 1, 0, 0]), Hello::NotTls);
    // A whole ClientHello whose extensions are cut short.
    let mut hello = client_hello(Some("a.test"));
    let body_len = hello.len() - 9;
    hello.truncate(hello.len() - 3);
    let shorter = (body_len - 3) as u32;
    let record_len = (hello.len() - 5) as u16;
    hello[3..5].copy_from_slice(&record_len.to_be_bytes());
    hello[6..9].copy_from_slice(&shorter.to_be_bytes()[1..]);
    assert_eq!(parse(&hello), Hello::NotTls);
}
