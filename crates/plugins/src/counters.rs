//! Counters shared by every node, for `policy: cluster` of `rate-limiting` and `response-ratelimiting` (Kong
//! keeps them in the database).
//! The plugin builds the windows a request counts in; the node provides the store ([`ClusterCounters`],
//! set once on [`crate::state::PluginState`] in DB mode), so this crate needs no database client.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use uuid::Uuid;

/// Whose counters: Kong's `(identifier, service, route)` (the nil UUID for a missing route or service).
#[derive(Debug, Clone)]
pub struct Scope {
    pub identifier: String,
    pub service: Uuid,
    pub route: Uuid,
}

/// One window a request counts in.
#[derive(Debug, Clone)]
pub struct Window {
    /// Kong's period column: the period's name (`second`, `minute`, ...); for response-ratelimiting,
    /// `<limit name>_<period>`.
    pub period: Cow<'static, str>,
    /// The window's start, Unix seconds (Kong's `period_date`).
    pub start: u64,
    pub limit: u64,
    /// Seconds until the window's counter may be dropped.
    pub ttl_secs: u64,
}

/// Whether a request is let through, and each window's count after it (unchanged when refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub allowed: bool,
    pub counts: Vec<u64>,
}

/// A boxed future of a check-and-count.
pub type CountFuture = Pin<Box<dyn Future<Output = Result<Counted, String>> + Send>>;

/// A boxed future of a read of counts, one per window.
pub type CountsFuture = Pin<Box<dyn Future<Output = Result<Vec<u64>, String>> + Send>>;

/// A boxed future of an addition.
pub type AddFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Where `policy: cluster` counts: checks every window and counts the request in all of them, or in none,
/// in one atomic step, so across any number of nodes the requests let through equal the limit.
pub trait ClusterCounters: Send + Sync + 'static {
    fn check_and_count(&self, scope: Scope, windows: Vec<Window>) -> CountFuture;

    /// response-ratelimiting's usage: each window's count in its own table (0 for none yet).
    fn spent(&self, scope: Scope, windows: Vec<Window>) -> CountsFuture;

    /// response-ratelimiting's spending: adds `by` to every window, in one statement.
    fn spend(&self, scope: Scope, windows: Vec<Window>, by: u64) -> AddFuture;
}
