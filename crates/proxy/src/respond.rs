//! The headers Kong adds to responses: on proxied responses (`Via`, latencies, `Server` when the upstream
//! sent none, request id, upstream status) and on responses the gateway made itself (response latency,
//! `Server`, request id).
//!
//! A proxied response's headers are facts ([`KongHeaders`]) before they are fields. Where something reads
//! the head before it is written (plugins, hyper's h2 server) they go into the header map
//! ([`upstream_response`]); on the fast path and on routes whose plugins only log, over HTTP/1.1, the
//! writer appends them as text ([`KongHeaders::write`]), which spares the map's hashed inserts and the
//! request id's copy (a log record gets them as text too, [`KongHeaders::log_members`]).

use crate::names::{self, Name};
use crate::settings::HeaderSettings;
use crate::PRODUCT;
use http::header::{HeaderMap, HeaderName, HeaderValue, SERVER, VIA};
use sluice_h1::ResponseFields;
use sluice_plugins::header_numbers::number_text;
use sluice_plugins::logging::response_headers::Members;
use sluice_plugins::{header_number, AddedHeaders};
use sluice_upstream::forward;
use std::time::{Duration, Instant};

/// Latencies of a proxied request.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// Time spent in the gateway before the upstream was contacted (`X-Kong-Proxy-Latency`).
    pub proxy: Duration,
    /// From sending to the upstream until its response head (`X-Kong-Upstream-Latency`).
    pub upstream: Duration,
}

fn ms(d: Duration) -> HeaderValue {
    header_number(d.as_millis() as u64)
}

/// A request id as a header value, marked sensitive: HPACK then never indexes it. Every request's id is
/// new, and h2's encoder would otherwise fill its table with them and compare each one it holds for
/// every field of that name (~100 value comparisons a gRPC call, callgrind). HTTP/1.1 ignores the mark.
pub(crate) fn request_id_value(request_id: &str) -> HeaderValue {
    let mut value = HeaderValue::from_str(request_id).unwrap_or(HeaderValue::from_static(""));
    value.set_sensitive(true);
    value
}

/// The most fields [`KongHeaders`] adds.
const FIELDS: usize = 6;

/// Kong's headers on a proxied response, as facts: which are on (Kong's `headers` setting) and their
/// values. The upstream's own `Server` is kept; every other one replaces the upstream's field of its name.
#[derive(Debug, Clone, Copy)]
pub struct KongHeaders {
    on: HeaderSettings,
    timings: Timings,
    status: u16,
    request_id: [u8; 32],
}

/// One of Kong's fields, its value not yet made.
enum Value<'a> {
    Number(u64),
    /// A value known when the binary is built, and its whole HTTP/1.1 line (name, value and CRLF).
    Static(&'static str, &'static str),
    Text(&'a str),
}

impl<'a> Value<'a> {
    /// The value's bytes (a number from the small numbers' table, or formatted into `number`).
    #[inline(always)]
    fn bytes<'b>(&self, number: &'b mut itoa::Buffer) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Value::Number(n) => number_text(n, number),
            Value::Static(token, _) => token.as_bytes(),
            Value::Text(s) => s.as_bytes(),
        }
    }
}

/// `Via` (the gateway's token as an HTTP/1.1 hop) and `Server`, as whole lines.
const VIA_LINE: &str = concat!("via: 1.1 sluice/", env!("CARGO_PKG_VERSION"), "\r\n");
const SERVER_LINE: &str = concat!("server: sluice/", env!("CARGO_PKG_VERSION"), "\r\n");

impl KongHeaders {
    /// The headers of a response with `status` from the upstream, for the request `request_id`.
    pub fn new(on: HeaderSettings, timings: Timings, status: u16, request_id: [u8; 32]) -> Self {
        KongHeaders {
            on,
            timings,
            status,
            request_id,
        }
    }

    /// Each field that is on, in Kong's order. `Via` is the gateway's token alone: a head that already has
    /// one goes through [`upstream_response`], which joins them. `Server` only when `server` is false (the
    /// upstream sent none).
    fn each(&self, has_server: bool, mut field: impl FnMut(&Name, Value<'_>)) {
        let on = self.on;
        let millis = |d: Duration| Value::Number(d.as_millis() as u64);
        if on.upstream_latency {
            field(
                &names::X_KONG_UPSTREAM_LATENCY,
                millis(self.timings.upstream),
            );
        }
        if on.proxy_latency {
            field(&names::X_KONG_PROXY_LATENCY, millis(self.timings.proxy));
        }
        if on.via {
            let token = forward::via_token(http::Version::HTTP_11);
            field(&names::VIA, Value::Static(token, VIA_LINE));
        }
        if on.server && !has_server {
            field(&names::SERVER, Value::Static(PRODUCT, SERVER_LINE));
        }
        if on.request_id {
            let id = sluice_upstream::request_id::as_str(&self.request_id);
            field(&names::X_KONG_REQUEST_ID, Value::Text(id));
        }
        if on.upstream_status {
            field(
                &names::X_KONG_UPSTREAM_STATUS,
                Value::Number(u64::from(self.status)),
            );
        }
    }

    /// Whether the upstream's field `name` gives way to one of these (every one but `Server`, which the
    /// upstream's wins).
    #[inline]
    pub fn replaces(&self, name: &HeaderName) -> bool {
        self.replaces_name(name.as_str().as_bytes())
    }

    /// [`KongHeaders::replaces`] for a name as received (any case). Only names starting with `x-kong-` are
    /// compared, so most fields cost one check.
    #[inline]
    pub fn replaces_name(&self, name: &[u8]) -> bool {
        if name.len() <= 7 || !name[..7].eq_ignore_ascii_case(b"x-kong-") {
            return false;
        }
        let on = self.on;
        let is = |n: &Name| name.eq_ignore_ascii_case(n.name.as_str().as_bytes());
        (on.upstream_latency && is(&names::X_KONG_UPSTREAM_LATENCY))
            || (on.proxy_latency && is(&names::X_KONG_PROXY_LATENCY))
            || (on.request_id && is(&names::X_KONG_REQUEST_ID))
            || (on.upstream_status && is(&names::X_KONG_UPSTREAM_STATUS))
    }

    /// Appends the fields as HTTP/1.1 text, but those `skip` names; `has_server`: the head already has a
    /// `Server`.
    pub fn write(&self, out: &mut Vec<u8>, has_server: bool, skip: impl Fn(&HeaderName) -> bool) {
        self.each(has_server, |name, value| {
            if skip(&name.name) {
                return;
            }
            if let Value::Static(_, line) = value {
                return out.extend_from_slice(line.as_bytes());
            }
            out.extend_from_slice(name.line.as_bytes());
            out.extend_from_slice(value.bytes(&mut itoa::Buffer::new()));
            out.extend_from_slice(b"\r\n");
        });
    }

    /// Appends the fields to a log record's copy of a head whose fields the server adds late, as
    /// [`KongHeaders::write`] writes them; `has_server`: the head already has a `Server`. Their names are
    /// constant keys and their values need no escaping: a copy each (~1.1k instructions per request
    /// through the generic header writer, issue 24).
    pub fn log_members(&self, members: &mut Members, has_server: bool) {
        self.each(has_server, |name, value| {
            members.plain(name.json, value.bytes(&mut itoa::Buffer::new()));
        });
    }

    /// Puts the fields into a header map whose hop-by-hop fields are gone (an upstream `Via` joined).
    pub fn insert(&self, headers: &mut HeaderMap) {
        // Grown once for all of them, not field by field.
        headers.reserve(FIELDS);
        let has_server = headers.contains_key(SERVER);
        // The upstream's `Via` values with the gateway's token after them, in one field.
        let mut joined_via = (self.on.via && headers.contains_key(VIA))
            .then(|| forward::appended(headers, VIA, forward::via_token(http::Version::HTTP_11)));
        self.each(has_server, |name, value| {
            let value = match (joined_via.take_if(|_| name.name == VIA), value) {
                (Some(joined), _) => joined,
                (None, Value::Number(n)) => header_number(n),
                (None, Value::Static(s, _)) => HeaderValue::from_static(s),
                (None, Value::Text(s)) => request_id_value(s),
            };
            headers.insert(&name.name, value);
        });
    }
}

/// What a fast-path response's head gets when it is written: the upstream's fields as received when they
/// were left out of the map too (the HTTP/1.1 writer's `upstream_fields`), Kong's headers, then the
/// headers plugins that act in `access` only added (after Kong's, as Kong's `header_filter` runs the
/// plugins after its own: a plugin's name replaces Kong's field and the upstream's).
#[derive(Debug)]
pub struct LateHeaders {
    pub kong: KongHeaders,
    pub added: AddedHeaders,
    /// The upstream's fields, when no map was made of them (the fast path over HTTP/1.1).
    pub upstream: Option<ResponseFields>,
}

impl LateHeaders {
    /// Whether the upstream's field `name` gives way to one of these.
    #[inline]
    pub fn replaces(&self, name: &HeaderName) -> bool {
        self.replaces_name(name.as_str().as_bytes())
    }

    /// [`LateHeaders::replaces`] for a name as received (any case).
    #[inline]
    pub fn replaces_name(&self, name: &[u8]) -> bool {
        self.kong.replaces_name(name) || self.added.contains_name(name)
    }

    /// Appends them as HTTP/1.1 text; `has_server`: the head already has a `Server`. A Kong field a plugin
    /// replaced is left out (most are known absent from their length alone: [`AddedHeaders::contains`]);
    /// without plugins' headers, nothing is asked per field.
    pub fn write(&self, out: &mut Vec<u8>, has_server: bool) {
        match self.added.is_empty() {
            true => self.kong.write(out, has_server, |_| false),
            false => (self.kong).write(out, has_server, |name| self.added.contains(name)),
        }
        self.added.write_lines(out);
    }

    /// Puts them into a header map whose hop-by-hop fields are gone; the upstream's fields, when they were
    /// left out of it, go first (hop-by-hop fields out), before anything the map already holds.
    pub fn insert(self, headers: &mut HeaderMap) {
        if let Some(fields) = &self.upstream {
            let own = std::mem::replace(headers, forwarded_map(fields));
            for (name, value) in &own {
                headers.append(name, value.clone());
            }
        }
        self.kong.insert(headers);
        self.added.apply(headers);
    }
}

/// The upstream's `fields` as a header map, hop-by-hop fields out: the map's way of the fields a client
/// gets (before Kong's), for a head the HTTP/1.1 writer does not write from their bytes.
pub fn forwarded_map(fields: &ResponseFields) -> HeaderMap {
    let mut map = fields.to_map();
    forward::strip_hop_by_hop(&mut map);
    map
}

/// Decorates an upstream's response head in its map: hop-by-hop headers removed, then Kong's headers.
pub fn upstream_response(head: &mut http::response::Parts, kong: &KongHeaders) {
    forward::strip_hop_by_hop(&mut head.headers);
    kong.insert(&mut head.headers);
}

/// Decorates a response the gateway made itself (an error or a plugin's answer).
pub fn gateway_response(
    headers: &mut HeaderMap,
    h: HeaderSettings,
    request_id: &str,
    started: Instant,
) {
    if h.response_latency {
        headers.insert(names::X_KONG_RESPONSE_LATENCY.name, ms(started.elapsed()));
    }
    if h.server {
        headers.insert(SERVER, HeaderValue::from_static(PRODUCT));
    } else {
        headers.remove(SERVER);
    }
    if h.request_id {
        headers.insert(names::X_KONG_REQUEST_ID.name, request_id_value(request_id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kong(on: HeaderSettings) -> KongHeaders {
        let timings = Timings {
            proxy: Duration::from_millis(3),
            upstream: Duration::from_millis(1234),
        };
        KongHeaders::new(on, timings, 503, *b"0123456789abcdef0123456789abcdef")
    }

    /// The fields as text, the way the HTTP/1.1 writer puts them after the upstream's.
    fn written(k: &KongHeaders, has_server: bool) -> Vec<(String, String)> {
        let mut out = Vec::new();
        k.write(&mut out, has_server, |_| false);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.split_once(": ").unwrap())
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect()
    }

    fn inserted(k: &KongHeaders, map: &mut HeaderMap) -> Vec<(String, String)> {
        k.insert(map);
        map.iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn written_late_or_inserted_the_fields_are_the_same() {
        let all = HeaderSettings::ALL;
        for on in [all, HeaderSettings::default(), HeaderSettings::OFF] {
            let k = kong(on);
            assert_eq!(written(&k, false), inserted(&k, &mut HeaderMap::new()));
        }
        let k = kong(all);
        let fields = written(&k, false);
        let value = |name: &str| fields.iter().find(|f| f.0 == name).map(|f| f.1.as_str());
        assert_eq!(value("x-kong-upstream-latency"), Some("1234"));
        assert_eq!(value("x-kong-proxy-latency"), Some("3"));
        assert_eq!(value("x-kong-upstream-status"), Some("503"));
        assert_eq!(
            value("x-kong-request-id"),
            Some("0123456789abcdef0123456789abcdef")
        );
        assert_eq!(value("server"), Some(PRODUCT));
    }

    #[test]
    fn plugins_headers_come_after_kongs_and_replace_them() {
        let mut added = AddedHeaders::new();
        let limit = HeaderName::from_static("ratelimit-limit");
        added.insert(limit.clone(), HeaderValue::from_static("5"));
        added.insert(
            names::X_KONG_PROXY_LATENCY.name,
            HeaderValue::from_static("plugin"),
        );
        let late = LateHeaders {
            kong: kong(HeaderSettings::default()),
            added,
            upstream: None,
        };
        let mut out = Vec::new();
        late.write(&mut out, false);
        let mut written: Vec<(String, String)> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.split_once(": ").unwrap())
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        assert!(written.contains(&("x-kong-proxy-latency".into(), "plugin".into())));
        assert_eq!(
            written.last(),
            Some(&("x-kong-proxy-latency".into(), "plugin".into()))
        );
        assert!(late.replaces(&limit) && late.replaces_name(b"X-Kong-Proxy-Latency"));
        let mut map = HeaderMap::new();
        LateHeaders {
            kong: late.kong,
            added: late.added.clone(),
            upstream: None,
        }
        .insert(&mut map);
        let mut inserted: Vec<(String, String)> = map
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        written.sort();
        inserted.sort();
        assert_eq!(written, inserted);
    }

    #[test]
    fn the_upstreams_server_stays_and_its_kong_fields_give_way() {
        let k = kong(HeaderSettings::default());
        assert!(written(&k, true).iter().all(|f| f.0 != "server"));
        let mut map = HeaderMap::new();
        map.insert(SERVER, HeaderValue::from_static("up/1"));
        map.insert(VIA, HeaderValue::from_static("1.1 inner"));
        let fields = inserted(&k, &mut map);
        assert!(fields.contains(&("server".into(), "up/1".into())));
        let via = format!("1.1 inner, {}", forward::via_token(http::Version::HTTP_11));
        assert!(fields.contains(&("via".into(), via)));
        for name in [
            "x-kong-upstream-latency",
            "x-kong-request-id",
            "x-kong-proxy-latency",
        ] {
            assert!(k.replaces(&HeaderName::from_static(name)), "{name}");
            assert!(k.replaces_name(name.to_uppercase().as_bytes()), "{name}");
        }
        // Off by default, so an upstream's own is kept; not Kong's, never replaced.
        for name in ["x-kong-upstream-status", "x-kong-other", "server", "via"] {
            assert!(!k.replaces(&HeaderName::from_static(name)), "{name}");
        }
    }
}
