//! The grpc-web wire format, as far as the gateway translates it: which `Content-Type` asks for what, the
//! text mode's base64 (request decoded whole, response encoded chunk by chunk), JSON messages transcoded
//! with the `proto`'s types, and the trailer frame (flag `0x80`) that carries the call's status in the
//! response body.

use super::proto::{Methods, Missing, Types};
use crate::builtin::grpc_proto::{frame, whole_frame};
use crate::response::PluginResponse;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use http::StatusCode;
use http::{HeaderMap, HeaderValue};

/// How a grpc-web request is encoded, from its `Content-Type` (Kong's table, exact values only).
#[derive(Clone)]
pub struct Mode {
    /// The request's `Content-Type`, which the response gets back.
    pub mime: HeaderValue,
    /// `application/grpc-web-text…`: both bodies are base64.
    pub text: bool,
    /// Messages in grpc-web frames, the response ended by the trailer frame (all but `application/json`,
    /// which is one bare message each way).
    framed: bool,
    /// JSON messages (`+json`, `application/json`), transcoded with the method's types.
    json: Option<Json>,
}

/// A call's JSON transcoding: the method's types, and the upstream's bytes of a message not yet whole.
#[derive(Clone)]
struct Json {
    types: Types,
    pending: BytesMut,
}

/// Why a request cannot be translated (Kong's 400 and its message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A JSON (or unknown) encoding without a `proto` file, in Kong's words.
    NeedsProto,
    /// A text-mode body that is not base64.
    BadBase64,
    /// A JSON request that cannot be transcoded (unknown method, invalid JSON, unknown `Content-Type`).
    Invalid(String),
    /// A JSON request while the `.proto` does not compile: Kong's 500.
    Broken,
}

impl Refused {
    pub fn message(&self) -> &str {
        match self {
            Refused::NeedsProto => {
                "transcoding requests require a .proto file defining the service"
            }
            Refused::BadBase64 => "invalid base64 in the grpc-web-text request body",
            Refused::Invalid(message) => message,
            Refused::Broken => "An unexpected error occurred",
        }
    }

    /// The client's answer: the message as the body (Kong's `kong.response.exit(400, err)`), or Kong's
    /// 500 for an error of the gateway's.
    pub fn answer(&self) -> PluginResponse {
        if *self == Refused::Broken {
            return PluginResponse::message(StatusCode::INTERNAL_SERVER_ERROR, self.message());
        }
        PluginResponse {
            status: StatusCode::BAD_REQUEST,
            headers: HeaderMap::new(),
            body: Bytes::from(self.message().to_string()),
        }
    }
}

impl Mode {
    /// The mode for a request's `Content-Type` to the method at `path`; `methods` are the config's
    /// `proto` file's, when it has one.
    pub fn of(
        content_type: Option<&HeaderValue>,
        methods: Option<&Methods>,
        path: &str,
    ) -> Result<Mode, Refused> {
        let mime = content_type
            .cloned()
            .unwrap_or(HeaderValue::from_static(""));
        let (text, framed, json) = match mime.as_bytes() {
            b"application/grpc-web" | b"application/grpc-web+proto" => (false, true, false),
            b"application/grpc-web-text" | b"application/grpc-web-text+proto" => {
                (true, true, false)
            }
            b"application/grpc-web+json" => (false, true, true),
            b"application/grpc-web-text+json" => (true, true, true),
            b"application/json" => (false, false, true),
            _ if methods.is_some() => {
                return Err(Refused::Invalid("unsupported Content-Type".into()));
            }
            _ => return Err(Refused::NeedsProto),
        };
        let json = match (json, methods) {
            (false, _) => None,
            (true, None) => return Err(Refused::NeedsProto),
            (true, Some(methods)) => Some(Json {
                types: methods.types(path).map_err(|missing| match missing {
                    Missing::Unknown(message) => Refused::Invalid(message),
                    Missing::Broken => Refused::Broken,
                })?,
                pending: BytesMut::new(),
            }),
        };
        Ok(Mode {
            mime,
            text,
            framed,
            json,
        })
    }

    /// The request body as the upstream gets it: gRPC frames, decoded from base64 in text mode, the
    /// (first) JSON message transcoded.
    pub fn upstream(&self, body: Bytes) -> Result<Bytes, Refused> {
        let body = match self.text {
            true => Bytes::from(decode_text(&body)?),
            false => body,
        };
        let Some(json) = &self.json else {
            return Ok(body);
        };
        let message = match self.framed {
            true => {
                first_message(&body).ok_or(Refused::Invalid("incomplete grpc-web frame".into()))?
            }
            false => &body,
        };
        let encoded = json.types.encode(message).map_err(Refused::Invalid)?;
        Ok(frame(0, &encoded))
    }

    /// A piece of the upstream's body as the client gets it: whole messages transcoded to JSON, then
    /// base64 in text mode (each piece padded on its own, which grpc-web clients accept as Kong sends it).
    pub fn downstream(&mut self, chunk: Bytes) -> Bytes {
        let chunk = match &mut self.json {
            Some(json) => json.transcode(chunk, self.framed),
            None => chunk,
        };
        self.encoded(chunk)
    }

    fn encoded(&self, chunk: Bytes) -> Bytes {
        if !self.text || chunk.is_empty() {
            return chunk;
        }
        Bytes::from(STANDARD.encode(&chunk))
    }

    /// The trailer frame that ends the client's body, in this mode's encoding (none for bare JSON).
    pub fn trailer_frame(&self, trailers: &HeaderMap) -> Bytes {
        match self.framed {
            true => self.encoded(trailer_frame(trailers)),
            false => Bytes::new(),
        }
    }
}

impl Json {
    /// The whole messages of `chunk` (with what came before) as JSON, framed when `framed`.
    fn transcode(&mut self, chunk: Bytes, framed: bool) -> Bytes {
        self.pending.extend_from_slice(&chunk);
        let mut out = BytesMut::new();
        while let Some(len) = whole_frame(&self.pending) {
            let message = self.pending.split_to(len);
            let json = match message[0] {
                0 => self.types.decode(&message[5..]),
                _ => Err("compressed messages cannot be transcoded".to_string()),
            };
            match (json, framed) {
                (Ok(json), true) => out.extend_from_slice(&frame(0, &json)),
                (Ok(json), false) => out.extend_from_slice(&json),
                (Err(e), _) => tracing::error!("grpc-web: a response message: {e}"),
            }
        }
        out.freeze()
    }
}

/// The message of the first frame of a body.
fn first_message(body: &[u8]) -> Option<&[u8]> {
    whole_frame(body).map(|len| &body[5..len])
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
    frame(0x80, &block)
}
