//! `http_response_header_for_traceid`, which both tracing plugins have: the client's response gets the
//! trace id in hex. A plugin registers a `header_filter` only when it is set, so by default neither plugin
//! costs the header phase anything.

use crate::ctx::{LogRecord, RequestCtx};
use crate::plugin::{Flow, Registered};
use crate::tracing::hex::to_hex;
use http::{HeaderName, HeaderValue};

/// The configured response header, if any.
pub struct TraceHeader(Option<HeaderName>);

impl TraceHeader {
    pub fn new(name: Option<&str>) -> Result<TraceHeader, String> {
        name.map(|n| HeaderName::try_from(n).map_err(|e| format!("{n}: {e}")))
            .transpose()
            .map(TraceHeader)
    }

    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Adds the header with `trace_id` in hex.
    pub fn add(&self, response: &mut http::response::Parts, trace_id: &[u8]) {
        if let (Some(name), Ok(value)) = (&self.0, HeaderValue::try_from(to_hex(trace_id))) {
            response.headers.append(name.clone(), value);
        }
    }
}

type Access<P> = for<'a, 's> fn(&P, &'a mut RequestCtx<'s>) -> Flow;
type Log<P> = for<'a, 's> fn(&P, &'a RequestCtx<'s>, &LogRecord);
type HeaderFilter<P> = for<'a, 's> fn(&P, &'a mut RequestCtx<'s>, &mut http::response::Parts);

/// A tracing plugin's registration: `access` and `log`, and `header_filter` only when `reports`; the
/// caller adds what else it runs, then builds it.
pub fn register<P: Send + Sync + 'static>(
    name: &'static str,
    plugin: P,
    access: Access<P>,
    log: Log<P>,
    header_filter: HeaderFilter<P>,
    reports: bool,
) -> Registered<P> {
    let registered = Registered::new(name, plugin).access(access).log(log);
    match reports {
        true => registered.header_filter(header_filter),
        false => registered,
    }
}
