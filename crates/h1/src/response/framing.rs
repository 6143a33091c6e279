//! Second step of response parsing: the fields kept from the scanned spans, and the body framing and
//! keep-alive decision (RFC 9112 §6.3, §9.3) read from them on the way.

use bytes::BytesMut;
use http::{StatusCode, Version};

use super::{FieldSpan, Framing, Kind, ParseError, ResponseFields, ResponseHead, Scanned};
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
    fn see(&mut self, kind: Kind, value: &[u8]) {
        if kind == Kind::ContentLength {
            let n = fields::content_length(value);
            self.cl_value = match (self.cl, self.cl_value, n) {
                (false, _, n) => n,
                (true, Some(a), Some(b)) if a == b => Some(a),
                _ => None,
            };
            self.cl = true;
        } else if kind == Kind::TransferEncoding {
            self.te = true;
            if let Some(coding) = fields::last_member(value) {
                self.te_chunked = coding.eq_ignore_ascii_case(b"chunked");
            }
        } else if kind == Kind::Connection {
            self.connection.add(value);
        }
    }
}

/// Splits the scanned head off `buf` and builds the [`ResponseHead`]: the fields stay in the head's bytes.
pub(super) fn build(
    buf: &mut BytesMut,
    scanned: Scanned,
    spans: &[FieldSpan],
    head_request: bool,
) -> Result<ResponseHead, ParseError> {
    let head = buf.split_to(scanned.len).freeze();
    let mut seen = FramingFields::default();
    for span in spans.iter().filter(|s| s.kind != Kind::Other) {
        seen.see(
            span.kind,
            &head[span.value.0 as usize..span.value.1 as usize],
        );
    }
    let mut fields = ResponseFields::new(head, spans.len());
    for span in spans {
        fields.push(*span);
    }
    let framing = framing(scanned.status, scanned.version, head_request, &seen)?;
    if seen.te && seen.cl {
        fields.drop_length();
    }
    let keep_alive = keep_alive(scanned.version, framing, &seen);
    Ok(ResponseHead {
        status: scanned.status,
        version: scanned.version,
        fields,
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
