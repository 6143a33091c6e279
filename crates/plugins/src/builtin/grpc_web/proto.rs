//! The config's `.proto` for JSON transcoding: compiled once when the plugin is built (protox, a Rust protobuf
//! compiler; the file's folder is the include path, Google's well-known types are built in), then every
//! method by its gRPC path (`/package.Service/Method`) with its input and output types. Messages are
//! translated as dynamic messages (prost-reflect) with the proto field names, as Kong's `lua-protobuf` and
//! `cjson` name them.

use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// One method's message types.
#[derive(Clone)]
pub struct Types {
    pub input: MessageDescriptor,
    pub output: MessageDescriptor,
}

/// The methods of a `.proto` file (and what it imports), by gRPC path.
pub struct Methods(HashMap<String, Types>);

impl Methods {
    /// Compiles `file`; the error says why it cannot be used.
    pub fn load(file: &str) -> Result<Arc<Methods>, String> {
        let path = Path::new(file);
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let pool = protox::Compiler::new([dir.unwrap_or(Path::new("."))])
            .and_then(|mut c| {
                c.include_imports(true).open_file(path)?;
                Ok(c.descriptor_pool())
            })
            .map_err(|e| format!("proto '{file}': {e}"))?;
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
        Ok(Arc::new(Methods(methods)))
    }

    /// The types of the method at `path` (Kong's `Unknown path "..."` otherwise).
    pub fn types(&self, path: &str) -> Result<Types, String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| format!("Unknown path {path:?}"))
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
