//! Unit tests of proxy-cache's key (against SHA-256 digests computed outside this code, with Python's
//! hashlib, of the strings Kong's `cache_key.lua` builds), its `Cache-Control` and media type rules, and
//! the bounded store.

use super::key::{self, Vary};
use super::policy::{Directives, Mime};
use super::store::{Entry, MemoryStore};
use crate::testing::{compile, request};
use crate::RequestCtx;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};

const ROUTE: &str = "d35c8a4f-4a50-4a2c-8a38-4f0e2a9c6a11";

fn key_of(method: &str, uri: &str, headers: &[(&str, &str)], vary: &Vary, routed: bool) -> String {
    let yaml = format!(
        "_format_version: '3.0'\nservices:\n- name: s\n  url: http://a.test\n  routes:\n  - id: {ROUTE}\n    paths: [/p]\n"
    );
    let (config, compiled) = compile(&yaml);
    let mut ctx = RequestCtx::detached(request(method, uri, headers), compiled.credentials());
    if routed {
        ctx.route = config.routes.first();
    }
    key::hex(&key::build(&ctx, vary))
}

#[test]
fn keys_are_kongs_sha256_of_prefix_method_request_line_params_and_headers() {
    let none = Vary::default();
    // "default|GET|GET /p HTTP/1.1||": no query, so the request line keeps its protocol.
    assert_eq!(
        key_of("GET", "/p", &[], &none, false),
        "cc730fbaa94fe5b6ae315260b79fe389fae1ad5ef8c4f6b340732ebd5dfe1b3a"
    );
    // "<route>|GET|GET /p|a=0,1:b=2:c|": every argument, sorted; repeated values sorted; a bare name.
    assert_eq!(
        key_of("GET", "/p?b=2&a=1&a=0&c", &[], &none, true),
        "da2eadc98a10ce942af5408dc3f99da1b06e98490cff0f770c2943637c82dd1e"
    );
    // "<route>|GET|GET /p|b=2|X_Foo=0,1": only the varying arguments present; headers by Kong's lookup.
    let vary = Vary::new(vec!["b".into(), "z".into()], vec!["X_Foo".into()], false);
    assert_eq!(
        key_of(
            "GET",
            "/p?b=2&a=1",
            &[("x-foo", "1"), ("x-foo", "0")],
            &vary,
            true
        ),
        "15abf26bbef420fbcbf703fd3b86d99a2eb7f4837a4fbed47ecb792de477722c"
    );
    // "<route>|HEAD|head /p/q|x=A B|": ignore_uri_case lowers the request line; arguments are decoded.
    let lower = Vary::new(vec![], vec![], true);
    assert_eq!(
        key_of("HEAD", "/P/Q?x=A+B", &[], &lower, true),
        "1e7e545681a8a70d78df7cb3f65126df041f55bb76af340d0b8db5ec9e88f548"
    );
}

#[test]
fn key_texts_are_kongs_strings() {
    let vary = Vary::new(vec![], vec!["X_Foo".into()], false);
    let ctx_key = |uri| {
        let (_, compiled) = compile("_format_version: '3.0'\n");
        let req = request("GET", uri, &[("x-foo", "b"), ("X-Foo", "a")]);
        key::build(&RequestCtx::detached(req, compiled.credentials()), &vary)
    };
    assert_eq!(ctx_key("/x?b&a=%20"), "default|GET|GET /x|a= :b|X_Foo=a,b");
    assert_eq!(key::hex("x").len(), 64);
}

fn headers(lines: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in lines {
        h.append(
            http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    h
}

#[test]
fn cache_control_directives_as_kong_parses_them() {
    let d = Directives::of(&headers(&[
        ("cache-control", "No-Store, max-age=10"),
        ("cache-control", " s-maxage=\"5\", min-fresh=3, private"),
    ]));
    assert!(d.no_store && d.private && !d.no_cache);
    assert_eq!(
        (d.max_age, d.s_maxage, d.min_fresh),
        (Some(10.0), None, Some(3.0))
    );
    let now = std::time::SystemTime::now();
    assert_eq!(d.resource_ttl(&HeaderMap::new(), now), 10.0);
    let in_a_minute = httpdate::fmt_http_date(now + std::time::Duration::from_secs(60));
    let expires = headers(&[("expires", &in_a_minute)]);
    let ttl = Directives::default().resource_ttl(&expires, now);
    assert!((59.0..=60.0).contains(&ttl), "{ttl}");
    let past = headers(&[("expires", "Thu, 01 Jan 1970 00:00:00 GMT")]);
    assert_eq!(Directives::default().resource_ttl(&past, now), 0.0);
}

#[test]
fn content_types_match_exactly_with_parameters() {
    let m = |s| Mime::parse(s).unwrap();
    assert!(m("application/json").matches(&m("Application/JSON")));
    assert!(!m("application/json").matches(&m("application/json; charset=utf-8")));
    assert!(m("text/html; charset=utf-8").matches(&m("text/html;charset=utf-8")));
    assert!(!m("text/html; charset=utf-8").matches(&m("text/html; charset=UTF-8")));
    assert!(m("*/*").matches(&m("image/png")));
    assert!(m("text/*").matches(&m("text/plain")));
    assert!(Mime::parse("application/xml;").is_none());
}

fn entry(body: usize, now_ms: u64, ttl: f64) -> Entry {
    let body = Bytes::from(vec![b'x'; body]);
    let hex = http::HeaderValue::from_static("00");
    Entry::new(
        hex,
        StatusCode::OK,
        HeaderMap::new(),
        body,
        ttl,
        now_ms,
        ttl,
    )
}

#[test]
fn entries_expire_and_the_store_stays_within_its_size() {
    let store = MemoryStore::new(10_000);
    let key = |i: u8| -> Box<str> { i.to_string().into() };
    assert!(store.store(key(0), entry(100, 1_000, 2.0), 1_000));
    assert!(store.fetch("0", 2_999).is_some());
    assert!(store.fetch("0", 3_000).is_none(), "expired after 2 s");
    assert_eq!(store.bytes(), 0);
    assert!(
        !store.store(key(1), entry(20_000, 0, 9.0), 0),
        "larger than the store"
    );
    for i in 0..40 {
        assert!(store.store(key(i), entry(1_000, 0, 60.0), 0));
        assert!(store.bytes() <= store.capacity());
        assert!(
            store.fetch("0", 1).is_some(),
            "an entry read since the last sweep stays"
        );
    }
    assert!(store.len() < 10);
    assert!(store.fetch("39", 1).is_some(), "the newest entry is kept");
    assert!(store.find_hex("00", 1).is_some());
    store.flush();
    assert_eq!((store.len(), store.bytes()), (0, 0));
}
