//! The upstream's side of a call as the client gets it: its `grpc-status` (sent in the response head,
//! which a failed unary call does) as an HTTP status by Kong's table, and its messages as JSON, one
//! object per whole message, with every scalar and list field written, defaults included, under its
//! proto name (what `lua-protobuf` decodes and `cjson` writes).

use super::values;
use crate::builtin::grpc_proto::whole_frame;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, StatusCode};
use prost_reflect::{DynamicMessage, MessageDescriptor, SerializeOptions};

/// The HTTP status for a `grpc-status` header, after `google/rpc/code.proto` as Kong maps it (500 for a
/// code it does not know); None when the value is not a number.
pub fn http_status(grpc_status: &HeaderValue) -> Option<StatusCode> {
    let code: u64 = grpc_status.to_str().ok()?.trim().parse().ok()?;
    let status = match code {
        0 => 200,
        1 => 499,
        3 | 9 | 11 => 400,
        4 => 504,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        8 => 429,
        14 => 503,
        16 => 401,
        2 | 12 | 13 | 15 => 500,
        _ => {
            tracing::warn!("grpc-gateway: unable to map grpc-status {code} to an HTTP status");
            500
        }
    };
    StatusCode::from_u16(status).ok()
}

/// One call's response body: the output type, and the bytes of a message not yet whole.
#[derive(Clone)]
pub struct Downstream {
    output: MessageDescriptor,
    pending: BytesMut,
}

impl Downstream {
    pub fn new(output: MessageDescriptor) -> Downstream {
        Downstream {
            output,
            pending: BytesMut::new(),
        }
    }

    /// The client's piece for the upstream's `chunk`: the whole messages so far as JSON. As in Kong, when
    /// there are none at the end of the body, the bytes left over go out as they came.
    pub fn chunk(&mut self, chunk: &[u8], eof: bool) -> Bytes {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(len) = whole_frame(&self.pending) {
            let message = self.pending.split_to(len);
            match self.json(&message[5..]) {
                Ok(json) => out.extend_from_slice(&json),
                Err(e) => tracing::error!("grpc-gateway: a response message: {e}"),
            }
        }
        if out.is_empty() && eof {
            return std::mem::take(&mut self.pending).freeze();
        }
        Bytes::from(out)
    }

    /// One message as Kong writes it.
    fn json(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let message =
            DynamicMessage::decode(self.output.clone(), bytes).map_err(|e| e.to_string())?;
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false)
            .stringify_64_bit_integers(false);
        let mut json = message
            .serialize_with_options(serde_json::value::Serializer, &options)
            .map_err(|e| e.to_string())?;
        values::response(&mut json, &self.output);
        serde_json::to_vec(&json).map_err(|e| e.to_string())
    }
}
