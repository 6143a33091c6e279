//! The JSON values Kong's protobuf library (`lua-protobuf` with Kong's hooks) treats its own way, fixed
//! up around prost-reflect's standard proto3 JSON mapping, field by field along the message's type:
//!
//! - a `null` for a known field fails the request (Kong's "failed to encode payload"; proto3 JSON
//!   would read it as the default);
//! - a `google.protobuf.Timestamp` is an ISO 8601 time both ways; Kong reads one without a zone as UTC
//!   and writes `YYYY-MM-DDTHH:MM:SS` (whole seconds, no zone), where proto3 JSON wants and writes RFC 3339.

use prost_reflect::{Kind, MessageDescriptor};
use serde_json::Value;

const TIMESTAMP: &str = "google.protobuf.Timestamp";

/// A request's payload, as prost-reflect reads it: Err when a known field is `null`.
pub fn request(payload: &mut Value, message: &MessageDescriptor) -> Result<(), ()> {
    walk(payload, message, &mut |value, kind| {
        if value.is_null() {
            return Err(());
        }
        if let (Value::String(time), true) = (value, is_timestamp(kind)) {
            let clock = time.split_once(['T', 't']).map_or("", |(_, clock)| clock);
            if !clock.contains(['Z', 'z', '+', '-']) {
                time.push('Z');
            }
        }
        Ok(())
    })
}

/// A response message, as prost-reflect wrote it, made Kong's.
pub fn response(message_json: &mut Value, message: &MessageDescriptor) {
    let _ = walk::<()>(message_json, message, &mut |value, kind| {
        if let (Value::String(time), true) = (&mut *value, is_timestamp(kind)) {
            if let Ok(parsed) = chrono::DateTime::parse_from_rfc3339(time) {
                let utc = parsed.with_timezone(&chrono::Utc);
                *time = utc.format("%Y-%m-%dT%H:%M:%S").to_string();
            }
        }
        Ok(())
    });
}

fn is_timestamp(kind: &Kind) -> bool {
    matches!(kind, Kind::Message(m) if m.full_name() == TIMESTAMP)
}

/// Calls `visit` on each single value of each known field of the message `value` (each element of a
/// list, each value of a map), then on the fields of the messages within, depth first.
fn walk<E>(
    value: &mut Value,
    message: &MessageDescriptor,
    visit: &mut dyn FnMut(&mut Value, &Kind) -> Result<(), E>,
) -> Result<(), E> {
    let Value::Object(map) = value else {
        return Ok(());
    };
    for (key, value) in map.iter_mut() {
        let field = message.get_field_by_name(key);
        let Some(field) = field.or_else(|| message.get_field_by_json_name(key)) else {
            continue;
        };
        let kind = match (field.is_map(), field.kind()) {
            (true, Kind::Message(entry)) => entry.map_entry_value_field().kind(),
            (_, kind) => kind,
        };
        let singles: Vec<&mut Value> = match value {
            Value::Array(items) if field.is_list() => items.iter_mut().collect(),
            Value::Object(entries) if field.is_map() => entries.values_mut().collect(),
            single => vec![single],
        };
        for single in singles {
            visit(single, &kind)?;
            if let Kind::Message(inner) = &kind {
                walk(single, inner, visit)?;
            }
        }
    }
    Ok(())
}
