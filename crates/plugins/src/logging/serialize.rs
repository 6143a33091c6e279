//! Kong's basic log serializer (`kong.log.serialize()`): one JSON object per request, written straight to
//! bytes from the request context and the [`LogRecord`] without building a JSON tree.
//!
//! Shape (Kong 3.x field names):
//! `request {id, uri, url, querystring, method, headers, size}`, `upstream_status`,
//! `response {status, headers, size}`, `latencies {kong, proxy, request, receive}`, `tries`,
//! `authenticated_entity {id, consumer_id}`, `route`, `service`, `consumer`, `client_ip`, `started_at` (ms),
//! `source` (`upstream` or `kong`). As in Kong, `authorization` and `proxy-authorization` request headers are
//! `REDACTED`, header names are lower case and repeated headers become arrays, and absent entities are left
//! out. Not provided yet: `upstream_uri`, `request.tls`, `workspace`; `tries` has only the last target, and
//! `request.url` uses the `Host` header as sent (Kong adds the listener's port).
//! `request.size`/`response.size` count the head as HTTP/1.1 text plus the body bytes, like nginx's
//! `request_length`/`bytes_sent`.

#[cfg(test)]
mod tests;

use super::entities::{EntityJson, Json};
use crate::ctx::{LogRecord, RequestCtx};
use http::HeaderMap;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::net::IpAddr;
use std::time::UNIX_EPOCH;

/// The serialized record of one finished request (one JSON object, no trailing newline). Routes and
/// services are copied from `entities` when it has them.
pub fn serialize(ctx: &RequestCtx<'_>, record: &LogRecord, entities: &EntityJson) -> Vec<u8> {
    let entry = Entry::new(ctx, record, entities);
    let mut out = Vec::with_capacity(2048);
    // Serializing plain structs, maps of strings and numbers to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &entry);
    out
}

#[derive(Serialize)]
struct Entry<'a> {
    request: Request<'a>,
    upstream_status: String,
    response: Response<'a>,
    latencies: Latencies,
    #[serde(skip_serializing_if = "Option::is_none")]
    tries: Option<[Try; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    authenticated_entity: Option<AuthenticatedEntity<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    route: Option<Json<'a, sluice_model::Route>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<Json<'a, sluice_model::Service>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer: Option<&'a sluice_model::Consumer>,
    client_ip: IpAddr,
    started_at: u64,
    source: &'static str,
}

#[derive(Serialize)]
struct Request<'a> {
    id: &'a str,
    uri: &'a str,
    url: String,
    querystring: Query<'a>,
    method: &'a str,
    headers: Headers<'a>,
    size: u64,
}

#[derive(Serialize)]
struct Response<'a> {
    status: u16,
    headers: Headers<'a>,
    size: u64,
}

#[derive(Serialize)]
struct Latencies {
    kong: u64,
    /// Milliseconds waiting for the upstream; -1 when the request was not proxied (as Kong).
    proxy: i64,
    request: u64,
    receive: u64,
}

#[derive(Serialize)]
struct Try {
    ip: IpAddr,
    port: u16,
}

#[derive(Serialize)]
struct AuthenticatedEntity<'a> {
    id: &'a uuid::Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer_id: Option<&'a uuid::Uuid>,
}

impl<'a> Entry<'a> {
    fn new(ctx: &'a RequestCtx<'a>, record: &'a LogRecord, entities: &'a EntityJson) -> Entry<'a> {
        let req = &ctx.request;
        let uri = req
            .uri
            .path_and_query()
            .map_or_else(|| req.uri.path(), |pq| pq.as_str());
        let host = req
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri.authority().map(|a| a.as_str()))
            .unwrap_or_default();
        let request_head = head_size(req.method.as_str().len() + 1 + uri.len() + 11, &req.headers);
        let status_line = 9 + 4 + record_reason(record.status).len() + 2;
        Entry {
            request: Request {
                id: ctx.request_id,
                uri,
                url: format!("{}://{host}{uri}", ctx.scheme),
                querystring: Query(req.uri.query().unwrap_or_default()),
                method: req.method.as_str(),
                headers: Headers {
                    map: &req.headers,
                    redact: true,
                },
                size: request_head + record.request_bytes,
            },
            upstream_status: match record.source {
                "upstream" => record.status.to_string(),
                _ => String::new(),
            },
            response: Response {
                status: record.status,
                headers: Headers {
                    map: &record.response_headers,
                    redact: false,
                },
                size: head_size(status_line, &record.response_headers) + record.response_bytes,
            },
            latencies: Latencies {
                kong: record.kong_latency_ms,
                proxy: record.upstream_latency_ms.map_or(-1, |ms| ms as i64),
                request: record.request_latency_ms,
                receive: 0,
            },
            tries: record.upstream_addr.map(|a| {
                [Try {
                    ip: a.ip(),
                    port: a.port(),
                }]
            }),
            authenticated_entity: ctx.credential.map(|c| AuthenticatedEntity {
                id: c.id,
                consumer_id: ctx.consumer.map(|c| &c.id),
            }),
            route: ctx.route.map(|r| entities.route(r)),
            service: ctx.service.map(|s| entities.service(s)),
            consumer: ctx.consumer,
            client_ip: ctx.client_ip,
            started_at: ctx
                .started_wall
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            source: match record.source {
                "upstream" => "upstream",
                _ => "kong",
            },
        }
    }
}

fn record_reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
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

/// Headers as a JSON object: lower-case names, one string per header or an array for repeated ones.
struct Headers<'a> {
    map: &'a HeaderMap,
    /// Replace credentials (`authorization`, `proxy-authorization`) with `REDACTED`, as Kong does.
    redact: bool,
}

impl Serialize for Headers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.map.keys_len()))?;
        for name in self.map.keys() {
            let secret = self.redact
                && (name == http::header::AUTHORIZATION
                    || name == http::header::PROXY_AUTHORIZATION);
            if secret {
                map.serialize_entry(name.as_str(), "REDACTED")?;
                continue;
            }
            let mut values = self.map.get_all(name).iter();
            let first = values.next().map(|v| String::from_utf8_lossy(v.as_bytes()));
            match (first, values.next()) {
                (Some(one), None) => map.serialize_entry(name.as_str(), &one)?,
                _ => map.serialize_entry(name.as_str(), &Many(self.map, name))?,
            }
        }
        map.end()
    }
}

/// All values of a repeated header, as a JSON array.
struct Many<'a>(&'a HeaderMap, &'a http::HeaderName);

impl Serialize for Many<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for v in self.0.get_all(self.1) {
            seq.serialize_element(&String::from_utf8_lossy(v.as_bytes()))?;
        }
        seq.end()
    }
}

/// A query string as Kong's `querystring` table: decoded names and values, `true` for a name without `=`,
/// an array when a name repeats (in order of first appearance).
struct Query<'a>(&'a str);

/// The value(s) of one query argument.
enum Arg<'a> {
    Flag,
    Value(Cow<'a, str>),
}

impl Serialize for Arg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Arg::Flag => s.serialize_bool(true),
            Arg::Value(v) => s.serialize_str(v),
        }
    }
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

impl Serialize for Query<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut args: Vec<(Cow<'_, str>, Vec<Arg<'_>>)> = Vec::new();
        for pair in self.0.split('&').filter(|p| !p.is_empty()) {
            let (name, arg) = match pair.split_once('=') {
                Some((n, v)) => (decode(n), Arg::Value(decode(v))),
                None => (decode(pair), Arg::Flag),
            };
            if name.is_empty() {
                continue;
            }
            match args.iter_mut().find(|(n, _)| *n == name) {
                Some((_, values)) => values.push(arg),
                None => args.push((name, vec![arg])),
            }
        }
        let mut map = s.serialize_map(Some(args.len()))?;
        for (name, values) in &args {
            match values.as_slice() {
                [one] => map.serialize_entry(name, one)?,
                many => map.serialize_entry(name, many)?,
            }
        }
        map.end()
    }
}
