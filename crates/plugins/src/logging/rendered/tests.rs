//! Unit tests of `rendered`.
use super::*;
use crate::testing::{compile, request};

const CONFIG: &str = "_format_version: \"3.0\"\n";

fn log_record(status: u16) -> LogRecord {
    LogRecord {
        status,
        response_headers: Default::default(),
        request_bytes: 0,
        response_bytes: 3,
        kong_latency_ms: 1,
        upstream_latency_ms: None,
        request_latency_ms: 2,
        tries: Default::default(),
        upstream_uri: None,
        source: "gateway",
    }
}

/// A config's entity JSON with `loggers` plain-record loggers counted.
fn counted(loggers: usize) -> EntityJson {
    let entities = EntityJson::default();
    (0..loggers).for_each(|_| entities.count_logger());
    entities
}

#[test]
fn the_loggers_of_one_pass_share_one_rendering() {
    let (_, compiled) = compile(CONFIG);
    let ctx = RequestCtx::detached(request("GET", "/p", &[]), compiled.credentials());
    let (entities, rec) = (counted(2), log_record(200));
    begin_pass();
    let first = record(&ctx, &rec, &entities);
    let second = record(&ctx, &rec, &entities);
    assert_eq!(first, serialize(&ctx, &rec, &entities), "the plain record");
    assert_eq!(first.as_ptr(), second.as_ptr(), "one rendering, shared");
    begin_pass();
    let next = record(&ctx, &rec, &entities);
    assert_eq!(next, first);
    assert_ne!(next.as_ptr(), first.as_ptr(), "a new pass renders again");
    let other = log_record(502);
    let changed = record(&ctx, &other, &entities);
    assert_eq!(
        changed,
        serialize(&ctx, &other, &entities),
        "another record in the same pass is its own"
    );
}

#[test]
fn a_single_logger_keeps_nothing_back() {
    let (_, compiled) = compile(CONFIG);
    let ctx = RequestCtx::detached(request("GET", "/p", &[]), compiled.credentials());
    let (entities, rec) = (counted(1), log_record(200));
    begin_pass();
    let first = record(&ctx, &rec, &entities);
    let second = record(&ctx, &rec, &entities);
    assert_eq!(first, second);
    assert_ne!(first.as_ptr(), second.as_ptr(), "nothing is shared");
    assert!(first.is_unique(), "no reference kept");
}
