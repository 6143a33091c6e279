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

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;

use super::entities::EntityJson;
use super::json::{self, Object};
use crate::ctx::{LogRecord, RequestCtx, TryRecord};
use http::HeaderMap;
use std::borrow::Cow;
use std::cell::Cell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The id Sluice reports for its one workspace, Kong's `default`: the id Kong gives it in DB-less mode
/// (`DECLARATIVE_DEFAULT_WORKSPACE_ID` in `kong/constants.lua`; with a database Kong makes one up when it
/// bootstraps).
pub const DEFAULT_WORKSPACE_ID: &str = "0dc6f45b-8f8d-40d2-a504-473544ee190b";

/// The serialized record of one finished request (one JSON object, no trailing newline). Routes and
/// services are copied from `entities` when it has them.
pub fn serialize(ctx: &RequestCtx<'_>, record: &LogRecord, entities: &EntityJson) -> Vec<u8> {
    let mut out = Vec::with_capacity(LAST_SIZE.get() + SIZE_SLACK);
    let mut o = Object::open(&mut out);
    request(o.key("request"), ctx, record);
    if let Some(uri) = &record.upstream_uri {
        json::string(o.key("upstream_uri"), uri.as_str());
    }
    let mut status = itoa::Buffer::new();
    let upstream_status = match record.source {
        "upstream" => status.format(record.status),
        _ => "",
    };
    json::string(o.key("upstream_status"), upstream_status);
    response(o.key("response"), record);
    latencies(o.key("latencies"), record);
    if !record.tries.is_empty() {
        tries(
            o.key("tries"),
            (ctx.started, ctx.started_wall),
            &record.tries,
        );
    }
    if let Some(cred) = &ctx.credential {
        let out = o.key("authenticated_entity");
        let mut e = Object::open(out);
        uuid(e.key("id"), &cred.id);
        if let Some(c) = ctx.consumer {
            uuid(e.key("consumer_id"), &c.id);
        }
        e.close();
    }
    if let Some(route) = ctx.route {
        entities.write_route(o.key("route"), route);
    }
    if let Some(service) = ctx.service {
        entities.write_service(o.key("service"), service);
    }
    if let Some(consumer) = ctx.consumer {
        // Serializing a plain struct into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *o.key("consumer"), consumer);
    }
    json::ip(o.key("client_ip"), ctx.client_ip);
    json::uint(o.key("started_at"), epoch_ms(ctx.started_wall));
    json::string(o.key("workspace"), DEFAULT_WORKSPACE_ID);
    json::string(o.key("workspace_name"), "default");
    let source = match record.source {
        "upstream" => "upstream",
        _ => "kong",
    };
    json::string(o.key("source"), source);
    o.close();
    LAST_SIZE.set(out.len());
    out
}

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
    let req = &ctx.request;
    let first_line = req.method.as_str().len() + 1 + request_uri(req).len() + 11;
    head_size(first_line, &req.headers) + record.request_bytes
}

/// `response.size`: the head as HTTP/1.1 text plus the body bytes (nginx's `bytes_sent`).
pub(crate) fn response_size(record: &LogRecord) -> u64 {
    let reason = http::StatusCode::from_u16(record.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let status_line = 9 + 4 + reason.len() + 2;
    head_size(status_line, &record.response_headers) + record.response_bytes
}

fn request(out: &mut Vec<u8>, ctx: &RequestCtx<'_>, record: &LogRecord) {
    let req = &ctx.request;
    let uri = request_uri(req);
    let host = raw_host(req);
    let mut o = Object::open(out);
    json::string(o.key("id"), ctx.request_id);
    json::string(o.key("uri"), uri);
    // nginx's `$scheme://$host:$server_port$request_uri`, as Kong builds it.
    let mut port = itoa::Buffer::new();
    let port = port.format(ctx.server_port);
    json::string_parts(
        o.key("url"),
        &[
            ctx.scheme,
            "://",
            &sluice_router::bare_host(host),
            ":",
            port,
            uri,
        ],
    );
    querystring(o.key("querystring"), req.uri.query().unwrap_or_default());
    json::string(o.key("method"), req.method.as_str());
    headers(o.key("headers"), &req.headers, true);
    json::uint(o.key("size"), request_size(ctx, record));
    if let Some(tls) = &ctx.tls {
        let mut t = Object::open(o.key("tls"));
        json::string(t.key("version"), tls.version);
        json::string(t.key("cipher"), tls.cipher);
        json::string(t.key("client_verify"), "NONE");
        t.close();
    }
    o.close();
}

fn response(out: &mut Vec<u8>, record: &LogRecord) {
    let mut o = Object::open(out);
    json::uint(o.key("status"), record.status.into());
    headers(o.key("headers"), &record.response_headers, false);
    json::uint(o.key("size"), response_size(record));
    o.close();
}

fn latencies(out: &mut Vec<u8>, record: &LogRecord) {
    let mut o = Object::open(out);
    json::uint(o.key("kong"), record.kong_latency_ms);
    // -1 when the request was not proxied, as Kong.
    let proxy = record.upstream_latency_ms.map_or(-1, |ms| ms as i64);
    json::int(o.key("proxy"), proxy);
    json::uint(o.key("request"), record.request_latency_ms);
    // Kong's `receive`: from the upstream's response head to its last byte, what the request's total leaves
    // after the gateway's and the upstream's own time (0 when not proxied).
    let receive = record.upstream_latency_ms.map_or(0, |upstream| {
        (record.request_latency_ms).saturating_sub(record.kong_latency_ms + upstream)
    });
    json::uint(o.key("receive"), receive);
    o.close();
}

/// The request's `Host` (or, for an absolute-form target, its authority), port included.
pub(crate) fn raw_host(req: &http::request::Parts) -> &str {
    req.headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri.authority().map(|a| a.as_str()))
        .unwrap_or_default()
}

/// `tries`, each try's start placed on the wall clock from `started` (when the request or session began,
/// by the clock and by the wall clock).
pub(super) fn tries(out: &mut Vec<u8>, started: (Instant, SystemTime), tries: &[TryRecord]) {
    out.push(b'[');
    for (i, t) in tries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let wall = started.1 + t.started.saturating_duration_since(started.0);
        let mut o = Object::open(out);
        json::ip(o.key("ip"), t.addr.ip());
        json::uint(o.key("port"), t.addr.port().into());
        json::uint(o.key("balancer_start"), epoch_ms(wall));
        let start_ns = wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        json::uint(o.key("balancer_start_ns"), start_ns as u64);
        json::uint(o.key("balancer_latency"), t.latency.as_millis() as u64);
        json::uint(o.key("balancer_latency_ns"), t.latency.as_nanos() as u64);
        if let Some(code) = t.failed {
            json::string(o.key("state"), "failed");
            json::uint(o.key("code"), code.into());
        }
        o.close();
    }
    out.push(b']');
}

pub(super) fn uuid(out: &mut Vec<u8>, id: &uuid::Uuid) {
    json::string(
        out,
        id.hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()),
    );
}

pub(super) fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Bytes of an HTTP/1.1 head: the first line (`first_line` bytes including CRLF), `name: value\r\n` per
/// header, and the blank line.
fn head_size(first_line: usize, headers: &HeaderMap) -> u64 {
    let fields: usize = headers
        .iter()
        .map(|(n, v)| n.as_str().len() + 2 + v.len() + 2)
        .sum();
    (first_line + fields + 2) as u64
}

/// Headers as a JSON object: lower-case names, one string per header or an array for repeated ones
/// (`HeaderMap` yields the values of one name one after another; the rare second value turns the first
/// into an array in place). With `redact`, credentials (`authorization`, `proxy-authorization`) become
/// `REDACTED`, as Kong does.
fn headers(out: &mut Vec<u8>, map: &HeaderMap, redact: bool) {
    let mut o = Object::open(out);
    let mut previous: Option<&http::HeaderName> = None;
    // Where the current name's first value starts, and whether it became an array.
    let (mut first_value, mut array) = (0, false);
    for (name, value) in map {
        let secret = redact
            && (name == http::header::AUTHORIZATION || name == http::header::PROXY_AUTHORIZATION);
        if previous == Some(name) {
            if secret {
                continue;
            }
            if !array {
                o.out.insert(first_value, b'[');
                array = true;
            }
            o.out.push(b',');
            json::bytes(o.out, value.as_bytes());
            continue;
        }
        if array {
            o.out.push(b']');
        }
        previous = Some(name);
        array = false;
        let out = o.key(name.as_str());
        first_value = out.len();
        match secret {
            true => json::string(out, "REDACTED"),
            false => json::bytes(out, value.as_bytes()),
        }
    }
    if array {
        o.out.push(b']');
    }
    o.close();
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
