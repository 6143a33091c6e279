//! The config's `.proto` for JSON transcoding: compiled once when the plugin is built ([`grpc_proto`],
//! shared with `grpc-gateway`), then every method by its gRPC path (`/package.Service/Method`) with its input and output types. Messages are
//! translated as dynamic messages (prost-reflect) with the proto field names, as Kong's `lua-protobuf` and
//! `cjson` name them.

use crate::builtin::grpc_proto;
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions};
use std::collections::HashMap;
use std::sync::Arc;

/// One method's message types.
#[derive(Clone)]
pub struct Types {
    pub input: MessageDescriptor,
    pub output: MessageDescriptor,
}

/// The methods of a `.proto` file (and what it imports), by gRPC path; or why the file could not be
/// compiled, which fails JSON requests only, as in Kong (binary and text calls need no `.proto`).
pub struct Methods(Result<HashMap<String, Types>, String>);

/// Why a method has no types.
pub enum Missing {
    /// Kong's `Unknown path "..."`.
    Unknown(String),
    /// The `.proto` did not compile (logged when the plugin was built).
    Broken,
}

impl Methods {
    /// Compiles `file`; a failure is logged and kept for JSON requests.
    pub fn load(file: &str) -> Arc<Methods> {
        let methods = Methods::compile(file);
        if let Err(e) = &methods {
            tracing::error!("grpc-web: {e}; JSON requests to this plugin will fail");
        }
        Arc::new(Methods(methods))
    }

    fn compile(file: &str) -> Result<HashMap<String, Types>, String> {
        let pool = grpc_proto::compile(file)?;
        let mut methods = HashMap::new();
        for service in pool.services() {
            for method in service.methods() {
                let key = format!("/{}/{}", service.full_name(), method.name());
                let types = Types {
                    input: method.input(),
                    output: method.output(),
                };
                methods.insert(key, types);
            }
        }
        Ok(methods)
    }

    /// The types of the method at `path`.
    pub fn types(&self, path: &str) -> Result<Types, Missing> {
        let methods = self.0.as_ref().map_err(|_| Missing::Broken)?;
        methods
            .get(path)
            .cloned()
            .ok_or_else(|| Missing::Unknown(format!("Unknown path {path:?}")))
    }
}

impl Types {
    /// A JSON request as the input message's protobuf bytes.
    pub fn encode(&self, json: &[u8]) -> Result<Vec<u8>, String> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let options = DeserializeOptions::new();
        let message =
            DynamicMessage::deserialize_with_options(self.input.clone(), &mut de, &options)
                .and_then(|m| de.end().map(|()| m))
                .map_err(|e| format!("invalid JSON request: {e}"))?;
        Ok(message.encode_to_vec())
    }

    /// An output message's protobuf bytes as JSON (proto field names, fields with default values left
    /// out, 64-bit integers as numbers).
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let message =
            DynamicMessage::decode(self.output.clone(), bytes).map_err(|e| e.to_string())?;
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .stringify_64_bit_integers(false);
        let mut out = serde_json::Serializer::new(Vec::new());
        message
            .serialize_with_options(&mut out, &options)
            .map_err(|e| e.to_string())?;
        Ok(out.into_inner())
    }
}
