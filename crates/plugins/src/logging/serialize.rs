//! Kong's basic log serializer (`kong.log.serialize()`): one JSON object per request, written straight to
//! bytes from the request context and the [`LogRecord`] with [`super::json`], without building a JSON tree.
//!
//! Shape (Kong 3.x field names):
//! `request {id, uri, url, querystring, method, headers, size, tls?}`, `upstream_uri`, `upstream_status`,
//! `response {status, headers, size}`, `latencies {kong, proxy, request, receive}`, `tries` (each with
//! `ip`, `port`, `balancer_start(_ns)`, `balancer_latency(_ns)`, and `state`/`code` when it failed),
//! `authenticated_entity {id, consumer_id}`, `route`, `service`, `consumer`, `client_ip`, `started_at` (ms),
//! `workspace`, `workspace_name`, `source` (`upstream` or `kong`). As in Kong, `authorization` and
//! `proxy-authorization` request headers are `REDACTED`, header names are lower case and repeated headers
//! become arrays, and absent entities are left out. `request.tls` names the version and cipher as nginx
//! does (`TLSv1.3`, `TLS_AES_128_GCM_SHA256`); `client_verify` is `NONE` (no client certificates yet).
//! `request.url` is nginx's `$scheme://$host:$server_port$request_uri`, as Kong builds it.
//! `request.size`/`response.size` count the head as HTTP/1.1 text plus the body bytes, like nginx's
//! `request_length`/`bytes_sent`.

mod epoch;
#[cfg(test)]
mod golden;
mod host;
#[cfg(test)]
mod tests;

use super::entities::EntityJson;
use super::json::{self, Object};
use crate::ctx::{LogRecord, RequestCtx, TryRecord};
pub(crate) use host::raw_host;
use host::request_host_text;
use http::HeaderMap;
use std::borrow::Cow;
use std::cell::Cell;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The id Sluice reports for its one workspace, Kong's `default`: the id Kong gives it in DB-less mode
/// (`DECLARATIVE_DEFAULT_WORKSPACE_ID` in `kong/constants.lua`; with a database Kong makes one up when it
/// bootstraps).
pub const DEFAULT_WORKSPACE_ID: &str = workspace_id!();

/// [`DEFAULT_WORKSPACE_ID`] as a literal, for the fragments built with `concat!`.
macro_rules! workspace_id {
    () => {
        "0dc6f45b-8f8d-40d2-a504-473544ee190b"
    };
}
use workspace_id;

/// The serialized record of one finished request (one JSON object, no trailing newline). Routes and
/// services are copied from `entities` when it has them.
///
/// The fixed keys are written as literal fragments with their separators (`,"latencies":{"kong":`), one
/// copy each instead of the four pushes a generic key writer makes: the record has about fifty keys.
pub fn serialize(ctx: &RequestCtx<'_>, record: &LogRecord, entities: &EntityJson) -> Vec<u8> {
    let mut out = Vec::with_capacity(LAST_SIZE.get() + SIZE_SLACK);
    let o = &mut out;
    // The wall clock at the request's start, read once for `started_at` and every try's start.
    let since_epoch = since_epoch(ctx.started_wall);
    request(o, ctx, record);
    if let Some(uri) = &record.upstream_uri {
        o.extend_from_slice(b",\"upstream_uri\":\"");
        json::text(o, uri);
        o.push(b'"');
    }
    // The status is formatted once, for `upstream_status` and `response.status`.
    let mut status = itoa::Buffer::new();
    let status = status.format(record.status).as_bytes();
    match record.source {
        "upstream" => {
            o.extend_from_slice(b",\"upstream_status\":\"");
            o.extend_from_slice(status);
            o.extend_from_slice(b"\",\"response\":{\"status\":");
        }
        _ => o.extend_from_slice(b",\"upstream_status\":\"\",\"response\":{\"status\":"),
    }
    o.extend_from_slice(status);
    o.extend_from_slice(b",\"headers\":");
    record.response_headers.write(o);
    o.extend_from_slice(b",\"size\":");
    json::uint(o, response_size(record));
    o.extend_from_slice(b"},\"latencies\":{\"kong\":");
    latencies(o, record);
    if !record.tries.is_empty() {
        o.extend_from_slice(b",\"tries\":");
        tries(o, (ctx.started, since_epoch), record.tries.iter());
    }
    if let Some(cred) = &ctx.credential {
        o.extend_from_slice(b",\"authenticated_entity\":{\"id\":");
        uuid(o, &cred.id);
        if let Some(c) = ctx.consumer {
            o.extend_from_slice(b",\"consumer_id\":");
            uuid(o, &c.id);
        }
        o.push(b'}');
    }
    entities.write_route_and_service(o, ctx.route, ctx.service);
    if let Some(consumer) = ctx.consumer {
        o.extend_from_slice(b",\"consumer\":");
        // Serializing a plain struct into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *o, consumer);
    }
    o.extend_from_slice(b",\"client_ip\":");
    json::ip(o, ctx.client_ip);
    epoch::started_at(o, since_epoch);
    o.extend_from_slice(WORKSPACE_FIELDS);
    o.extend_from_slice(match record.source {
        "upstream" => b",\"source\":\"upstream\"}",
        _ => b",\"source\":\"kong\"}",
    });
    LAST_SIZE.set(out.len());
    out
}

/// `workspace` and `workspace_name` of every record (Sluice has one workspace), as one fragment.
pub(super) const WORKSPACE_FIELDS: &[u8] = concat!(
    r#","workspace":""#,
    workspace_id!(),
    r#"","workspace_name":"default""#
)
.as_bytes();

thread_local! {
    /// The size of the last record this thread wrote. Records of one gateway are much alike, so the next
    /// one is given that much room (and [`SIZE_SLACK`] more) up front: growing the buffer halfway would
    /// copy what was written so far (a reallocation and ~1k instructions per record for a 2.2 kB record).
    static LAST_SIZE: Cell<usize> = const { Cell::new(2048) };
}

/// Room beyond the last record's size, for a longer URI, header or latency.
const SIZE_SLACK: usize = 256;

/// The request target as the client sent it (path and query).
fn request_uri(req: &http::request::Parts) -> &str {
    req.uri
        .path_and_query()
        .map_or_else(|| req.uri.path(), |pq| pq.as_str())
}

/// `request.size`: the head as HTTP/1.1 text plus the body bytes (nginx's `request_length`).
pub(crate) fn request_size(ctx: &RequestCtx<'_>, record: &LogRecord) -> u64 {
    request_size_of(ctx, record, fields_size(&ctx.request.headers))
}

/// `request.size` when the header lines' bytes (`fields`, see [`fields_size`]) are known.
fn request_size_of(ctx: &RequestCtx<'_>, record: &LogRecord, fields: usize) -> u64 {
    head_len(&ctx.request, fields) + record.request_bytes
}

/// The bytes of a request's head as HTTP/1.1 text: the request line, the header lines and the blank
/// line, the head's part of nginx's `$request_length`. Used by Prometheus' ingress bandwidth, which adds
/// the body's length; an HTTP/2 request is counted as if it came as HTTP/1.1 text, since HPACK's bytes
/// are not known per request.
pub fn request_head_len(req: &http::request::Parts) -> u64 {
    head_len(req, fields_size(&req.headers))
}

/// [`request_head_len`] when the header lines' bytes (`fields`) are known.
fn head_len(req: &http::request::Parts, fields: usize) -> u64 {
    // `GET /path HTTP/1.1\r\n`: the method, a space, the target, " HTTP/1.1" and CRLF (11).
    let first_line = req.method.as_str().len() + 1 + request_uri(req).len() + 11;
    (first_line + fields + 2) as u64
}

/// `response.size`: the head as HTTP/1.1 text plus the body bytes (nginx's `bytes_sent`).
pub(crate) fn response_size(record: &LogRecord) -> u64 {
    let fields = record.response_headers.fields_size();
    let reason = http::StatusCode::from_u16(record.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let status_line = 9 + 4 + reason.len() + 2;
    (status_line + fields + 2) as u64 + record.response_bytes
}

/// The record's start and its `request` member.
fn request(out: &mut Vec<u8>, ctx: &RequestCtx<'_>, record: &LogRecord) {
    let req = &ctx.request;
    let uri = request_uri(req);
    // The strings' quotes are in the fragments around them, and the target, written twice, is looked at
    // once for escapes.
    let plain_uri = json::is_plain(uri.as_bytes());
    out.extend_from_slice(b"{\"request\":{\"id\":\"");
    json::text(out, ctx.request_id);
    out.extend_from_slice(b"\",\"uri\":\"");
    json::text_checked(out, uri, plain_uri);
    // nginx's `$scheme://$host:$server_port$request_uri`, as Kong builds it: the scheme, separators and
    // port never need escaping, so only the host and the target are looked at.
    out.extend_from_slice(b"\",\"url\":\"");
    out.extend_from_slice(ctx.scheme.as_bytes());
    out.extend_from_slice(b"://");
    request_host_text(out, req);
    out.push(b':');
    json::uint(out, ctx.server_port.into());
    json::text_checked(out, uri, plain_uri);
    // A method is a token (`http::Method` holds no other): nothing to escape. Most targets have no query:
    // its empty object and the method's key are one fragment then.
    match req.uri.query().filter(|q| !q.is_empty()) {
        None => out.extend_from_slice(b"\",\"querystring\":{},\"method\":\""),
        Some(query) => {
            out.extend_from_slice(b"\",\"querystring\":");
            querystring(out, query);
            out.extend_from_slice(b",\"method\":\"");
        }
    }
    out.extend_from_slice(req.method.as_str().as_bytes());
    out.push(b'"');
    out.extend_from_slice(b",\"headers\":");
    let fields = headers(out, &req.headers, true, |_| false);
    out.extend_from_slice(b",\"size\":");
    json::uint(out, request_size_of(ctx, record, fields));
    if let Some(tls) = &ctx.tls {
        out.push(b',');
        tls_fields(out, tls);
    }
    out.push(b'}');
}

/// `"tls":{…}` of a TLS request or session, as nginx names the version and cipher.
pub(super) fn tls_fields(out: &mut Vec<u8>, tls: &sluice_tls::Negotiated) {
    out.extend_from_slice(b"\"tls\":{\"version\":");
    json::string(out, tls.version);
    out.extend_from_slice(b",\"cipher\":");
    json::string(out, tls.cipher);
    out.extend_from_slice(b",\"client_verify\":\"NONE\"}");
}

/// `latencies` from its first value on (the caller wrote `"latencies":{"kong":`).
fn latencies(out: &mut Vec<u8>, record: &LogRecord) {
    json::uint(out, record.kong_latency_ms);
    // -1 when the request was not proxied, as Kong.
    out.extend_from_slice(b",\"proxy\":");
    json::int(out, record.upstream_latency_ms.map_or(-1, |ms| ms as i64));
    out.extend_from_slice(b",\"request\":");
    json::uint(out, record.request_latency_ms);
    // Kong's `receive`: from the upstream's response head to its last byte, what the request's total leaves
    // after the gateway's and the upstream's own time (0 when not proxied).
    let receive = record.upstream_latency_ms.map_or(0, |upstream| {
        (record.request_latency_ms).saturating_sub(record.kong_latency_ms + upstream)
    });
    out.extend_from_slice(b",\"receive\":");
    json::uint(out, receive);
    out.push(b'}');
}

/// `tries`, each try's start placed on the wall clock from `started` (when the request or session began,
/// by the clock, and by the wall clock as time since the epoch: see [`since_epoch`]).
pub(super) fn tries<'a>(
    out: &mut Vec<u8>,
    started: (Instant, Duration),
    tries: impl Iterator<Item = &'a TryRecord>,
) {
    for (i, t) in tries.enumerate() {
        out.extend_from_slice(match i {
            0 => b"[{\"ip\":",
            _ => b",{\"ip\":",
        });
        // Durations added, not a `SystemTime` moved and measured from the epoch again per try.
        let since_epoch = started.1 + t.started.saturating_duration_since(started.0);
        json::ip(out, t.addr.ip());
        out.extend_from_slice(b",\"port\":");
        json::uint(out, t.addr.port().into());
        epoch::balancer_start(out, since_epoch);
        let latency = (
            &b",\"balancer_latency\":"[..],
            &b",\"balancer_latency_ns\":"[..],
        );
        millis_and_nanos(out, latency, t.latency);
        if let Some(code) = t.failed {
            out.extend_from_slice(b",\"state\":\"failed\",\"code\":");
            json::uint(out, code.into());
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// `<key>:<ms>,<key>_ns:<ns>` for `d` (`keys` given with their leading commas and quotes, e.g.
/// `,"balancer_start":` and `,"balancer_start_ns":`). The milliseconds are the nanoseconds' digits but
/// the last six, so one number is formatted for both (two 19-digit `itoa`s per try otherwise).
fn millis_and_nanos(out: &mut Vec<u8>, (key, key_ns): (&[u8], &[u8]), d: Duration) {
    debug_assert_eq!(key_ns, [&key[..key.len() - 2], b"_ns\":"].concat());
    let mut buffer = itoa::Buffer::new();
    let nanos = buffer.format(d.as_nanos() as u64).as_bytes();
    out.extend_from_slice(key);
    match nanos.len().checked_sub(6) {
        Some(ms) if ms > 0 => out.extend_from_slice(&nanos[..ms]),
        _ => out.push(b'0'),
    }
    out.extend_from_slice(key_ns);
    out.extend_from_slice(nanos);
}

pub(super) fn uuid(out: &mut Vec<u8>, id: &uuid::Uuid) {
    json::string(
        out,
        id.hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()),
    );
}

pub(super) fn epoch_ms(t: SystemTime) -> u64 {
    since_epoch(t).as_millis() as u64
}

/// The wall clock time `t` as time since the epoch (zero before it).
pub(super) fn since_epoch(t: SystemTime) -> Duration {
    t.duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// Bytes of a head's header lines as HTTP/1.1 text: `name: value\r\n` per header.
fn fields_size(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(n, v)| n.as_str().len() + 2 + v.len() + 2)
        .sum()
}

/// Headers as a JSON object: lower-case names, one string per header or an array for repeated ones
/// (`HeaderMap` yields the values of one name one after another, each with a reference to the same
/// name, so a repeat is told by address; the rare second value turns the first into an array in place).
/// With `redact`, credentials (`authorization`, `proxy-authorization`) become `REDACTED`, as Kong does.
/// Names `replaced` says yes to are left out (fields the server writes itself in their stead).
/// Returns the bytes of the header lines as HTTP/1.1 text (what [`fields_size`] counts), added up on
/// the way rather than in a second pass for `size`.
pub(super) fn headers(
    out: &mut Vec<u8>,
    map: &HeaderMap,
    redact: bool,
    replaced: impl Fn(&http::HeaderName) -> bool,
) -> usize {
    let mut previous: Option<&http::HeaderName> = None;
    // Where the current name's first value starts, and whether it became an array.
    let (mut first_value, mut array, mut secret) = (0, false, false);
    let mut fields = 0;
    out.push(b'{');
    // The current name's length (`as_str` of a standard name is a table lookup, done once per name).
    let mut name_len = 0;
    for (name, value) in map {
        if previous.is_some_and(|p| std::ptr::eq(p, name)) {
            fields += name_len + 2 + value.len() + 2;
            if secret {
                continue;
            }
            if !array {
                out.insert(first_value, b'[');
                array = true;
            }
            out.push(b',');
            json::bytes(out, value.as_bytes());
            continue;
        }
        if replaced(name) {
            continue;
        }
        match (array, previous.is_some()) {
            (true, _) => out.extend_from_slice(b"],\""),
            (false, true) => out.extend_from_slice(b",\""),
            (false, false) => out.push(b'"'),
        }
        previous = Some(name);
        array = false;
        secret = redact
            && (name == http::header::AUTHORIZATION || name == http::header::PROXY_AUTHORIZATION);
        let text = name.as_str();
        name_len = text.len();
        fields += name_len + 2 + value.len() + 2;
        out.extend_from_slice(text.as_bytes());
        // After the key's closing `":`.
        first_value = out.len() + 2;
        match secret {
            true => out.extend_from_slice(b"\":\"REDACTED\""),
            false => json::key_end_and_bytes(out, value.as_bytes()),
        }
    }
    if array {
        out.push(b']');
    }
    out.push(b'}');
    fields
}

/// `+` as space, then percent-decoding (invalid UTF-8 replaced), as nginx decodes query arguments.
fn decode(raw: &str) -> Cow<'_, str> {
    if !raw.contains(['+', '%']) {
        return Cow::Borrowed(raw);
    }
    let spaced = raw.replace('+', " ");
    Cow::Owned(
        percent_encoding::percent_decode_str(&spaced)
            .decode_utf8_lossy()
            .into_owned(),
    )
}

/// A query string as Kong's `querystring` table: decoded names and values, `true` for a name without `=`,
/// an array when a name repeats (in order of first appearance).
fn querystring(out: &mut Vec<u8>, raw: &str) {
    // One value of an argument: None for a bare name.
    type Values<'a> = Vec<Option<Cow<'a, str>>>;
    let mut args: Vec<(Cow<'_, str>, Values<'_>)> = Vec::new();
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (name, arg) = match pair.split_once('=') {
            Some((n, v)) => (decode(n), Some(decode(v))),
            None => (decode(pair), None),
        };
        if name.is_empty() {
            continue;
        }
        match args.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(arg),
            None => args.push((name, vec![arg])),
        }
    }
    let write = |out: &mut Vec<u8>, arg: &Option<Cow<'_, str>>| match arg {
        Some(v) => json::string(out, v),
        None => out.extend_from_slice(b"true"),
    };
    let mut o = Object::open(out);
    for (name, values) in &args {
        let out = o.key_text(name);
        match values.as_slice() {
            [one] => write(out, one),
            many => {
                out.push(b'[');
                for (i, v) in many.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(out, v);
                }
                out.push(b']');
            }
        }
    }
    o.close();
}
