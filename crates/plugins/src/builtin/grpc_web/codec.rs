//! The grpc-web wire format, as far as the gateway translates it: which `Content-Type` asks for what, the
//! text mode's base64 (request decoded whole, response encoded chunk by chunk), and the trailer frame
//! (flag `0x80`) that carries the call's status in the response body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue};

/// How a grpc-web request is encoded, from its `Content-Type` (Kong's table, exact values only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mode {
    /// The request's `Content-Type`, which the response gets back.
    pub mime: HeaderValue,
    /// `application/grpc-web-text…`: both bodies are base64.
    pub text: bool,
}

/// Why a request cannot be translated (Kong's 400 and its message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A JSON (or unknown) encoding without a `proto` file, in Kong's words.
    NeedsProto,
    /// A JSON encoding with a `proto` file: Kong transcodes it, Sluice does not.
    JsonTranscoding,
    /// A text-mode body that is not base64.
    BadBase64,
}

impl Refused {
    pub fn message(&self) -> &'static str {
        match self {
            Refused::NeedsProto => {
                "transcoding requests require a .proto file defining the service"
            }
            Refused::JsonTranscoding => "grpc-web JSON transcoding is not supported by Sluice",
            Refused::BadBase64 => "invalid base64 in the grpc-web-text request body",
        }
    }
}

impl Mode {
    /// The mode for a request's `Content-Type`; `has_proto` tells whether the config names a `.proto`.
    pub fn of(content_type: Option<&HeaderValue>, has_proto: bool) -> Result<Mode, Refused> {
        let mime = content_type
            .cloned()
            .unwrap_or(HeaderValue::from_static(""));
        let text = match mime.as_bytes() {
            b"application/grpc-web" | b"application/grpc-web+proto" => false,
            b"application/grpc-web-text" | b"application/grpc-web-text+proto" => true,
            // JSON messages (`+json`, `application/json`) and anything else need transcoding.
            _ if has_proto => return Err(Refused::JsonTranscoding),
            _ => return Err(Refused::NeedsProto),
        };
        Ok(Mode { mime, text })
    }

    /// The request body as the upstream gets it: the same frames, decoded from base64 in text mode.
    pub fn upstream(&self, body: Bytes) -> Result<Bytes, Refused> {
        if !self.text {
            return Ok(body);
        }
        decode_text(&body).map(Bytes::from)
    }

    /// A piece of the upstream's body as the client gets it (base64 in text mode, each piece padded on
    /// its own, which grpc-web clients accept as Kong sends it).
    pub fn downstream(&self, chunk: Bytes) -> Bytes {
        if !self.text || chunk.is_empty() {
            return chunk;
        }
        Bytes::from(STANDARD.encode(&chunk))
    }

    /// The trailer frame that ends the client's body, in this mode's encoding.
    pub fn trailer_frame(&self, trailers: &HeaderMap) -> Bytes {
        self.downstream(trailer_frame(trailers))
    }
}

/// Base64 that may be several padded pieces one after another (a client that encoded its frames one by
/// one); whitespace is ignored.
fn decode_text(body: &[u8]) -> Result<Vec<u8>, Refused> {
    let clean: Vec<u8> = body
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let mut rest = clean.as_slice();
    while !rest.is_empty() {
        // A piece ends after its padding, or at the end of the body.
        let end = match rest.iter().position(|&b| b == b'=') {
            Some(i) => i + rest[i..].iter().take_while(|&&b| b == b'=').count(),
            None => rest.len(),
        };
        STANDARD
            .decode_vec(&rest[..end], &mut out)
            .map_err(|_| Refused::BadBase64)?;
        rest = &rest[end..];
    }
    Ok(out)
}

/// The status trailers as a grpc-web trailer frame: flag `0x80`, a big-endian length, then
/// `grpc-status` and `grpc-message` as Kong writes them (`name:value\r\n`, `0` and empty when the
/// upstream sent none), then any other trailing metadata the same way.
pub fn trailer_frame(trailers: &HeaderMap) -> Bytes {
    let mut block = BytesMut::new();
    let mut line = |name: &str, value: &[u8]| {
        block.put_slice(name.as_bytes());
        block.put_u8(b':');
        block.put_slice(value);
        block.put_slice(b"\r\n");
    };
    let value = |name: &str, default: &'static [u8]| {
        trailers
            .get(name)
            .map_or(default, |v: &HeaderValue| v.as_bytes())
    };
    line("grpc-status", value("grpc-status", b"0"));
    line("grpc-message", value("grpc-message", b""));
    for (name, v) in trailers {
        if !matches!(name.as_str(), "grpc-status" | "grpc-message") {
            line(name.as_str(), v.as_bytes());
        }
    }
    let mut frame = BytesMut::with_capacity(5 + block.len());
    frame.put_u8(0x80);
    frame.put_u32(block.len() as u32);
    frame.put_slice(&block);
    frame.freeze()
}
