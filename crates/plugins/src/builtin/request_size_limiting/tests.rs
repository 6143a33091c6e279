//! The plugin's decisions on a request head (the streamed count runs in the proxy and is tested through
//! the binary in `crates/sluice/tests/plugins_size_limit.rs`).

use crate::testing::{block_on, compile, request};
use crate::RequestCtx;

/// The chain of a route with request-size-limiting configured as `config`, run on `headers` (and
/// `body` as if another plugin had buffered it): the status of its answer, or the cap it set.
fn run(config: &str, headers: &[(&str, &str)], body: Option<&str>) -> (Option<u16>, Option<u64>) {
    let yaml = format!(
        "_format_version: '3.0'\nservices: [{{name: s, url: 'http://127.0.0.1:1', routes: [{{name: r, paths: [/]}}]}}]\n\
         plugins: [{{name: request-size-limiting, config: {config}}}]\n"
    );
    let (_, compiled) = compile(&yaml);
    let mut ctx = RequestCtx::detached(request("POST", "/", headers), compiled.credentials());
    ctx.body = body.map(|b| bytes::Bytes::copy_from_slice(b.as_bytes()));
    let answer = block_on(compiled.route_chain(0).access(&mut ctx));
    (
        answer.map(|r| r.status.as_u16()),
        ctx.body_limit.map(|l| l.bytes),
    )
}

#[test]
fn content_length_is_checked_in_each_unit() {
    let cfg = "{allowed_payload_size: 10, size_unit: bytes}";
    assert_eq!(run(cfg, &[("content-length", "10")], None), (None, None));
    assert_eq!(
        run(cfg, &[("content-length", "11")], None),
        (Some(413), None)
    );
    let expect = [("content-length", "11"), ("expect", " 100-Continue ")];
    assert_eq!(run(cfg, &expect, None), (Some(417), None));
    let kb = "{allowed_payload_size: 1, size_unit: kilobytes}";
    assert_eq!(run(kb, &[("content-length", "1024")], None).0, None);
    assert_eq!(run(kb, &[("content-length", "1025")], None).0, Some(413));
    // The default: 128 megabytes.
    assert_eq!(run("{}", &[("content-length", "134217728")], None).0, None);
    assert_eq!(
        run("{}", &[("content-length", "134217729")], None).0,
        Some(413)
    );
}

#[test]
fn bodies_without_a_length() {
    let cfg = "{allowed_payload_size: 10, size_unit: bytes}";
    // Streamed: the proxy counts it against the cap.
    assert_eq!(
        run(cfg, &[("transfer-encoding", "chunked")], None),
        (None, Some(10))
    );
    // Buffered by another plugin: measured at once.
    assert_eq!(run(cfg, &[], Some("12345678901")).0, Some(413));
    assert_eq!(run(cfg, &[], Some("1234567890")), (None, None));
    let required = "{allowed_payload_size: 10, size_unit: bytes, require_content_length: true}";
    assert_eq!(run(required, &[], None).0, Some(411));
    assert_eq!(
        run(required, &[("transfer-encoding", "chunked")], None),
        (None, Some(10))
    );
    // A negative size refuses any body.
    assert_eq!(run("{allowed_payload_size: -1}", &[], None).0, Some(413));
}
