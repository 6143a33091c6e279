//! What an open tunnel keeps for its log phase, made to own its bytes when the tunnel opens
//! ([`super::Tunnel`]): the request head and the 101's header map are parsed zero-copy, each value a
//! slice of the read buffer it came from (the client connection's, 4 KiB and up, and the upstream
//! connection's, 16 KiB). Kept as they are, one header value would hold its whole buffer for the life of
//! the tunnel, which is usually long and idle; copied, they hold only their own bytes.

use bytes::Bytes;
use http::header::HeaderValue;
use http::{request, HeaderMap, Uri};

/// Each value of `headers` in a small allocation of its own (sensitivity kept).
pub(super) fn own_headers(headers: &mut HeaderMap) {
    for value in headers.values_mut() {
        let Ok(mut owned) =
            HeaderValue::from_maybe_shared(Bytes::copy_from_slice(value.as_bytes()))
        else {
            continue;
        };
        owned.set_sensitive(value.is_sensitive());
        *value = owned;
    }
}

/// The request head's URI and header values on their own bytes.
pub(super) fn own_request(request: &mut request::Parts) {
    if let Ok(uri) = Uri::try_from(request.uri.to_string()) {
        request.uri = uri;
    }
    own_headers(&mut request.headers);
}

#[cfg(test)]
mod tests;
