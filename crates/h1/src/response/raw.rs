//! A response head's fields as they arrived: the head's bytes and where each field lies in them, each
//! field's name classified once ([`Kind`]) while the head is parsed.
//!
//! A gateway that forwards the head as it came (the fast path) writes these bytes to its client, the
//! whole block in one copy when nothing has to go ([`ResponseFields::block`]), and never builds a header
//! map. Whoever must read or change the fields as a map makes one ([`ResponseFields::to_map`]): the
//! result is the map the parser used to build (repeated fields in order, values sharing the head's
//! bytes).

use super::FieldSpan;
use crate::spare::Spares;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// What a field's name is, as far as a gateway forwarding the head cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Any field not listed below.
    Other = 0,
    ContentLength,
    TransferEncoding,
    Connection,
    /// `TE`: hop-by-hop but for the value `trailers`.
    Te,
    /// One of the other fields that only describe the connection ([`HOP_BY_HOP`]).
    HopByHop,
    Date,
    Server,
    Via,
    /// A name starting with `x-kong-` (the gateway's own fields replace the upstream's).
    Kong,
}

/// Fields that describe one connection and are never forwarded (RFC 9110 §7.6.1 plus the usual
/// non-standard ones), `TE` aside: on requests `TE: trailers` is kept. `Connection` also names more.
pub const HOP_BY_HOP: [HeaderName; 7] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHENTICATE,
];

impl Kind {
    /// The kind of a field name as received (any case).
    pub fn of(name: &[u8]) -> Kind {
        let is = |known: &str| token_is(name, known.as_bytes());
        // The length picks the one candidate to compare with; most names compare with none.
        match name.len() {
            14 if is("content-length") => Kind::ContentLength,
            17 if is("transfer-encoding") => Kind::TransferEncoding,
            10 if is("connection") => Kind::Connection,
            2 if is("te") => Kind::Te,
            4 if is("date") => Kind::Date,
            6 if is("server") => Kind::Server,
            3 if is("via") => Kind::Via,
            n if n > 7 && token_is(&name[..7], b"x-kong-") => Kind::Kong,
            n if HOP_BY_HOP
                .iter()
                .any(|h| h.as_str().len() == n && is(h.as_str())) =>
            {
                Kind::HopByHop
            }
            _ => Kind::Other,
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u8
    }
}

/// Whether the token `name` (any case) is `lower` (lower case letters, digits and `-`), 8 bytes at a time.
/// Setting bit 5 lower-cases a letter and leaves a digit or `-` as it is; the one other byte it could turn
/// into `-` is CR, which a token (httparse checked) never holds.
#[inline]
fn token_is(name: &[u8], lower: &[u8]) -> bool {
    if name.len() != lower.len() {
        return false;
    }
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    name.chunks(8)
        .zip(lower.chunks(8))
        .all(|(n, l)| word(n) | (0x2020_2020_2020_2020 >> (8 * (8 - n.len()) % 64)) == word(l))
}

/// One field: its kind, name (as received) and value (without surrounding whitespace).
#[derive(Debug, Clone, Copy)]
pub struct Field<'h> {
    pub kind: Kind,
    pub name: &'h [u8],
    pub value: &'h [u8],
}

thread_local! {
    /// Field lists given back by heads that were dropped on this thread.
    static KEPT: Spares<Box<Kept>> = const { Spares::new(64) };
}

/// Room in a map made from the fields for the ones a gateway adds to a response it forwards (latencies,
/// `Via`, `Server`, a request id, ...): without it the map grows and rehashes on those inserts.
const GATEWAY_HEADROOM: usize = 8;

/// The fields of a parsed response head, as received. One pointer wide: a head is moved through several
/// futures on its way to the client, and the lists are recycled per thread, so a head costs no allocation.
#[derive(Debug)]
pub struct ResponseFields(Option<Box<Kept>>);

/// What [`ResponseFields`] points to (always there but while it is dropped).
#[derive(Debug, Default)]
struct Kept {
    /// The whole head: status line, fields, final empty line.
    head: Bytes,
    spans: Vec<FieldSpan>,
    /// A bit per [`Kind`] present.
    present: u16,
    /// Every field line is `name: value` and CRLF, one after the other from the first: the block of
    /// lines can be copied as it is.
    canonical: bool,
    /// Both `Transfer-Encoding` and `Content-Length`: the length is not forwarded (RFC 9112 §6.3 point 3:
    /// kept, it would frame the client's copy of the body wrongly).
    length_dropped: bool,
}

impl ResponseFields {
    /// An empty list to fill with [`ResponseFields::push`] (a recycled one when one is kept).
    pub(super) fn new(head: Bytes, fields: usize) -> ResponseFields {
        let mut kept = KEPT
            .try_with(Spares::take)
            .ok()
            .flatten()
            .unwrap_or_default();
        kept.head = head;
        kept.spans.reserve(fields);
        kept.canonical = true;
        ResponseFields(Some(kept))
    }

    #[inline]
    fn kept(&self) -> &Kept {
        self.0.as_deref().expect("fields are there until dropped")
    }

    /// Adds the next field (after the ones pushed before it).
    pub(super) fn push(&mut self, span: FieldSpan) {
        let kept = self
            .0
            .as_deref_mut()
            .expect("fields are there until dropped");
        let (ne, vs) = (span.name.1 as usize, span.value.0 as usize);
        let follows = match kept.spans.last() {
            // The line starts where the last one's CRLF ends.
            Some(last) => last.value.1 as usize + 2 == span.name.0 as usize,
            None => true,
        };
        let head = &kept.head;
        kept.canonical &= follows
            && vs == ne + 2
            && head[ne..vs] == *b": "
            && head.get(span.value.1 as usize..span.value.1 as usize + 2) == Some(b"\r\n");
        kept.present |= span.kind.bit();
        kept.spans.push(span);
    }

    /// Marks `Content-Length` as not forwarded (it came with `Transfer-Encoding`).
    pub(super) fn drop_length(&mut self) {
        if let Some(kept) = self.0.as_deref_mut() {
            kept.length_dropped = true;
        }
    }

    /// Whether a field of `kind` was received.
    #[inline]
    pub fn has(&self, kind: Kind) -> bool {
        self.kept().present & kind.bit() != 0
    }

    /// Whether any field is of one of `kinds`.
    #[inline]
    pub fn has_any(&self, kinds: &[Kind]) -> bool {
        let mask = kinds.iter().fold(0, |m, k| m | k.bit());
        self.kept().present & mask != 0
    }

    /// Whether `Content-Length` is left out when forwarding (see [`ResponseFields::to_map`]).
    pub fn length_dropped(&self) -> bool {
        self.kept().length_dropped
    }

    /// The `Content-Length` that is forwarded (None when absent, invalid, or dropped beside
    /// `Transfer-Encoding`), read as the parser reads it for framing.
    pub fn content_length(&self) -> Option<u64> {
        if self.length_dropped() {
            return None;
        }
        crate::fields::content_length(self.get("content-length")?)
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.kept().spans.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.kept().spans.is_empty()
    }

    /// Each field in order.
    pub fn iter(&self) -> impl Iterator<Item = Field<'_>> + '_ {
        let kept = self.kept();
        kept.spans.iter().map(|s| Field {
            kind: s.kind,
            name: &kept.head[s.name.0 as usize..s.name.1 as usize],
            value: &kept.head[s.value.0 as usize..s.value.1 as usize],
        })
    }

    /// The value of the first field named `name` (any case).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter()
            .find(|f| f.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|f| f.value)
    }

    /// All field lines as received, CRLFs included, when they are in the canonical form (`name: value`
    /// and CRLF each, nothing between): what a writer copies whole when it keeps every field.
    pub fn block(&self) -> Option<&[u8]> {
        let kept = self.kept();
        match (kept.spans.first(), kept.spans.last()) {
            (Some(first), Some(last)) if kept.canonical => {
                Some(&kept.head[first.name.0 as usize..last.value.1 as usize + 2])
            }
            _ => None,
        }
    }

    /// The fields in a header map (lower-case names, values sharing the head's bytes), without a
    /// `Content-Length` that came with `Transfer-Encoding`, with room for a gateway's own fields.
    pub fn to_map(&self) -> HeaderMap {
        let kept = self.kept();
        let mut map = crate::spare::header_map(kept.spans.len() + GATEWAY_HEADROOM);
        for s in &kept.spans {
            if s.kind == Kind::ContentLength && kept.length_dropped {
                continue;
            }
            let name = &kept.head[s.name.0 as usize..s.name.1 as usize];
            let value = kept.head.slice(s.value.0 as usize..s.value.1 as usize);
            // Both were checked by the parser (httparse's token and field-value rules are the map's).
            if let (Ok(name), Ok(value)) = (
                crate::names::header_name(name),
                HeaderValue::from_maybe_shared(value),
            ) {
                map.append(name, value);
            }
        }
        map
    }
}

impl Drop for ResponseFields {
    /// Gives the list back for the next head parsed on this thread, emptied (its bytes released now).
    fn drop(&mut self) {
        let Some(mut kept) = self.0.take() else {
            return;
        };
        if kept.spans.capacity() <= 64 {
            kept.head = Bytes::new();
            kept.spans.clear();
            kept.present = 0;
            kept.length_dropped = false;
            let _ = KEPT.try_with(|k| k.give(kept));
        }
    }
}

#[cfg(test)]
mod tests;
