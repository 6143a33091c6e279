//! A response's headers as a log record shows them (`response.headers` of Kong's serializer), rendered
//! once, when the response head is handed to the client.
//!
//! The log phase runs after the last byte, when the head is gone; keeping a copy of its `HeaderMap` until
//! then (two allocations, a reference count per value, ~1k instructions with its drop) cost more than
//! writing the JSON object the serializer needs at once. The bytes of the header lines, which
//! `response.size` and statsd count, are added up on the way. A head whose fields are not all in one map
//! (Kong's headers that the server writes after the map's on a route whose plugins only log, the
//! upstream's fields as received) is rendered member by member ([`ResponseHeaders::open`]).

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

    /// Starts rendering a head of about `fields` fields member by member: the head the client gets
    /// when the server writes some fields itself after the map's (Kong's headers on a route whose plugins
    /// only log), or whose upstream fields no map was made of.
    pub fn open(fields: usize) -> Members {
        let mut json = Vec::with_capacity(2 + fields * ROOM_PER_HEADER);
        json.push(b'{');
        Members { json, fields: 0 }
    }

    /// Appends the JSON object.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self.json.is_empty() {
            true => out.extend_from_slice(b"{}"),
            false => out.extend_from_slice(&self.json),
        }
    }

    /// The bytes of the header lines as HTTP/1.1 text (`name: value\r\n` each).
    pub fn fields_size(&self) -> usize {
        self.fields
    }
}

/// A [`ResponseHeaders`] being rendered ([`ResponseHeaders::open`]): members are appended in the order
/// the client gets the fields, and [`Members::close`] ends the object. A name must not come twice (the
/// record shows a repeated name as one array, which only [`Members::map`] makes).
pub struct Members {
    json: Vec<u8>,
    fields: usize,
}

impl Members {
    /// `map`'s fields but those `replaced` names; first, before any other member.
    pub fn map(&mut self, map: &HeaderMap, replaced: impl Fn(&HeaderName) -> bool) {
        debug_assert_eq!(self.json, b"{", "the map's fields come first");
        self.json.clear();
        self.fields += headers(&mut self.json, map, false, replaced);
        // Reopen the object: more members may follow.
        self.json.pop();
    }

    /// A field as received: its name in any case (lower case in the record, as a header map holds it;
    /// a name is a token, which needs no escaping) and its value's bytes.
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        self.json.extend_from_slice(match self.json.len() {
            1 => b"\"",
            _ => b",\"",
        });
        // Copied, then lowered in place: one copy, not a push per byte.
        let start = self.json.len();
        self.json.extend_from_slice(name);
        lower_ascii(&mut self.json[start..]);
        json::key_end_and_bytes(&mut self.json, value);
        self.fields += name.len() + 2 + value.len() + 2;
    }

    /// A field whose name and value need no escaping, `key` being the start of its member: a comma, the
    /// name as a JSON key with its colon and the value's opening quote (`,"via":"`, a constant). Three
    /// copies, no check of the value (Kong's own fields: numbers, tokens, request ids).
    pub fn plain(&mut self, key: &str, value: &[u8]) {
        debug_assert!(key.starts_with(",\"") && key.ends_with("\":\"") && json::is_plain(value));
        // `,"name":"` is as long as the line's `name: ` plus one; the line adds the value and CRLF.
        self.fields += key.len() - 1 + value.len();
        // The first member has no comma before it.
        let member = match self.json.len() {
            1 => &key[1..],
            _ => key,
        };
        self.json.extend_from_slice(member.as_bytes());
        self.json.extend_from_slice(value);
        self.json.push(b'"');
    }

    /// The rendered headers.
    pub fn close(mut self) -> ResponseHeaders {
        self.json.push(b'}');
        ResponseHeaders {
            json: self.json,
            fields: self.fields,
        }
    }
}

/// What `make_ascii_lowercase` does, eight bytes at a time: it goes byte by byte, ~5 instructions a
/// byte of every upstream field name of every record. A name shorter than eight bytes is lowered byte by
/// byte; a longer one by words, the last one overlapping the one before it (lowering twice is lowering).
fn lower_ascii(b: &mut [u8]) {
    if b.len() < 8 {
        return b.make_ascii_lowercase();
    }
    let last = b.len() - 8;
    let mut at = 0;
    loop {
        let word: &mut [u8; 8] = (&mut b[at..at + 8]).try_into().expect("eight bytes");
        *word = lower_word(u64::from_le_bytes(*word)).to_le_bytes();
        if at == last {
            return;
        }
        at = (at + 8).min(last);
    }
}

/// The ASCII capitals of the eight bytes of `w` lowered.
const fn lower_word(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    // Each byte without its high bit, so that adding to it carries into no other byte; then its high bit
    // is set from 'A' on, and from past 'Z' on. A capital has the first and not the second, and no high
    // bit of its own.
    let low = w & !HIGH;
    let from_a = low + ONES * (0x80 - b'A' as u64);
    let past_z = low + ONES * (0x80 - b'Z' as u64 - 1);
    let capital = (from_a ^ past_z) & !w & HIGH;
    w | (capital >> 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    /// Every byte value at every place of names of every length lowers as `make_ascii_lowercase` does.
    #[test]
    fn lowers_as_make_ascii_lowercase() {
        for len in 0..=24 {
            for byte in 0..=255u8 {
                for at in 0..len {
                    let mut name: Vec<u8> = (0..len).map(|i| b"Xy-Z@[`{"[i % 8]).collect();
                    name[at] = byte;
                    let mut expected = name.clone();
                    expected.make_ascii_lowercase();
                    lower_ascii(&mut name);
                    assert_eq!(name, expected, "{len} {byte} {at}");
                }
            }
        }
    }

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
    /// those replace, then fields as received and the server's, counted in the size; `{...}` also when
    /// the map kept nothing.
    #[test]
    fn members_follow_the_maps_and_replace_theirs() {
        let mut map = HeaderMap::new();
        map.insert("content-type", HeaderValue::from_static("text/plain"));
        map.append("x-kong-proxy-latency", HeaderValue::from_static("99"));
        map.append("x-kong-proxy-latency", HeaderValue::from_static("98"));
        map.insert("server", HeaderValue::from_static("up"));
        let replaced = |name: &http::HeaderName| name == "x-kong-proxy-latency";
        let late = |members: &mut Members| {
            members.field(b"X-Up", b"a\"b");
            members.plain(",\"x-kong-proxy-latency\":\"", b"3");
            members.plain(",\"via\":\"", b"1.1 sluice/0");
        };
        let mut members = ResponseHeaders::open(map.len());
        members.map(&map, replaced);
        late(&mut members);
        let rendered = members.close();
        let mut out = Vec::new();
        rendered.write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"content-type":"text/plain","server":"up","x-up":"a\"b","x-kong-proxy-latency":"3","via":"1.1 sluice/0"}"#
        );
        let lines = "content-type: text/plain\r\nserver: up\r\nX-Up: a\"b\r\nx-kong-proxy-latency: 3\r\nvia: 1.1 sluice/0\r\n";
        assert_eq!(rendered.fields_size(), lines.len());

        let mut only = HeaderMap::new();
        only.insert("x-kong-proxy-latency", HeaderValue::from_static("99"));
        for mut members in [ResponseHeaders::open(1), {
            let mut m = ResponseHeaders::open(1);
            m.map(&only, replaced);
            m
        }] {
            late(&mut members);
            let mut out = Vec::new();
            members.close().write(&mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                r#"{"x-up":"a\"b","x-kong-proxy-latency":"3","via":"1.1 sluice/0"}"#
            );
        }

        // Kong's field first: no comma before it.
        let mut members = ResponseHeaders::open(2);
        members.plain(",\"via\":\"", b"1.1 sluice/0");
        members.plain(",\"x-kong-proxy-latency\":\"", b"3");
        let rendered = members.close();
        let mut out = Vec::new();
        rendered.write(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"via":"1.1 sluice/0","x-kong-proxy-latency":"3"}"#
        );
        let lines = "via: 1.1 sluice/0\r\nx-kong-proxy-latency: 3\r\n";
        assert_eq!(rendered.fields_size(), lines.len());
    }
}
