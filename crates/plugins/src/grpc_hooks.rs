//! What the proxy's gRPC path and a plugin hand each other through [`RequestCtx::plugin_data`], so that
//! the proxy depends on no plugin's module. `grpc-web` is their user today.
//!
//! [`RequestCtx::plugin_data`]: crate::RequestCtx::plugin_data

use http::HeaderMap;
use std::sync::{Arc, OnceLock};

/// From the proxy's gRPC path: the path the upstream would get over HTTP (`strip_path` applied, the
/// service's `path` in front), put in `plugin_data` before `access` for routes with plugins, since a
/// gRPC call otherwise goes upstream with the client's path, as `grpc_pass` sends it.
#[derive(Clone)]
pub struct UpstreamPath(pub String);

/// To the proxy's gRPC relay: a plugin that carries the upstream's trailers in the body puts this in
/// `plugin_data` during `access`; the relay then fills it with the trailers, instead of sending them to
/// the client, before the last `body_filter` call (`eof`).
#[derive(Clone, Default)]
pub struct CarriedTrailers(Arc<OnceLock<HeaderMap>>);

impl CarriedTrailers {
    /// Called by the relay with the upstream's trailers.
    pub fn carry(&self, trailers: HeaderMap) {
        let _ = self.0.set(trailers);
    }

    /// The trailers, once the upstream sent them.
    pub fn get(&self) -> Option<&HeaderMap> {
        self.0.get()
    }
}
