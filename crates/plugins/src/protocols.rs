//! A plugin entity's `protocols`: the request protocols it runs for.
//!
//! Kong's default is `["grpc", "grpcs", "http", "https"]`, which every request on the HTTP proxy matches, so
//! chains whose plugins all keep it never look at the request. A narrower list (e.g. only `https`) makes the
//! plugin skip requests of other protocols. A request's protocol is its scheme (`http`/`https`), or
//! `grpc`/`grpcs` when its `Content-Type` is `application/grpc...`. Protocols of other subsystems (`tcp`,
//! `tls`, `udp`, `ws`, ...) never match an HTTP request; a plugin listing only those never runs.

use crate::ctx::RequestCtx;

#[cfg(test)]
mod tests;

/// A set of request protocols, as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocols(u8);

impl Protocols {
    pub const HTTP: Protocols = Protocols(1);
    pub const HTTPS: Protocols = Protocols(2);
    pub const GRPC: Protocols = Protocols(4);
    pub const GRPCS: Protocols = Protocols(8);
    /// Every protocol an HTTP-proxy request can have.
    pub const ALL: Protocols = Protocols(15);

    /// The set named by a plugin entity's `protocols` (unknown and non-HTTP names add nothing).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Protocols {
        Protocols(names.iter().fold(0, |bits, n| {
            bits | match n.as_ref() {
                "http" => Self::HTTP.0,
                "https" => Self::HTTPS.0,
                "grpc" => Self::GRPC.0,
                "grpcs" => Self::GRPCS.0,
                _ => 0,
            }
        }))
    }

    /// The protocol of one request.
    pub fn of(ctx: &RequestCtx<'_>) -> Protocols {
        let tls = ctx.scheme == "https";
        let grpc = ctx
            .request
            .headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        match (grpc, tls) {
            (false, false) => Self::HTTP,
            (false, true) => Self::HTTPS,
            (true, false) => Self::GRPC,
            (true, true) => Self::GRPCS,
        }
    }

    /// True when `self` contains the (single) protocol `request`.
    pub fn allows(self, request: Protocols) -> bool {
        self.0 & request.0 != 0
    }

    /// True when no HTTP-proxy request can match.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}
