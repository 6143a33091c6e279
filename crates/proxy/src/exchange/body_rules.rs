//! nginx's rules for a request body, applied once the upstream request is written and before a target is
//! chosen: `client_max_body_size` always, and request buffering when the route asks for it (Kong's
//! `request_buffering`, on by default). Only requests with a body still to send come here.

use crate::error::ProxyError;
use http_body::Body;
use http_body_util::BodyExt;
use sluice_upstream::body::Capped;
use sluice_upstream::spool::{self, BodyBuffering};
use sluice_upstream::wire::WireRequest;

/// Buffers the body whole (`buffering`), or leaves it streaming under the size limit: a declared length
/// over it is refused at once, a chunked body when it passes it.
pub(super) async fn apply(
    req: &mut WireRequest,
    buffering: bool,
    b: &BodyBuffering,
) -> Result<(), ProxyError> {
    if buffering {
        return Ok(spool::buffer_request(req, b).await?);
    }
    let Some(body) = req.body.take() else {
        return Ok(());
    };
    if spool::over_declared_limit(&body, b.max_body) {
        return Err(ProxyError::PayloadTooLarge);
    }
    req.body = Some(match (b.max_body, body.size_hint().exact()) {
        (0, _) | (_, Some(_)) => body,
        (max, None) => Capped::node_limit(body, max).boxed(),
    });
    Ok(())
}
