//! Response heads on the wire: framing by status, method, length and version; `Date` and `Connection`.

use super::*;
use http::Response;

fn encode(
    resp: Response<()>,
    hint: SizeHint,
    head_request: bool,
    http10: bool,
    keep_alive: bool,
) -> (String, Framing, bool) {
    let (parts, ()) = resp.into_parts();
    let mut out = Vec::new();
    let facts = Facts {
        head_request,
        http10,
        keep_alive,
    };
    let (framing, keep) = head(&mut out, &parts, None, &hint, facts);
    (String::from_utf8(out).unwrap(), framing, keep)
}

fn exact(n: u64) -> SizeHint {
    SizeHint::with_exact(n)
}

#[test]
fn a_known_length_is_sent_and_the_connection_kept() {
    let (text, framing, keep) = encode(Response::new(()), exact(5), false, false, true);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(
        text.contains("content-length: 5\r\n") && text.contains("date: "),
        "{text}"
    );
    assert!(!text.contains("connection"), "{text}");
    assert!(text.ends_with("\r\n\r\n"));
    assert_eq!((framing, keep), (Framing::Length, true));
}

#[test]
fn an_unknown_length_is_chunked_for_11_and_until_close_for_10() {
    let (text, framing, keep) = encode(Response::new(()), SizeHint::default(), false, false, true);
    assert!(text.contains("transfer-encoding: chunked\r\n"), "{text}");
    assert_eq!((framing, keep), (Framing::Chunked, true));
    let (text, framing, keep) = encode(Response::new(()), SizeHint::default(), false, true, true);
    assert!(
        text.contains("connection: close\r\n") && !text.contains("chunked"),
        "{text}"
    );
    assert_eq!((framing, keep), (Framing::UntilClose, false));
}

#[test]
fn bodiless_answers_keep_their_fields_but_send_no_body() {
    let with_length = |status: u16| {
        Response::builder()
            .status(status)
            .header("content-length", "7")
            .header("transfer-encoding", "chunked")
            .body(())
            .unwrap()
    };
    let (text, framing, _) = encode(with_length(200), exact(0), true, false, true);
    assert!(
        text.contains("content-length: 7") && !text.contains("transfer-encoding"),
        "HEAD: {text}"
    );
    assert_eq!(framing, Framing::None);
    let (text, framing, _) = encode(with_length(204), exact(0), false, false, true);
    assert!(
        !text.contains("content-length") && !text.contains("transfer-encoding"),
        "204: {text}"
    );
    assert_eq!(framing, Framing::None);
    let (text, framing, _) = encode(with_length(304), exact(0), false, false, true);
    assert!(text.contains("content-length: 7"), "304: {text}");
    assert_eq!(framing, Framing::None);
}

#[test]
fn connection_fields_follow_the_decision() {
    let (text, _, keep) = encode(Response::new(()), exact(0), false, false, false);
    assert!(text.contains("connection: close\r\n") && !keep, "{text}");
    let (text, _, keep) = encode(Response::new(()), exact(0), false, true, true);
    assert!(
        text.contains("connection: keep-alive\r\n") && keep,
        "{text}"
    );
    let upgrade = Response::builder()
        .status(101)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .body(())
        .unwrap();
    let (text, framing, _) = encode(upgrade, exact(0), false, false, false);
    assert!(
        text.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{text}"
    );
    assert!(
        text.contains("connection: upgrade\r\n") && !text.contains("close"),
        "{text}"
    );
    assert_eq!(framing, Framing::None);
}

#[test]
fn a_date_set_upstream_is_kept() {
    let resp = Response::builder()
        .header("date", "Tue, 01 Jan 2030 00:00:00 GMT")
        .body(())
        .unwrap();
    let (text, _, _) = encode(resp, exact(0), false, false, true);
    assert_eq!(text.matches("date: ").count(), 1, "{text}");
    assert!(text.contains("2030"), "{text}");
}
