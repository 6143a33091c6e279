//! The OTLP trace messages Sluice sends (opentelemetry-proto's `trace/v1`, `common/v1`, `resource/v1` and
//! `collector/trace/v1`), written as prost structs with the same field numbers, so no `protoc` runs at build
//! time. Only the fields Sluice fills are declared; a receiver sees the others as unset.
//!
//! Each span is encoded on its own when the request is logged; [`export_request`] wraps a batch of encoded
//! spans into an `ExportTraceServiceRequest` without decoding them (a repeated message field is its
//! elements' bytes, each behind its tag and length).

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

/// `Status`: code 0 unset, 1 ok, 2 error.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// Span kinds used here: 2 server, 3 client.
#[derive(Clone, PartialEq, Message)]
pub struct Span {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
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
