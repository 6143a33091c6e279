//! Kong's parameter syntax, the signing string and the digest, on their own (the whole plugin is tested
//! through the binary in `crates/sluice/tests/plugins_hmac.rs`).

use super::signature::{date_within, digest_matches, signing_string, Algorithm, Params};
use crate::testing::request;

#[test]
fn parameters_as_kong_reads_them() {
    let p = Params::parse(
        br#"hmac username="bob", algorithm="hmac-sha256", headers="date request-line", signature="c2ln""#,
    )
    .unwrap();
    assert_eq!(p.username, b"bob");
    assert_eq!(p.algorithm, b"hmac-sha256");
    assert_eq!(
        p.header_names().collect::<Vec<_>>(),
        [&b"date"[..], b"request-line"]
    );
    assert_eq!(p.signature, b"c2ln");
    // `Hmac`, no spaces after commas, text before the scheme: all accepted, as Kong's unanchored pattern does.
    assert!(
        Params::parse(br#"xx Hmac username="a",algorithm="b",headers="c",signature="d""#).is_some()
    );
    // Anything missing or empty: no parameters.
    assert!(Params::parse(br#"hmac username="a", algorithm="b", signature="d""#).is_none());
    assert!(
        Params::parse(br#"hmac username="", algorithm="b", headers="c", signature="d""#).is_none()
    );
    assert!(
        Params::parse(br#"HMAC username="a", algorithm="b", headers="c", signature="d""#).is_none()
    );
    // Greedy groups: a quote-comma inside the username is kept in it, as PCRE backtracks.
    let p = Params::parse(br#"hmac username="a", b", algorithm="x", headers="h", signature="s""#)
        .unwrap();
    assert_eq!(p.username, br#"a", b"#);
}

#[test]
fn signing_string_lines() {
    let mut req = request(
        "POST",
        "/p/q?x=1&y",
        &[("Date", "Tue, 24 Nov 2026 07:00:00 GMT"), ("X-Custom", "v")],
    );
    req.version = http::Version::HTTP_10;
    let p = Params::parse(
        br#"hmac username="u", algorithm="hmac-sha1", headers="date X-Custom request-line @request-target missing", signature="s""#,
    )
    .unwrap();
    let text = String::from_utf8(signing_string(&p, &req)).unwrap();
    assert_eq!(
        text,
        "date: Tue, 24 Nov 2026 07:00:00 GMT\nX-Custom: v\nPOST /p/q?x=1&y HTTP/1.0\n\
         @request-target: post /p/q?x=1&y\nmissing:"
    );
}

#[test]
fn algorithms_verify_in_full_only() {
    // RFC 2202 / 4231 test vectors (key "Jefe").
    let data = b"what do ya want for nothing?";
    let sha1 = hex("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    let verify = |a: Algorithm, sig: &[u8]| ring::hmac::verify(&a.key(b"Jefe"), data, sig).is_ok();
    assert!(verify(Algorithm::Sha1, &sha1));
    assert!(!verify(Algorithm::Sha1, &sha1[..19]));
    assert!(!verify(Algorithm::Sha256, &sha1));
    let sha256 = hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    assert!(verify(Algorithm::Sha256, &sha256));
    let sha512 = hex(concat!(
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554",
        "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
    ));
    assert!(verify(Algorithm::Sha512, &sha512));
    assert_eq!(Algorithm::from_name(b"hmac-md5"), None);
}

#[test]
fn clock_skew_and_digest() {
    let now = 1_795_000_000;
    let at = |secs: u64| {
        httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
    };
    let headers = |name: &str, v: &str| request("GET", "/", &[(name, v)]).headers;
    assert!(date_within(&headers("date", &at(now - 300)), 300.0, now));
    assert!(!date_within(&headers("date", &at(now - 301)), 300.0, now));
    assert!(date_within(&headers("x-date", &at(now + 10)), 300.0, now));
    assert!(!date_within(&headers("date", "yesterday"), 300.0, now));
    let body = b"{\"a\":1}";
    // echo -n '{"a":1}' | openssl dgst -sha256 -binary | base64
    let digest = "SHA-256=AVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX+GI=";
    assert!(digest_matches(&headers("digest", digest), body));
    assert!(!digest_matches(&headers("digest", digest), b"{\"a\":2}"));
    assert!(!digest_matches(&headers("x", "y"), body));
    assert!(digest_matches(&headers("x", "y"), b""));
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The hand-written parser finds what Kong's regex finds (with PCRE's leftmost, greedy choice, which the
/// regex crate's leftmost-first semantics share) on values built from the pattern's own pieces.
#[test]
fn parser_agrees_with_kongs_pattern() {
    let kong = regex::bytes::Regex::new(
        r#"(?-u)\s*[Hh]mac\s*username="(.+)",\s*algorithm="(.+)",\s*headers="(.+)",\s*signature="(.+)""#,
    )
    .unwrap();
    let pieces: [&[u8]; 14] = [
        b"hmac ",
        b"Hmac",
        b"HMAC ",
        b"username=\"",
        b"\", ",
        b"\",",
        b" algorithm=\"",
        b"algorithm=\"",
        b"headers=\"",
        b" signature=\"",
        b"\"",
        b"x",
        b"date request-line",
        b"\t",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut matched = 0;
    for round in 0..20_000 {
        let mut value = Vec::new();
        if round % 2 == 0 {
            // Mostly well-formed: the pattern's pieces in order, with noise.
            for p in [
                &b"hmac username=\""[..],
                b"u",
                b"\", algorithm=\"",
                b"a",
                b"\", headers=\"",
                b"h",
                b"\", signature=\"",
                b"s",
                b"\"",
            ] {
                value.extend_from_slice(p);
                for _ in 0..next(3) {
                    value.extend_from_slice(pieces[next(pieces.len())]);
                }
            }
        } else {
            for _ in 0..next(24) {
                value.extend_from_slice(pieces[next(pieces.len())]);
            }
        }
        let expected = kong
            .captures(&value)
            .map(|c| [1, 2, 3, 4].map(|i| c.get(i).unwrap().as_bytes().to_vec()));
        let found = Params::parse(&value)
            .map(|p| [p.username, p.algorithm, p.headers, p.signature].map(<[u8]>::to_vec));
        assert_eq!(found, expected, "{}", String::from_utf8_lossy(&value));
        matched += usize::from(found.is_some());
    }
    assert!(
        matched > 5_000,
        "the values exercise matches too: {matched}"
    );
}
