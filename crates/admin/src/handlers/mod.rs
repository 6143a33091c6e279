//! Request dispatch: route the path, check the method, run the handler, turn errors into responses.

mod clustering;
mod config;
mod entities;
mod health;
mod info;
mod oauth2_tokens;
mod proxy_cache;
mod schemas;
pub(crate) mod status;
mod tags;
mod writes;

use crate::errors::ApiError;
use crate::query;
use crate::reply::{self, Reply};
use crate::router::{self, Endpoint, Listener};
use crate::Control;
use bytes::Bytes;
use http::{request::Parts, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::time::Duration;

/// Largest accepted `POST /config` body: a config of 10,000 routes is about 5 MB.
const MAX_CONFIG_BODY: usize = 64 << 20;

/// Largest accepted body of any other request (an entity write, a schema validation): Kong's
/// `nginx_admin_client_max_body_size` default, 10m.
const MAX_BODY: usize = 10 << 20;

/// Entity writes (DB mode) run at most this many at a time per listener, from reading their body to their
/// reply; more wait their turn. decK writes 10 at a time by default and Terraform and CI jobs run side by
/// side, so a write is never refused for being concurrent; the bound holds what concurrent writes cost
/// (each body up to 10 MiB, its JSON, a database transaction) to a fixed amount.
pub const WRITE_PERMITS: usize = 8;

/// What a listener admits at once, each from reading a request's body to its reply:
/// - one `POST /config`: a body and its parsed document can take many times the body's size, so a
///   concurrent load is refused with Kong's 429 before its body is read (the node serializes loads anyway,
///   and Kong answers a load during a load with 429 too);
/// - [`WRITE_PERMITS`] entity writes: a further one waits for a turn (not refused: decK's parallel writes
///   must all succeed).
#[derive(Debug)]
pub struct Gate {
    config: tokio::sync::Semaphore,
    writes: tokio::sync::Semaphore,
    /// The longest wait between two reads of a request body (nginx's `client_body_timeout`).
    body_timeout: Duration,
}

impl Gate {
    pub fn new(body_timeout: Duration) -> Gate {
        Gate {
            config: tokio::sync::Semaphore::new(1),
            writes: tokio::sync::Semaphore::new(WRITE_PERMITS),
            body_timeout,
        }
    }
}

impl Gate {
    fn try_enter(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ApiError> {
        self.config.try_acquire().map_err(|_| ApiError::Busy)
    }

    /// Waits for an entity write's turn.
    async fn write_turn(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ApiError> {
        // The semaphore is never closed; an error would be a bug, answered as 500.
        self.writes
            .acquire()
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))
    }
}

/// Answers one request on `listener`. Never fails: every error becomes Kong's error response.
pub async fn dispatch(
    listener: Listener,
    req: http::Request<Incoming>,
    control: &dyn Control,
    gate: &Gate,
) -> Reply {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let raw = router::segments(&path);
    let decoded: Vec<String> = raw.iter().map(|s| query::unescape_path(s)).collect();
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let Some(endpoint) = router::route(listener, &segments) else {
        return ApiError::NotFound.into_reply();
    };
    if parts.method == Method::OPTIONS {
        return options(&endpoint, &parts);
    }
    if !endpoint.methods().contains(&parts.method) {
        return ApiError::MethodNotAllowed.into_reply();
    }
    // `next` links repeat the path as the client wrote it (still encoded).
    let base = format!("/{}", raw.join("/"));
    handle(endpoint, &parts, &base, body, control, gate)
        .await
        .unwrap_or_else(ApiError::into_reply)
}

async fn handle(
    endpoint: Endpoint<'_>,
    parts: &Parts,
    base: &str,
    body: Incoming,
    control: &dyn Control,
    gate: &Gate,
) -> Result<Reply, ApiError> {
    let method = &parts.method;
    let read = *method == Method::GET || *method == Method::HEAD;
    let q = parts.uri.query();
    match endpoint {
        Endpoint::Root => Ok(info::root(control)),
        Endpoint::Status => Ok(status::status(control)),
        Endpoint::Ready => Ok(status::ready(control)),
        Endpoint::Dns => Ok(status::dns()),
        Endpoint::Metrics => status::metrics(control),
        Endpoint::PluginsEnabled => Ok(info::plugins_enabled(control)),
        Endpoint::Endpoints => Ok(schemas::endpoints()),
        Endpoint::Timers => Ok(status::timers(control)),
        Endpoint::Schema(name) => schemas::entity(name),
        Endpoint::PluginSchema(name) => schemas::plugin(control, name),
        Endpoint::Validate(name) => {
            schemas::validate(control, name, &read_body(body, MAX_BODY, gate).await?)
        }
        Endpoint::UpstreamHealth(key) => health::get(control, key, q),
        Endpoint::SetTargetHealth(u, t, healthy) => health::set(control, u, t, healthy),
        Endpoint::ProxyCache(plugin, key) => proxy_cache::serve(control, method, plugin, key),
        Endpoint::OAuth2Tokens(key) => oauth2_tokens::serve(control, method, key).await,
        Endpoint::DataPlanes => clustering::data_planes(control),
        Endpoint::ClusteringStatus => clustering::status(control),
        Endpoint::Tags(tag) => tags::list(&control.config(), tag, base, q),
        Endpoint::Config if read => Ok(config::get(control)),
        Endpoint::Config if control.data_plane() => Err(ApiError::BadRequest(
            "this node is a data plane: its configuration comes from its control plane".into(),
        )),
        Endpoint::Config if control.db_mode() => Err(ApiError::BadRequest(
            "this endpoint is only available when Kong is configured to not use a database".into(),
        )),
        Endpoint::Config => {
            let _admitted = gate.try_enter()?;
            let body = read_body(body, MAX_CONFIG_BODY, gate).await?;
            config::post(control, q, content_type(parts), body).await
        }
        Endpoint::List(scope) if read => entities::list(&control.config(), &scope, base, q),
        Endpoint::Item(scope, key) if read => entities::item(&control.config(), &scope, key),
        Endpoint::Owner(child, key, rel) if read => {
            entities::owner(&control.config(), child, key, rel)
        }
        Endpoint::List(scope) if control.db_mode() => {
            let _turn = gate.write_turn().await?;
            let body = write_body(parts, body, gate).await?;
            writes::create(control, &scope, body).await
        }
        Endpoint::Item(scope, key) if control.db_mode() => {
            let _turn = gate.write_turn().await?;
            let body = write_body(parts, body, gate).await?;
            writes::item(control, &scope, key, method, body).await
        }
        Endpoint::Owner(child, key, rel) if control.db_mode() => {
            let _turn = gate.write_turn().await?;
            let body = write_body(parts, body, gate).await?;
            writes::owner(control, child, key, rel, method, body).await
        }
        Endpoint::List(scope) => Err(entities::refuse_list_write(
            &control.config(),
            &scope,
            method,
        )),
        Endpoint::Item(scope, key) => entities::item_write(&control.config(), &scope, key, method),
        Endpoint::Owner(child, key, rel) => Err(entities::refuse_owner_write(
            &control.config(),
            child,
            key,
            rel,
            method,
        )),
    }
}

fn content_type(parts: &Parts) -> &str {
    parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

async fn write_body<'p>(
    parts: &'p Parts,
    body: Incoming,
    gate: &Gate,
) -> Result<writes::Body<'p>, ApiError> {
    Ok(writes::Body {
        content_type: content_type(parts),
        bytes: read_body(body, MAX_BODY, gate).await?,
    })
}

/// Kong's preflight answer: 204 with the endpoint's methods.
fn options(endpoint: &Endpoint<'_>, parts: &Parts) -> Reply {
    let methods: Vec<&str> = endpoint.methods().iter().map(Method::as_str).collect();
    let methods =
        HeaderValue::from_str(&methods.join(", ")).unwrap_or(HeaderValue::from_static("GET"));
    let allow_headers = parts
        .headers
        .get("access-control-request-headers")
        .cloned()
        .unwrap_or(HeaderValue::from_static("Content-Type"));
    let mut resp = reply::empty(StatusCode::NO_CONTENT);
    let h = resp.headers_mut();
    h.insert(http::header::ALLOW, methods.clone());
    h.insert(http::header::ACCESS_CONTROL_ALLOW_METHODS, methods);
    h.insert(http::header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers);
    resp
}

/// The whole request body, up to `limit` bytes: a `Content-Length` over it is refused before a byte is
/// read, and a body without one (chunked, h2) is counted as it streams and cut off where it crosses it.
/// Both get Kong's 413. A client that sends nothing for the gate's body timeout gets 408.
async fn read_body(body: Incoming, limit: usize, gate: &Gate) -> Result<Bytes, ApiError> {
    let too_large = || {
        tracing::info!(limit, "admin request body over the limit refused");
        ApiError::TooLarge("Payload too large".into())
    };
    if http_body::Body::size_hint(&body).lower() > limit as u64 {
        return Err(too_large());
    }
    let mut body = http_body_util::Limited::new(body, limit);
    let mut read = bytes::BytesMut::new();
    loop {
        match tokio::time::timeout(gate.body_timeout, body.frame()).await {
            Err(_) => return Err(ApiError::TimedOut),
            Ok(None) => return Ok(read.freeze()),
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    read.extend_from_slice(data);
                }
            }
            Ok(Some(Err(e))) if e.is::<http_body_util::LengthLimitError>() => {
                return Err(too_large())
            }
            Ok(Some(Err(e))) => {
                return Err(ApiError::BadRequest(format!(
                    "could not read the request body: {e}"
                )))
            }
        }
    }
}
