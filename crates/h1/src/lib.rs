//! A pure HTTP/1.1 client codec for the gateway's upstream side: no I/O, no async.
//!
//! The proxy reads bytes from the upstream connection into a `BytesMut` and hands it to this crate:
//! [`parse_response`] takes a response head off the front (zero copy: header values share the read
//! buffer) and says how the body is framed (RFC 9112 §6.3); a [`BodyDecoder`] built from that
//! [`Framing`] then takes body pieces off the same buffer as they arrive. On the request side,
//! [`chunk_header`] and [`LAST_CHUNK`] frame a streamed request body with chunked encoding.

mod body;
mod chunk;
mod fields;
mod response;

pub use body::{BodyDecoder, BodyError, Decoded};
pub use chunk::{chunk_header, LAST_CHUNK};
pub use response::{parse_response, Framing, ParseError, ResponseHead, MAX_HEAD_BYTES};
