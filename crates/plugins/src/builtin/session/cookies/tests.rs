//! Unit tests of session cookies on the wire: chunk counts, splitting and joining, merging Set-Cookie lines.

use super::*;

#[test]
fn chunk_counts_follow_the_4k_limit() {
    let room = MAX_COOKIE_SIZE - "session".len() - 1 - HEADER_ENCODED_SIZE;
    assert_eq!(chunks("session", room), Ok(1));
    assert_eq!(chunks("session", room + 1), Ok(2));
    assert_eq!(
        chunks("session", 9 * 4096),
        Err("cookie size limit exceeded")
    );
}

#[test]
fn a_split_payload_joins_again() {
    let attrs = Attributes::new(None, "/", "Lax", false, true);
    let data = "x".repeat(10_000);
    let mut out = Outgoing::default();
    out.session(
        "s",
        &"h".repeat(HEADER_ENCODED_SIZE),
        &data,
        &attrs,
        None,
        5,
    )
    .unwrap();
    let mut request = HeaderMap::new();
    let mut cookie = Vec::new();
    for (name, line) in &out.0 {
        assert!(line.len() <= MAX_COOKIE_SIZE + attrs.flags.len() + EXPIRED.len());
        let value = line.split(';').next().unwrap();
        if !line.contains("Max-Age=0") {
            cookie.push(value.to_string());
        } else {
            assert!(name == "s4" || name == "s5", "{name}");
        }
    }
    request.insert("cookie", cookie.join("; ").parse().unwrap());
    let first = crate::builtin::auth::cookie(&request, "s").unwrap();
    assert_eq!(payload(&request, "s", first, 10_000).unwrap(), data);
}

#[test]
fn apply_replaces_only_same_named_cookies() {
    let mut headers = HeaderMap::new();
    headers.append("set-cookie", "session=old; Path=/".parse().unwrap());
    headers.append("set-cookie", "other=1".parse().unwrap());
    let mut out = Outgoing::default();
    out.clear(
        "session",
        1,
        &Attributes::new(Some("localhost"), "/", "Strict", true, true),
    );
    out.apply(&mut headers);
    let lines: Vec<_> = headers.get_all("set-cookie").iter().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], "other=1");
    assert_eq!(
        lines[1],
        "session=; Path=/; SameSite=Strict; Secure; HttpOnly; Expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0"
    );
}
