//! The request message of a call, built as Kong's `grpc-gateway` builds it: the path's variables, then
//! either the JSON body (the rule's `body`: `*` merges the body's fields, a field name takes the whole
//! body) or, when the rule names no body, the query string; then encoded with the method's input type.
//!
//! Query arguments are dotted field paths (`?legs.count=4`); one naming no field is dropped. A `bool`
//! field reads `0` and `false` as false and any other value (or a bare name) as true; other scalars are
//! read from their text by the proto3 JSON mapping (numbers, enum names, base64 bytes).

use super::rules::Endpoint;
use super::template::Vars;
use super::values;
use crate::builtin::transform::form;
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value};

/// Kong's answer when the payload does not fit the input type.
pub const ENCODE_FAILED: &str = "failed to encode payload";

/// The input message's protobuf bytes, or Kong's reason for a 400.
pub fn build(
    endpoint: &Endpoint,
    vars: Vars,
    query: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, String> {
    let message = &endpoint.input;
    let mut payload = Map::new();
    for (path, value) in vars {
        set(&mut payload, message, &path, Value::String(value));
    }
    match endpoint.body.as_deref() {
        Some(field) if !body.is_empty() => {
            let decoded: Value =
                serde_json::from_slice(body).map_err(|e| format!("decode json err: {e}"))?;
            match (field, decoded) {
                ("*", Value::Object(fields)) => payload.extend(fields),
                ("*", Value::Array(_)) => {}
                ("*", _) => return Err("body must be a table".into()),
                (field, decoded) => {
                    payload.insert(field.to_string(), decoded);
                }
            }
        }
        Some(_) => {}
        None => {
            for (path, value) in form::parse(query.unwrap_or_default()) {
                set(&mut payload, message, &path, value);
            }
        }
    }
    encode(message, Value::Object(payload))
}

/// Sets the field at the dotted `path` of `message`, making the messages on the way; a path that names
/// no field is ignored (what Kong's `add_to_table` does).
fn set(map: &mut Map<String, Value>, message: &MessageDescriptor, path: &str, value: Value) {
    let (name, rest) = match path.split_once('.') {
        Some((name, rest)) => (name, Some(rest)),
        None => (path, None),
    };
    let Some(field) = message.get_field_by_name(name) else {
        return;
    };
    let Some(rest) = rest else {
        map.insert(name.to_string(), scalar(&field, value));
        return;
    };
    let Kind::Message(inner) = field.kind() else {
        return;
    };
    let entry = map.entry(name).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(entry) = entry {
        set(entry, &inner, rest, value);
    }
}

/// A text from the path or the query as the value of `field`: Kong's reading of a boolean.
fn scalar(field: &FieldDescriptor, value: Value) -> Value {
    if field.kind() != Kind::Bool || field.is_list() {
        return value;
    }
    Value::Bool(match value {
        Value::String(text) => text != "0" && text != "false",
        Value::Bool(b) => b,
        _ => true,
    })
}

/// The payload as `message`'s protobuf bytes; fields it does not have are ignored.
fn encode(message: &MessageDescriptor, mut payload: Value) -> Result<Vec<u8>, String> {
    if values::request(&mut payload, message).is_err() {
        return Err(ENCODE_FAILED.into());
    }
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    match DynamicMessage::deserialize_with_options(message.clone(), payload, &options) {
        Ok(decoded) => Ok(decoded.encode_to_vec()),
        Err(e) => {
            tracing::error!("grpc-gateway: {e}");
            Err(ENCODE_FAILED.into())
        }
    }
}
