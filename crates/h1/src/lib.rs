//! A pure HTTP/1.1 codec for both sides of the gateway: no I/O, no async.
//!
//! The proxy reads bytes from the upstream connection into a `BytesMut` and hands it to this crate:
//! [`parse_response`] takes a response head off the front (zero copy: header values share the read
//! buffer) and says how the body is framed (RFC 9112 §6.3); a [`BodyDecoder`] built from that
//! [`Framing`] then takes body pieces off the same buffer as they arrive. On the request side,
//! [`chunk_header`] and [`LAST_CHUNK`] frame a streamed request body with chunked encoding.
//!
//! The server side is the same in the other direction: [`parse_request`] takes a client's request head off
//! its connection's buffer, with nginx's refusals, and a [`BodyDecoder`] reads the request body.

mod body;
mod chunk;
mod fields;
mod names;
mod request;
mod response;
mod spare;

pub use body::{BodyDecoder, BodyError, Decoded};
pub use chunk::{chunk_header, LAST_CHUNK};
pub use request::{
    parse_request, HeadLimits, RequestError, RequestFraming, RequestHead, MAX_REQUEST_HEAD,
};
pub use response::{
    parse_response, Field, Framing, Kind as FieldKind, ParseError, ResponseFields, ResponseHead,
    HOP_BY_HOP, MAX_HEAD_BYTES,
};
pub use spare::{recycle_headers, Spares};
