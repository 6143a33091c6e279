//! The OTLP trace messages Sluice sends (opentelemetry-proto's `trace/v1`, `common/v1`, `resource/v1` and
//! `collector/trace/v1`), with the same field numbers, so no `protoc` runs at build time: the resource and
//! scope as prost structs, spans by hand ([`SpanWriter`]). Only the fields Sluice fills are written; a
//! receiver sees the others as unset.
//!
//! Each span is written on its own when the request is logged, by [`SpanWriter`], straight into one
//! buffer (no message structs, no string per attribute); [`export_request`] wraps a batch of encoded
//! spans into an `ExportTraceServiceRequest` without decoding them (a repeated message field is its
//! elements' bytes, each behind its tag and length). The structs below are the resource and scope, built
//! once per queue.

use bytes::Bytes;
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    #[prost(oneof = "Value", tags = "1, 2, 3, 4")]
    pub value: Option<Value>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Value {
    #[prost(string, tag = "1")]
    String(String),
    #[prost(bool, tag = "2")]
    Bool(bool),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

impl KeyValue {
    pub fn new(key: &str, value: Value) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// A length-delimited field: tag, length, bytes.
fn field(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// `ExportTraceServiceRequest { resource_spans: [{ resource, scope_spans: [{ scope, spans }] }] }` for
/// spans already encoded as `Span` messages.
pub fn export_request(resource: &[u8], scope: &[u8], spans: &[Bytes]) -> Bytes {
    let spans_len: usize = spans
        .iter()
        .map(|s| 1 + encoded_len_varint(s.len() as u64) + s.len())
        .sum();
    let mut scope_spans = Vec::with_capacity(spans_len + scope.len() + 8);
    field(&mut scope_spans, 1, scope);
    for span in spans {
        field(&mut scope_spans, 2, span);
    }
    let mut resource_spans = Vec::with_capacity(scope_spans.len() + resource.len() + 16);
    field(&mut resource_spans, 1, resource);
    field(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::with_capacity(resource_spans.len() + 8);
    field(&mut request, 1, &resource_spans);
    request.into()
}

/// A length-delimited field whose bytes `write` appends: one byte is kept for the length, which nearly
/// always fits; a longer one is moved into place afterwards.
fn nested(out: &mut Vec<u8>, tag: u32, write: impl FnOnce(&mut Vec<u8>)) {
    encode_key(tag, WireType::LengthDelimited, out);
    let at = out.len();
    out.push(0);
    write(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(encoded_len_varint(len as u64));
        encode_varint(len as u64, &mut prefix);
        out.splice(at..=at, prefix);
    }
}

/// One `Span` message written field by field, in field-number order and leaving out proto3 defaults, as
/// prost writes the message struct (`tests` compares the two byte for byte): ids, name, kind and times
/// first ([`SpanWriter::new`]), then attributes (field 9) and the status (field 15), in that order.
pub struct SpanWriter {
    out: Vec<u8>,
}

/// What [`SpanWriter::new`] writes first.
pub struct SpanHead<'a> {
    pub trace_id: &'a [u8],
    pub span_id: &'a [u8],
    /// Empty for a root span.
    pub parent_span_id: &'a [u8],
    pub name: &'a str,
    /// 2 server, 3 client.
    pub kind: i32,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
}

impl SpanWriter {
    pub fn new(head: &SpanHead<'_>) -> SpanWriter {
        let mut out = Vec::with_capacity(384);
        for (tag, bytes) in [
            (1, head.trace_id),
            (2, head.span_id),
            (4, head.parent_span_id),
            (5, head.name.as_bytes()),
        ] {
            if !bytes.is_empty() {
                field(&mut out, tag, bytes);
            }
        }
        if head.kind != 0 {
            prost::encoding::int32::encode(6, &head.kind, &mut out);
        }
        for (tag, t) in [(7, head.start_time_unix_nano), (8, head.end_time_unix_nano)] {
            if t != 0 {
                prost::encoding::fixed64::encode(tag, &t, &mut out);
            }
        }
        SpanWriter { out }
    }

    /// An attribute: a `KeyValue` with its key, whose `AnyValue`'s one field `write` appends.
    fn attribute(&mut self, key: &str, write: impl FnOnce(&mut Vec<u8>)) {
        nested(&mut self.out, 9, |kv| {
            field(kv, 1, key.as_bytes());
            nested(kv, 2, write);
        });
    }

    /// A string attribute whose text `write` appends.
    pub fn text_with(&mut self, key: &str, write: impl FnOnce(&mut Vec<u8>)) {
        self.attribute(key, |any| nested(any, 1, write));
    }

    pub fn text(&mut self, key: &str, value: &str) {
        self.text_with(key, |out| out.extend_from_slice(value.as_bytes()));
    }

    pub fn int(&mut self, key: &str, value: i64) {
        self.attribute(key, |any| prost::encoding::int64::encode(3, &value, any));
    }

    pub fn double(&mut self, key: &str, value: f64) {
        self.attribute(key, |any| prost::encoding::double::encode(4, &value, any));
    }

    /// `Status { code: ERROR }` (no message).
    pub fn error_status(&mut self) {
        nested(&mut self.out, 15, |status| {
            prost::encoding::int32::encode(3, &2, status)
        });
    }

    /// The span's bytes, ready to queue.
    pub fn finish(self) -> Bytes {
        crate::logging::queue::record(self.out)
    }
}
