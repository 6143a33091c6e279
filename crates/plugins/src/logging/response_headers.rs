//! A response's headers as a log record shows them (`response.headers` of Kong's serializer), rendered
//! once, when the response head is handed to the client.
//!
//! The log phase runs after the last byte, when the head is gone; keeping a copy of its `HeaderMap` until
//! then (two allocations, a reference count per value, ~1k instructions with its drop) cost more than
//! writing the JSON object the serializer needs at once. The bytes of the header lines, which
//! `response.size` and statsd count, are added up on the way. Fields the server writes after the map's
//! (Kong's headers on a route whose plugins only log) are added as text ([`ResponseHeaders::with_late`]).

use super::json;
use super::serialize::headers;
use http::{HeaderMap, HeaderName};

/// The headers of a response as a JSON object (lower-case names, repeated names as arrays), and the
/// bytes of its header lines as HTTP/1.1 text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseHeaders {
    /// Empty for a response without headers (written as `{}`).
    json: Vec<u8>,
    fields: usize,
}

/// Room per header reserved up front (a header of a proxied response is usually shorter).
const ROOM_PER_HEADER: usize = 48;

impl ResponseHeaders {
    /// Renders `map`.
    pub fn of(map: &HeaderMap) -> ResponseHeaders {
        if map.is_empty() {
            return ResponseHeaders::default();
        }
        let mut json = Vec::with_capacity(2 + map.len() * ROOM_PER_HEADER);
        let fields = headers(&mut json, map, false, |_| false);
        ResponseHeaders { json, fields }
    }

    /// Renders the head the client gets when the server writes `late` fields after those of `map` (the
    /// fields Kong adds to a proxied response, left to the HTTP/1.1 writer): `map`'s fields but those
    /// `replaced` names, then each field `late` gives as name and value. `late` gives at most `LATE`
    /// fields, which have names of their own (no repeats, none of `map`'s that was kept).
    pub fn with_late(
        map: &HeaderMap,
        replaced: impl Fn(&HeaderName) -> bool,
        late: impl FnOnce(&mut dyn FnMut(&HeaderName, &str)),
    ) -> ResponseHeaders {
        const LATE: usize = 6;
        let mut json = Vec::with_capacity(2 + (map.len() + LATE) * ROOM_PER_HEADER);
        let mut fields = headers(&mut json, map, false, replaced);
        // Reopen the object: its members go on after the map's (`{}` when it kept none).
        json.pop();
        let mut first = json.len() == 1;
        late(&mut |name, value| {
            let name = name.as_str();
            json.extend_from_slice(if first { b"\"" } else { b",\"" });
            first = false;
            json.extend_from_slice(name.as_bytes());
            json.extend_from_slice(b"\":");
            json::string(&mut json, value);
            fields += name.len() + 2 + value.len() + 2;
        });
        json.push(b'}');
        ResponseHeaders { json, fields }
    }

    /// Appends the JSON object.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match self.json.is_empty() {
            true => out.extend_from_slice(b"{}"),
            false => out.extend_from_slice(&self.json),
        }
    }

    /// The bytes of the header lines as HTTP/1.1 text (`name: value\r\n` each).
    pub(crate) fn fields_size(&self) -> usize {
        self.fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn renders_what_the_serializer_wrote_from_the_map() {
        let mut map = HeaderMap::new();
        map.insert("content-type", HeaderValue::from_static("text/plain"));
        map.append("set-cookie", HeaderValue::from_static("a=1"));
        map.append("set-cookie", HeaderValue::from_static("b=\"2\""));
        let rendered = ResponseHeaders::of(&map);
        let mut out = Vec::new();
        rendered.write(&mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let expected =
            serde_json::json!({"content-type": "text/plain", "set-cookie": ["a=1", "b=\"2\""]});
        assert_eq!(value, expected);
        let lines = "content-type: text/plain\r\nset-cookie: a=1\r\nset-cookie: b=\"2\"\r\n";
        assert_eq!(rendered.fields_size(), lines.len());
        let mut empty = Vec::new();
        ResponseHeaders::of(&HeaderMap::new()).write(&mut empty);
        assert_eq!(
            (empty.as_slice(), ResponseHeaders::default().fields_size()),
            (&b"{}"[..], 0)
        );
    }

    /// The head the client gets when the server writes some fields itself: the map's fields but the ones
    /// those replace, then theirs, counted in the size; `{...}` also when the map kept nothing.
    #[test]
    fn late_fields_follow_the_maps_and_replace_theirs() {
        let mut map = HeaderMap::new();
        map.insert("content-type", HeaderValue::from_static("text/plain"));
        map.append("x-kong-proxy-latency", HeaderValue::from_static("99"));
        map.append("x-kong-proxy-latency", HeaderValue::from_static("98"));
        map.insert("server", HeaderValue::from_static("up"));
        let late = |field: &mut dyn FnMut(&http::HeaderName, &str)| {
            field(&http::HeaderName::from_static("x-kong-proxy-latency"), "3");
            field(&http::header::VIA, "1.1 sluice/0");
        };
        let replaced = |name: &http::HeaderName| name == "x-kong-proxy-latency";
        let rendered = ResponseHeaders::with_late(&map, replaced, late);
        let mut out = Vec::new();
        rendered.write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"content-type":"text/plain","server":"up","x-kong-proxy-latency":"3","via":"1.1 sluice/0"}"#
        );
        let lines = "content-type: text/plain\r\nserver: up\r\nx-kong-proxy-latency: 3\r\nvia: 1.1 sluice/0\r\n";
        assert_eq!(rendered.fields_size(), lines.len());

        let mut only = HeaderMap::new();
        only.insert("x-kong-proxy-latency", HeaderValue::from_static("99"));
        let mut out = Vec::new();
        ResponseHeaders::with_late(&only, replaced, late).write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"x-kong-proxy-latency":"3","via":"1.1 sluice/0"}"#
        );
    }
}
