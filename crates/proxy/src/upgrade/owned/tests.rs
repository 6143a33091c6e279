use super::*;

/// True when `part` lies inside `buffer`.
fn inside(part: &[u8], buffer: &Bytes) -> bool {
    let (start, end) = (
        buffer.as_ptr() as usize,
        buffer.as_ptr() as usize + buffer.len(),
    );
    (start..end).contains(&(part.as_ptr() as usize))
}

#[test]
fn header_values_and_the_uri_let_go_of_the_buffer_they_were_parsed_from() {
    let buffer = Bytes::copy_from_slice(b"/chat?room=1 websocket secret");
    let mut parts = http::Request::new(()).into_parts().0;
    parts.uri = Uri::from_maybe_shared(buffer.slice(0..12)).unwrap();
    parts.headers.insert(
        "upgrade",
        HeaderValue::from_maybe_shared(buffer.slice(13..22)).unwrap(),
    );
    let mut secret = HeaderValue::from_maybe_shared(buffer.slice(23..29)).unwrap();
    secret.set_sensitive(true);
    parts.headers.insert("authorization", secret);
    assert!(inside(parts.headers["upgrade"].as_bytes(), &buffer));
    assert!(inside(parts.uri.path().as_bytes(), &buffer));

    own_request(&mut parts);

    assert_eq!(parts.uri, "/chat?room=1");
    assert_eq!(parts.headers["upgrade"], "websocket");
    assert!(parts.headers["authorization"].is_sensitive());
    for value in parts.headers.values() {
        assert!(!inside(value.as_bytes(), &buffer));
    }
    assert!(!inside(parts.uri.path().as_bytes(), &buffer));
}
