//! The upstream request as HTTP/1.1 bytes, written once from the (plugin-edited) client request head:
//! hop-by-hop headers left out, `X-Forwarded-*`, `X-Real-IP`, `Via` and the request id written in their
//! place. Only `Host` waits for the try, as each try may go to a different target; a retry resends the
//! same bytes. The client's request head is only read, so plugins can still read it in the log phase.

use crate::body::ProxyBody;
use crate::forward::{self, Forwarded};
use crate::lines::field;
use bytes::BytesMut;
use http::header::HeaderValue;
use http::{request, Method, Version};
use http_body::Body;
use std::io::IoSlice;
use std::net::IpAddr;

/// A request ready to be sent to any target of a service.
pub struct WireRequest {
    /// The request line and every header but `Host`, each line ending in CRLF (no blank line yet).
    lines: Vec<u8>,
    /// Where the request line ends (`Host` goes right after it).
    line_end: usize,
    /// The client's `Host`, sent when the route preserves it.
    pub client_host: Option<HeaderValue>,
    /// The body still to send (None: the request has none).
    pub body: Option<ProxyBody>,
    /// The request has a body (so a try that got no answer is not sent again).
    has_body: bool,
    pub chunked: bool,
    /// Where the `Transfer-Encoding: chunked` line starts in `lines` (the last line written), when chunked.
    chunked_at: usize,
    /// Asks the upstream to switch to the WebSocket protocol ([`WireRequest::upgrade_websocket`]).
    upgrade: bool,
    pub method: Method,
}

/// What the upstream request says about the downstream side, beside the client's own headers.
pub struct HopFacts<'a> {
    pub forwarded: Forwarded,
    pub peer: IpAddr,
    /// The peer's IP address as a header value, made once per connection.
    pub peer_text: &'a HeaderValue,
    pub client_ip: IpAddr,
    /// The client's HTTP version (for `Via`).
    pub version: Version,
    /// Sent as `X-Kong-Request-Id` (replacing the client's) when set.
    pub request_id: Option<&'a str>,
}

impl WireRequest {
    /// Writes `parts` with `target` (path and query) as the request target.
    pub fn new(
        parts: &request::Parts,
        target: &str,
        body: ProxyBody,
        d: HopFacts<'_>,
    ) -> WireRequest {
        let mut lines = Vec::with_capacity(512);
        lines.extend_from_slice(parts.method.as_str().as_bytes());
        lines.push(b' ');
        lines.extend_from_slice(target.as_bytes());
        lines.extend_from_slice(b" HTTP/1.1\r\n");
        let line_end = lines.len();
        let headers = &parts.headers;
        let mut has_length = false;
        // The client's X-Forwarded-For and Via values, extended rather than copied (allocated only when sent).
        let (mut xff, mut via) = (Vec::new(), Vec::new());
        // The client's first `Host`, taken in the pass over the fields (a lookup cost ~110 instructions).
        let mut client_host = None;
        for (name, value) in headers {
            if forward::is_hop_by_hop(name) {
                continue;
            }
            let keep = match name.as_str() {
                "host" => {
                    client_host.get_or_insert_with(|| value.clone());
                    false
                }
                "te" => value.as_bytes().eq_ignore_ascii_case(b"trailers"),
                "content-length" => {
                    has_length = true;
                    true
                }
                "x-kong-request-id" => d.request_id.is_none(),
                "x-forwarded-for" => {
                    xff.push(value);
                    false
                }
                "via" => {
                    via.push(value);
                    false
                }
                // The client's `Connection`-named fields were dropped before plugins ran
                // (`forward::drop_connection_named`): what is left here is the gateway's to send.
                n => !forward::replaced(n),
            };
            if keep {
                field(&mut lines, name.as_str(), value.as_bytes());
            }
        }
        d.forwarded.write(
            &mut lines,
            [&xff, &via],
            d.peer,
            d.peer_text,
            d.client_ip,
            d.version,
        );
        if let Some(id) = d.request_id {
            field(&mut lines, "x-kong-request-id", id.as_bytes());
        }
        let mut chunked = false;
        let chunked_at = lines.len();
        let body = if body.is_end_stream() {
            if !has_length && matches!(parts.method, Method::POST | Method::PUT | Method::PATCH) {
                field(&mut lines, "content-length", b"0");
            }
            None
        } else {
            if !has_length {
                match body.size_hint().exact() {
                    Some(n) => field(
                        &mut lines,
                        "content-length",
                        itoa::Buffer::new().format(n).as_bytes(),
                    ),
                    None => {
                        field(&mut lines, "transfer-encoding", b"chunked");
                        chunked = true;
                    }
                }
            }
            Some(body)
        };
        let has_body = body.is_some();
        WireRequest {
            lines,
            line_end,
            client_host,
            body,
            has_body,
            chunked,
            chunked_at,
            upgrade: false,
            method: parts.method.clone(),
        }
    }

    /// Makes the request a WebSocket upgrade, as Kong sends one: `Connection: keep-alive, Upgrade` and
    /// `Upgrade: websocket` (the client's own lines of these hop-by-hop names were left out; its
    /// `Sec-WebSocket-*` fields are end-to-end and already in). A 101 then answers it
    /// ([`crate::conn::Conn::upgrade`]).
    pub fn upgrade_websocket(&mut self) {
        field(&mut self.lines, "connection", b"keep-alive, Upgrade");
        field(&mut self.lines, "upgrade", b"websocket");
        self.upgrade = true;
    }

    /// Gives a chunked request the length its body turned out to have (request buffering read it whole):
    /// `Content-Length` replaces `Transfer-Encoding: chunked`, as nginx sends a buffered body.
    pub fn set_length(&mut self, n: u64) {
        if self.chunked {
            self.lines.truncate(self.chunked_at);
            field(
                &mut self.lines,
                "content-length",
                itoa::Buffer::new().format(n).as_bytes(),
            );
            self.chunked = false;
        }
    }

    /// Whether the request asks for an upgrade.
    pub fn is_upgrade(&self) -> bool {
        self.upgrade
    }

    /// The head for one try, with `host` as its `Host`, ending in the blank line.
    pub fn head(&self, host: &[u8], out: &mut BytesMut) {
        let slices = self.head_slices(host);
        out.clear();
        out.reserve(slices.iter().map(|s| s.len()).sum());
        for s in slices {
            out.extend_from_slice(&s);
        }
    }

    /// The same head as slices for one vectored write: a body-less request is written without copying
    /// its head into a buffer of its own (an allocation and a copy per request).
    pub fn head_slices<'a>(&'a self, host: &'a [u8]) -> [IoSlice<'a>; 6] {
        [
            IoSlice::new(&self.lines[..self.line_end]),
            IoSlice::new(b"host: "),
            IoSlice::new(host),
            IoSlice::new(b"\r\n"),
            IoSlice::new(&self.lines[self.line_end..]),
            IoSlice::new(b"\r\n"),
        ]
    }

    /// Path and query as sent upstream (Kong's `upstream_uri`).
    pub fn target(&self) -> &str {
        let line = &self.lines[..self.line_end];
        let start = self.method.as_str().len() + 1;
        let end = line.len() - " HTTP/1.1\r\n".len();
        std::str::from_utf8(&line[start..end]).unwrap_or("/")
    }

    /// Whether the request has no body.
    pub fn bodyless(&self) -> bool {
        !self.has_body
    }
}

#[cfg(test)]
pub(crate) mod tests;
