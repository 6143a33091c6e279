//! Unit tests of `raw`: kinds, the verbatim block, lookups and the map made on demand.

use super::*;
use crate::response::tests::parse;

#[test]
fn names_are_classified_in_any_case() {
    let cases = [
        ("Content-Length", Kind::ContentLength),
        ("TRANSFER-ENCODING", Kind::TransferEncoding),
        ("connection", Kind::Connection),
        ("Te", Kind::Te),
        ("Keep-Alive", Kind::HopByHop),
        ("proxy-connection", Kind::HopByHop),
        ("Trailer", Kind::HopByHop),
        ("Upgrade", Kind::HopByHop),
        ("Proxy-Authenticate", Kind::HopByHop),
        ("Date", Kind::Date),
        ("server", Kind::Server),
        ("VIA", Kind::Via),
        ("X-Kong-Upstream-Latency", Kind::Kong),
        ("x-kong-", Kind::Other),
        ("Content-Type", Kind::Other),
        ("Content_Length", Kind::Other),
        ("Content-Lengt", Kind::Other),
        ("X-KONG-PROXY-LATENCY", Kind::Kong),
        ("x_kong-a", Kind::Other),
        ("trailers", Kind::Other),
        ("keep-alivex", Kind::Other),
        ("x", Kind::Other),
    ];
    for (name, kind) in cases {
        assert_eq!(Kind::of(name.as_bytes()), kind, "{name}");
    }
}

#[test]
fn a_canonical_head_is_one_block_of_lines() {
    let head = parse(
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: today\r\nX-A: 1\r\n\r\n",
        false,
    )
    .unwrap();
    let f = &head.fields;
    assert_eq!(
        f.block(),
        Some(&b"Content-Length: 5\r\nDate: today\r\nX-A: 1\r\n"[..])
    );
    assert!(f.has(Kind::ContentLength) && f.has(Kind::Date) && !f.has(Kind::Server));
    assert!(f.has_any(&[Kind::Server, Kind::Date]));
    assert!(!f.has_any(&[Kind::Via, Kind::Connection]));
    let kinds: Vec<Kind> = f.iter().map(|x| x.kind).collect();
    assert_eq!(kinds, [Kind::ContentLength, Kind::Date, Kind::Other]);
}

#[test]
fn other_spacing_or_line_ends_are_not_a_block() {
    for raw in [
        "HTTP/1.1 200 OK\r\nX-A:1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A:  1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1 \r\n\r\n",
        "HTTP/1.1 200 OK\nX-A: 1\nX-B: 2\n\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\nX-B:2\r\n\r\n",
    ] {
        let head = parse(raw, false).unwrap();
        assert_eq!(head.fields.block(), None, "{raw:?}");
        assert_eq!(head.fields.get("x-a"), Some(&b"1"[..]), "{raw:?}");
    }
    let none = parse("HTTP/1.1 204 No Content\r\n\r\n", false).unwrap();
    assert_eq!((none.fields.block(), none.fields.len()), (None, 0));
}

#[test]
fn the_map_is_the_fields_in_order_lower_cased() {
    let head = parse(
        "HTTP/1.1 200 OK\r\nX-A: 1\r\nSet-Cookie: a\r\nx-a: 2\r\nSet-Cookie: b\r\nContent-Length: 0\r\n\r\n",
        false,
    )
    .unwrap();
    let map = head.fields.to_map();
    let pairs: Vec<(String, String)> = map
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    let names: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names.len(), 5);
    assert_eq!(
        map.get_all("set-cookie").iter().collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(map.get_all("x-a").iter().collect::<Vec<_>>(), ["1", "2"]);
}

#[test]
fn span_lists_are_reused_on_the_thread() {
    let raw = "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n";
    drop(parse(raw, false).unwrap());
    let kept = KEPT.with(Spares::len);
    assert!(kept >= 1);
    let head = parse(raw, false).unwrap();
    assert_eq!(KEPT.with(Spares::len), kept - 1, "a kept list was taken");
    drop(head);
    assert_eq!(KEPT.with(Spares::len), kept, "and given back");
}

/// What httparse accepts, the map takes: every token character in names, obs-text in values (the map made on
/// demand must not lose a field the parser let through).
#[test]
fn every_field_the_parser_takes_reaches_the_map() {
    let raw = b"HTTP/1.1 200 OK\r\nX!#$%&'*+-.^_`|~09Az: a\xffb\r\nY:\t\r\n\r\n";
    let mut buf = bytes::BytesMut::from(&raw[..]);
    let head = crate::parse_response(&mut buf, false).unwrap().unwrap();
    assert_eq!((head.fields.len(), head.fields.to_map().len()), (2, 2));
}

#[test]
fn the_forwarded_length_is_the_framing_one() {
    let length = |fields: &str| {
        parse(&format!("HTTP/1.1 200 OK\r\n{fields}\r\n"), false)
            .unwrap()
            .fields
            .content_length()
    };
    assert_eq!(length("Content-Length: 5\r\n"), Some(5));
    assert_eq!(length("content-length: 7, 7\r\n"), Some(7));
    assert_eq!(length("X-A: 1\r\n"), None);
    assert_eq!(
        length("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
        None
    );
}
