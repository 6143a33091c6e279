//! A response's headers as a log record shows them (`response.headers` of Kong's serializer), rendered
//! once, when the response head is handed to the client.
//!
//! The log phase runs after the last byte, when the head is gone; keeping a copy of its `HeaderMap` until
//! then (two allocations, a reference count per value, ~1k instructions with its drop) cost more than
//! writing the JSON object the serializer needs at once. The bytes of the header lines, which
//! `response.size` and statsd count, are added up on the way.

use super::serialize::headers;
use http::HeaderMap;

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
        let fields = headers(&mut json, map, false);
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
}
