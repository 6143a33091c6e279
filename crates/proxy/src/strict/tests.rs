//! Unit tests of `strict`.

use super::{check, valid_authority, Malformed};
use http::{Request, Version};

/// A request head: `uri`, `version`, then `name: value` pairs.
fn parts(uri: &str, version: Version, fields: &[(&str, &str)]) -> http::request::Parts {
    let mut b = Request::builder().uri(uri).version(version);
    for (k, v) in fields {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

/// (target, version, header fields, verdict)
type Case<'a> = (
    &'a str,
    Version,
    &'a [(&'a str, &'a str)],
    Result<(), Malformed>,
);

#[test]
fn host_rules_of_http1() {
    const HTTP_10: Version = Version::HTTP_10;
    const HTTP_11: Version = Version::HTTP_11;
    #[rustfmt::skip]
    let cases: &[Case<'_>] = &[
        ("/", HTTP_11, &[("host", "a.test")], Ok(())),
        ("/", HTTP_11, &[("host", "a.test:8000")], Ok(())),
        ("/", HTTP_11, &[("host", "[::1]:8000")], Ok(())),
        ("/", HTTP_11, &[], Err(Malformed::BadRequest)),
        ("/", HTTP_10, &[], Ok(())),
        ("/", HTTP_11, &[("host", "a.test"), ("host", "a.test")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", "a.test"), ("host", "b.test")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", "a/b")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", "a b")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", "user@a.test")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", "a.test:80x")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", ":80")], Err(Malformed::BadRequest)),
        ("/", HTTP_11, &[("host", "[zz]")], Err(Malformed::BadRequest)),
    ];
    for (uri, version, fields, want) in cases {
        let mut p = parts(uri, *version, fields);
        assert_eq!(check(&mut p), *want, "{version:?} {fields:?}");
    }
}

#[test]
fn an_absolute_form_target_wins_over_host() {
    let mut p = parts(
        "http://b.test:9000/x",
        Version::HTTP_11,
        &[("host", "a.test")],
    );
    check(&mut p).unwrap();
    assert_eq!(p.headers["host"], "b.test:9000");
    let mut p = parts("http://b.test/x", Version::HTTP_11, &[]);
    check(&mut p).unwrap();
    assert_eq!(p.headers["host"], "b.test");
}

#[test]
fn h2_host_must_name_the_authority() {
    let mut p = parts("https://a.test/x", Version::HTTP_2, &[("host", "A.test")]);
    assert_eq!(check(&mut p), Ok(()));
    let mut p = parts(
        "https://a.test/x",
        Version::HTTP_2,
        &[("host", "evil.test")],
    );
    assert_eq!(check(&mut p), Err(Malformed::BadRequest));
    let mut p = parts("https://a.test/x", Version::HTTP_2, &[]);
    check(&mut p).unwrap();
    assert_eq!(p.headers["host"], "a.test");
    // Neither `:authority` nor `host`: an http URI without a host.
    let mut p = parts("/x", Version::HTTP_2, &[]);
    assert_eq!(check(&mut p), Err(Malformed::BadRequest));
    let mut p = parts("/x", Version::HTTP_2, &[("host", "a.test")]);
    assert_eq!(check(&mut p), Ok(()));
}

#[test]
fn targets_that_are_not_paths_are_refused_except_extended_connect() {
    for (method, uri, version) in [
        ("GET", "*", Version::HTTP_11),
        ("OPTIONS", "*", Version::HTTP_11),
        ("CONNECT", "a.test:443", Version::HTTP_11),
        ("CONNECT", "a.test:443", Version::HTTP_2),
    ] {
        let mut p = Request::builder().method(method).uri(uri).version(version);
        p = p.header("host", "a.test");
        let mut p = p.body(()).unwrap().into_parts().0;
        assert_eq!(check(&mut p), Err(Malformed::BadRequest), "{method} {uri}");
    }
    let mut p = Request::builder()
        .method("CONNECT")
        .uri("https://a.test/chat")
        .version(Version::HTTP_2)
        .extension(hyper::ext::Protocol::from_static("websocket"))
        .body(())
        .unwrap()
        .into_parts()
        .0;
    assert_eq!(check(&mut p), Ok(()));
    let mut p = Request::builder()
        .method("CONNECT")
        .uri("https://a.test/chat")
        .version(Version::HTTP_2)
        .extension(hyper::ext::Protocol::from_static("foo"))
        .body(())
        .unwrap()
        .into_parts()
        .0;
    assert_eq!(check(&mut p), Err(Malformed::BadRequest));
}

#[test]
fn content_length_is_one_line_and_never_beside_transfer_encoding() {
    let mut p = parts(
        "/",
        Version::HTTP_2,
        &[("host", "a"), ("content-length", "3")],
    );
    assert_eq!(check(&mut p), Ok(()));
    for fields in [
        [("content-length", "3"), ("content-length", "3")],
        [("content-length", "3"), ("content-length", "4")],
        [("content-length", "3"), ("transfer-encoding", "chunked")],
    ] {
        let mut all = vec![("host", "a")];
        all.extend(fields);
        let mut p = parts("/", Version::HTTP_11, &all);
        assert_eq!(check(&mut p), Err(Malformed::BadRequest), "{fields:?}");
    }
}

#[test]
fn methods_as_nginx_parses_them() {
    for (method, ok) in [
        ("GET", true),
        ("PROPFIND", true),
        ("X_Y-Z", true),
        ("get", false),
        ("Get", false),
    ] {
        let mut p = Request::builder()
            .method(method)
            .uri("/")
            .header("host", "a")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        assert_eq!(check(&mut p).is_ok(), ok, "{method}");
    }
}

#[test]
fn only_chunked_alone_is_a_known_coding() {
    #[rustfmt::skip]
    let cases: &[(&[&str], Version, Result<(), Malformed>)] = &[
        (&["chunked"], Version::HTTP_11, Ok(())),
        (&["Chunked"], Version::HTTP_11, Ok(())),
        (&["gzip, chunked"], Version::HTTP_11, Err(Malformed::UnknownCoding)),
        (&["gzip", "chunked"], Version::HTTP_11, Err(Malformed::UnknownCoding)),
        (&["chunked, chunked"], Version::HTTP_11, Err(Malformed::UnknownCoding)),
        (&["identity"], Version::HTTP_11, Err(Malformed::UnknownCoding)),
        (&["chunked"], Version::HTTP_10, Err(Malformed::BadRequest)),
    ];
    for (codings, version, want) in cases {
        let mut fields = vec![("host", "a")];
        fields.extend(codings.iter().map(|c| ("transfer-encoding", *c)));
        let mut p = parts("/", *version, &fields);
        assert_eq!(check(&mut p), *want, "{codings:?} {version:?}");
    }
}

#[test]
fn authorities() {
    for ok in [
        "a",
        "a.b-c_d~",
        "1.2.3.4:65535",
        "[::1]",
        "[fe80::1]:80",
        "xn--d1acufc.xn--p1ai",
        "a%20b",
    ] {
        assert!(valid_authority(ok.as_bytes()), "{ok}");
    }
    for bad in [
        "", "a b", "a/b", "a?b", "a#b", "u@a", "a:123456", "[::1", "[]", "a\tb", "a:1:2",
    ] {
        assert!(!valid_authority(bad.as_bytes()), "{bad}");
    }
}
