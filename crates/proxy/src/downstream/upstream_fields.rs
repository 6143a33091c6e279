//! The upstream's response fields on the client's head, straight from the bytes they arrived in (the fast
//! path builds no header map for them): the same rules as the map's way, which are hop-by-hop removal
//! (`sluice_upstream::forward::strip_hop_by_hop`, fields `Connection` names included) and the writer's own
//! (a length is never sent where there is no body; Kong's and the plugins' fields replace the upstream's of
//! their names). Names keep the upstream's case, as nginx forwards them.
//!
//! When no field has to go and the lines are in the canonical form, they are copied in one piece.

use crate::respond::LateHeaders;
use sluice_h1::{Field, FieldKind as Kind, ResponseFields};

/// What the head's other parts need to know of the upstream's fields that were written.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Seen {
    pub length: bool,
    pub date: bool,
    pub server: bool,
}

/// Kinds of field that are never forwarded, or not always (the log record's copy of the fields,
/// `phases::log_fields`, asks the same).
pub(crate) const MAY_GO: [Kind; 5] = [
    Kind::TransferEncoding,
    Kind::Connection,
    Kind::Te,
    Kind::HopByHop,
    Kind::Kong,
];

/// Appends the upstream's `fields` that go to the client to `out`. `no_body`: the response has no body
/// (1xx, 204), so no length either; `late` holds Kong's and the plugins' fields, written after these.
pub(super) fn write(
    out: &mut Vec<u8>,
    fields: &ResponseFields,
    late: &LateHeaders,
    no_body: bool,
) -> Seen {
    let length = fields.has(Kind::ContentLength);
    let seen = Seen {
        length: length && !fields.length_dropped(),
        date: fields.has(Kind::Date),
        server: fields.has(Kind::Server),
    };
    let all_stay = !fields.has_any(&MAY_GO)
        && !(length && (no_body || fields.length_dropped()))
        && late.added.is_empty();
    if let Some(block) = fields.block().filter(|_| all_stay) {
        out.extend_from_slice(block);
        return seen;
    }
    let connection = fields.has(Kind::Connection);
    for field in fields.iter() {
        if stays(&field, fields, late, no_body, connection) {
            out.extend_from_slice(field.name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(field.value);
            out.extend_from_slice(b"\r\n");
        }
    }
    seen
}

/// Whether one field goes to the client. `connection`: the head has a `Connection` field, whose tokens
/// name more hop-by-hop fields.
fn stays(
    field: &Field<'_>,
    fields: &ResponseFields,
    late: &LateHeaders,
    no_body: bool,
    connection: bool,
) -> bool {
    let kept = match field.kind {
        Kind::TransferEncoding | Kind::Connection | Kind::HopByHop => false,
        Kind::Te => field.value.eq_ignore_ascii_case(b"trailers"),
        Kind::ContentLength => !no_body && !fields.length_dropped(),
        _ => true,
    };
    kept && !late.replaces_name(field.name)
        && !(connection && named_by_connection(fields, field.name))
}

/// Whether a `Connection` field of the head lists `name` (RFC 9110 §7.6.1).
fn named_by_connection(fields: &ResponseFields, name: &[u8]) -> bool {
    fields
        .iter()
        .filter(|f| f.kind == Kind::Connection)
        .flat_map(|f| f.value.split(|&b| b == b','))
        .any(|token| token.trim_ascii().eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests;
