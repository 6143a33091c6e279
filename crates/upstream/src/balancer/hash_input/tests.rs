//! Unit tests of `hash_input`.
use super::*;
use http::HeaderValue;

fn key(on: HashOn, fallback: HashOn) -> HashKey {
    HashKey { on, fallback }
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_static(v));
    }
    h
}

#[test]
fn each_source_reads_its_request_fact() {
    let h = headers(&[
        ("x-user", "u1"),
        ("x-user", "u2"),
        ("cookie", "a=1; sess=abc"),
    ]);
    let captures = Captures {
        unnamed: vec![Some("/users/7".into()), Some("7".into())],
        named: vec![("id".into(), "7".into())],
    };
    let input = PickInput {
        client_ip: Some("10.1.2.3".parse().unwrap()),
        headers: Some(&h),
        consumer: Some("c-1"),
        path: "/users/7",
        query: Some("a=1&tenant=t9&tenant=t10&flag"),
        captures: Some(&captures),
    };
    let cases = [
        (HashOn::Consumer, "c-1"),
        (HashOn::Ip, "10.1.2.3"),
        (HashOn::Header(HeaderName::from_static("x-user")), "u1,u2"),
        (
            HashOn::Cookie {
                name: "sess".into(),
                path: "/".into(),
            },
            "abc",
        ),
        (HashOn::Path, "/users/7"),
        (HashOn::QueryArg("tenant".into()), "t9,t10"),
        (HashOn::QueryArg("flag".into()), ""),
        (HashOn::UriCapture("id".into()), "7"),
        (HashOn::UriCapture("1".into()), "7"),
    ];
    for (on, want) in cases {
        let got = key(on.clone(), HashOn::None).hash(&input);
        assert_eq!(got.value, Some(hash64(want.as_bytes())), "{on:?}");
        assert_eq!(got.set_cookie, None);
    }
    assert_eq!(
        key(HashOn::None, HashOn::None).hash(&input),
        Hashed::default()
    );
}

#[test]
fn a_missing_value_falls_back() {
    let input = PickInput {
        client_ip: Some("10.1.2.3".parse().unwrap()),
        path: "/",
        ..Default::default()
    };
    let k = key(
        HashOn::Header(HeaderName::from_static("x-user")),
        HashOn::Ip,
    );
    assert_eq!(k.hash(&input).value, Some(hash64(b"10.1.2.3")));
    let k = key(HashOn::Consumer, HashOn::QueryArg("q".into()));
    assert_eq!(k.hash(&input).value, None);
}

#[test]
fn an_absent_cookie_is_made_up_and_set() {
    let k = key(
        HashOn::Cookie {
            name: "sticky".into(),
            path: "/app".into(),
        },
        HashOn::None,
    );
    let got = k.hash(&PickInput::default());
    let cookie = got.set_cookie.expect("a cookie to set");
    let value = cookie
        .strip_prefix("sticky=")
        .and_then(|c| c.strip_suffix("; Path=/app"))
        .unwrap();
    assert_eq!(value.len(), 32);
    assert_eq!(got.value, Some(hash64(value.as_bytes())));
    // The client sends it back: same hash, nothing set.
    let h = headers(&[("cookie", "other=x")]);
    let mut h2 = h.clone();
    h2.append(
        "cookie",
        HeaderValue::from_str(&format!("sticky={value}")).unwrap(),
    );
    let again = k.hash(&PickInput {
        headers: Some(&h2),
        ..Default::default()
    });
    assert_eq!((again.value, again.set_cookie), (got.value, None));
}
