//! Second step of response parsing: the header map built from the scanned field spans, and the body framing
//! and keep-alive decision (RFC 9112 §6.3, §9.3) read from the fields on the way.

use bytes::BytesMut;
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderName, HeaderValue, StatusCode, Version};

use super::{FieldSpan, Framing, ParseError, ResponseHead, Scanned};
use crate::fields::{self, ConnectionTokens};

#[cfg(test)]
mod tests;

/// What the framing fields of a head said.
#[derive(Debug, Default)]
struct FramingFields {
    /// A `Transfer-Encoding` field was present.
    te: bool,
    /// The final transfer coding seen so far is `chunked`.
    te_chunked: bool,
    /// A `Content-Length` field was present.
    cl: bool,
    /// The agreed `Content-Length`, `None` once a field line was invalid or disagreed.
    cl_value: Option<u64>,
    connection: ConnectionTokens,
}

impl FramingFields {
    /// Notes one field line if it is one of the framing fields.
    #[inline]
    fn see(&mut self, name: &HeaderName, value: &[u8]) {
        if *name == CONTENT_LENGTH {
            let n = fields::content_length(value);
            self.cl_value = match (self.cl, self.cl_value, n) {
                (false, _, n) => n,
                (true, Some(a), Some(b)) if a == b => Some(a),
                _ => None,
            };
            self.cl = true;
        } else if *name == TRANSFER_ENCODING {
            self.te = true;
            if let Some(coding) = fields::last_member(value) {
                self.te_chunked = coding.eq_ignore_ascii_case(b"chunked");
            }
        } else if *name == CONNECTION {
            self.connection.add(value);
        }
    }
}

/// Room in the header map for the fields a gateway adds to a response it forwards (latencies, `Via`,
/// `Server`, a request id, ...): without it the map grows and rehashes on those inserts.
const GATEWAY_HEADROOM: usize = 8;

/// Splits the scanned head off `buf` and builds the [`ResponseHead`]: names via `HeaderName::from_bytes`, values
/// as slices of the head's bytes (zero copy).
pub(super) fn build(
    buf: &mut BytesMut,
    scanned: Scanned,
    spans: &[FieldSpan],
    head_request: bool,
) -> Result<ResponseHead, ParseError> {
    let head = buf.split_to(scanned.len).freeze();
    let mut headers = crate::spare::header_map(spans.len() + GATEWAY_HEADROOM);
    let mut seen = FramingFields::default();
    for span in spans {
        let (ns, ne) = (span.name.0 as usize, span.name.1 as usize);
        let (vs, ve) = (span.value.0 as usize, span.value.1 as usize);
        let name = HeaderName::from_bytes(&head[ns..ne]).map_err(|_| ParseError::Malformed)?;
        seen.see(&name, &head[vs..ve]);
        let value = HeaderValue::from_maybe_shared(head.slice(vs..ve))
            .map_err(|_| ParseError::Malformed)?;
        headers.append(name, value);
    }
    let framing = framing(scanned.status, scanned.version, head_request, &seen)?;
    if seen.te && seen.cl {
        // Transfer-Encoding overrides Content-Length, and an intermediary must remove the length before
        // forwarding (RFC 9112 §6.3 point 3): kept, it would frame the client's copy of the body wrongly.
        headers.remove(CONTENT_LENGTH);
    }
    let keep_alive = keep_alive(scanned.version, framing, &seen);
    Ok(ResponseHead {
        status: scanned.status,
        version: scanned.version,
        headers,
        framing,
        keep_alive,
    })
}

/// The body framing, RFC 9112 §6.3 in order: no body for HEAD/1xx/204/304; then Transfer-Encoding; then
/// Content-Length; else until close.
fn framing(
    status: StatusCode,
    version: Version,
    head_request: bool,
    seen: &FramingFields,
) -> Result<Framing, ParseError> {
    if head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Framing::Empty);
    }
    if seen.te {
        // HTTP/1.0 has no transfer codings: a TE field there is read until close (§6.3 point 4 and 7).
        return Ok(if seen.te_chunked && version == Version::HTTP_11 {
            Framing::Chunked
        } else {
            Framing::UntilClose
        });
    }
    if seen.cl {
        return seen
            .cl_value
            .map(Framing::Length)
            .ok_or(ParseError::BadContentLength);
    }
    Ok(Framing::UntilClose)
}

/// Whether the connection may be reused after the body: HTTP/1.1 unless `Connection: close`, HTTP/1.0 only
/// with `Connection: keep-alive`; never for a body read until close, nor when Transfer-Encoding comes with
/// Content-Length (a smuggling attempt or a broken server: don't trust what follows) or in an HTTP/1.0 response.
fn keep_alive(version: Version, framing: Framing, seen: &FramingFields) -> bool {
    let by_version = if version == Version::HTTP_11 {
        !seen.connection.close
    } else {
        seen.connection.keep_alive && !seen.connection.close && !seen.te
    };
    by_version && framing != Framing::UntilClose && !(seen.te && seen.cl)
}
