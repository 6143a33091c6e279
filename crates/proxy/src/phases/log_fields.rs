//! A log record's copy of the upstream's fields when no header map was made of them: on a route whose
//! plugins only log, the HTTP/1.1 writer copies them from the bytes they came in, as on the fast path
//! ([`crate::exchange::Late::All`]), and making a map only for the record cost ~1.1k instructions per
//! request (issue 24).
//!
//! The record must show what the map's way shows ([`ResponseFields::to_map`], hop-by-hop removal, Kong's
//! fields replacing the upstream's): lower-case names, and a repeated name as one array where it first
//! came. A head without a field that may go and without a repeated name (nearly every head) is rendered
//! straight from its bytes; any other is made into the map the map's way makes, and rendered from it.

use crate::downstream::upstream_fields::MAY_GO;
use crate::respond::{forwarded_map, KongHeaders};
use http::header::{HeaderMap, SERVER};
use sluice_h1::{FieldKind as Kind, ResponseFields};
use sluice_plugins::logging::response_headers::Members;

/// Heads with more fields are rendered through a map (telling repeated names apart compares each name with
/// the ones before it).
const MOST_COMPARED: usize = 16;

/// Appends the upstream's `fields` as the map's way shows them, but those `late` replaces (the first
/// members: the map's fields come first). Returns whether they hold a `Server`.
pub(super) fn members(out: &mut Members, fields: &ResponseFields, late: &KongHeaders) -> bool {
    if !as_received(fields) {
        return by_map(out, fields, late);
    }
    for field in fields.iter() {
        if !late.replaces_name(field.name) {
            out.field(field.name, field.value);
        }
    }
    fields.has(Kind::Server)
}

/// The map's way: the fields as a map, hop-by-hop ones out, rendered but those `late` replaces.
pub(super) fn by_map(out: &mut Members, fields: &ResponseFields, late: &KongHeaders) -> bool {
    map_members(out, &forwarded_map(fields), late)
}

/// Renders `map`'s fields but those `late` replaces; whether they hold a `Server`.
pub(super) fn map_members(out: &mut Members, map: &HeaderMap, late: &KongHeaders) -> bool {
    out.map(map, |name| late.replaces(name));
    map.contains_key(SERVER)
}

/// Whether the map's way keeps every field as it came, each name once.
fn as_received(fields: &ResponseFields) -> bool {
    if fields.has_any(&MAY_GO) || fields.length_dropped() || fields.len() > MOST_COMPARED {
        return false;
    }
    let same = |a: &[u8], b: &[u8]| a.len() == b.len() && a.eq_ignore_ascii_case(b);
    fields
        .iter()
        .enumerate()
        .all(|(i, f)| !fields.iter().take(i).any(|g| same(f.name, g.name)))
}

#[cfg(test)]
mod tests;
