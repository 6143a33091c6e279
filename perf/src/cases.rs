//! Benchmark cases: which routes, consumers and plugins a gateway is loaded with, and how the
//! load generator addresses them.
//!
//! A case is written `name[@routes[/consumers]]` on the command line, e.g. `rl-key-auth@100`
//! (100 routes, 100 consumers) or `rl-basic-auth@100/10`. Route `i` (0-based) has path `/r{i}`;
//! consumer `i` is `c{i}` with key `key-{i}` or password `pw-{i}`, as in Kong's benchmark (for jwt: a
//! `jwt_secrets` credential with key `key-{i}` and secret `secret-{i}`, and an HS256 token naming it; for
//! hmac-auth: username `c{i}` and secret `secret-{i}`).

pub mod config;
#[cfg(test)]
mod tests;

use anyhow::{bail, Context, Result};
use std::fmt;

/// The kinds of benchmark case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CaseKind {
    /// Routes to one service, no plugins (the baseline every ratio is taken against).
    NoPlugins,
    /// A global rate-limiting plugin whose limit never triggers.
    RateLimiting,
    /// The same limit with `policy: redis` (127.0.0.1:6379, database 15), one check-and-count on Redis per
    /// request (`sync_rate: -1`).
    RlRedis,
    /// The same with `sync_rate: 0.1`: counted on the node, synced to Redis in batches.
    RlRedisSync,
    /// Global rate-limiting + key-auth, one key-auth credential per consumer.
    RlKeyAuth,
    /// Global rate-limiting + basic-auth, one basic-auth credential per consumer.
    RlBasicAuth,
    /// Global rate-limiting + jwt, one HS256 `jwt_secrets` credential per consumer.
    RlJwt,
    /// Global rate-limiting + hmac-auth, one `hmacauth_credentials` credential per consumer, requests
    /// signed with hmac-sha256 over `date`.
    RlHmacAuth,
    /// Kong's large-config scenario: 10,000 routes and consumers, key-auth and
    /// request-termination on every route.
    Large,
    /// A global prometheus plugin with every metrics flag on (the metrics issue's seed experiment).
    Prometheus,
    /// A global http-log plugin sending batches of up to 100 records to the built-in upstream.
    HttpLog,
    /// A global statsd plugin with Kong's defaults (13 metrics, one UDP datagram per line) sending to the
    /// built-in upstream's UDP port (the same number as its HTTP port), which discards them.
    Statsd,
    /// A global opentelemetry plugin tracing every request (`sampling_rate: 1.0`), exporting to the
    /// built-in upstream over OTLP/HTTP.
    Opentelemetry,
    /// A global tcp-log plugin with Kong's defaults (each record its own delivery) writing to the built-in
    /// upstream, which discards a connection's bytes when they start like a JSON record.
    TcpLog,
    /// A global proxy-cache plugin (strategy memory) whose every request after the first is a hit: the
    /// cost of answering from the cache. The service's path is `/cacheable`, for which the built-in
    /// upstream sends the `Content-Type` proxy-cache needs.
    ProxyCacheHit,
    /// WebSocket tunnels (route `/r{i}`, no plugins) to the built-in upstream, which echoes every message:
    /// messages/s with one message in flight per tunnel; `--connections` is the number of tunnels.
    WsEcho,
    /// gRPC unary calls over HTTP/2 (h2c with `--http`, h2 over TLS otherwise) to the built-in upstream's
    /// h2c gRPC answer: a `protocol: grpc` service, routes `/perf.R{i}/` of `protocols: [grpc, grpcs]`,
    /// loaded by h2load.
    GrpcUnary,
}

/// What the load speaks to the gateway, and so how every gateway is configured and loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Requests over HTTP/1.1 (wrk, oha).
    Http,
    /// Messages through WebSocket tunnels (the built-in driver, [`crate::loadgen::ws`]).
    WebSocket,
    /// gRPC unary calls over HTTP/2 (h2load, [`crate::loadgen::h2load`]).
    Grpc,
}

impl CaseKind {
    /// Every kind, in report order.
    pub const ALL: [CaseKind; 17] = [
        CaseKind::NoPlugins,
        CaseKind::RateLimiting,
        CaseKind::RlRedis,
        CaseKind::RlRedisSync,
        CaseKind::RlKeyAuth,
        CaseKind::RlBasicAuth,
        CaseKind::RlJwt,
        CaseKind::RlHmacAuth,
        CaseKind::Large,
        CaseKind::Prometheus,
        CaseKind::HttpLog,
        CaseKind::Statsd,
        CaseKind::Opentelemetry,
        CaseKind::TcpLog,
        CaseKind::ProxyCacheHit,
        CaseKind::WsEcho,
        CaseKind::GrpcUnary,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            CaseKind::NoPlugins => "no-plugins",
            CaseKind::RateLimiting => "rate-limiting",
            CaseKind::RlRedis => "rl-redis",
            CaseKind::RlRedisSync => "rl-redis-sync",
            CaseKind::RlKeyAuth => "rl-key-auth",
            CaseKind::RlBasicAuth => "rl-basic-auth",
            CaseKind::RlJwt => "rl-jwt",
            CaseKind::RlHmacAuth => "rl-hmac-auth",
            CaseKind::Large => "large",
            CaseKind::Prometheus => "prometheus",
            CaseKind::HttpLog => "http-log",
            CaseKind::Statsd => "statsd",
            CaseKind::Opentelemetry => "opentelemetry",
            CaseKind::TcpLog => "tcp-log",
            CaseKind::ProxyCacheHit => "proxy-cache-hit",
            CaseKind::WsEcho => "ws-echo",
            CaseKind::GrpcUnary => "grpc-unary",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .with_context(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.name()).collect();
                format!("unknown case `{name}` (known: {})", names.join(", "))
            })
    }

    /// The credential requests must carry, if any.
    pub fn auth(self) -> Option<Auth> {
        match self {
            CaseKind::RlKeyAuth | CaseKind::Large => Some(Auth::Key),
            CaseKind::RlBasicAuth => Some(Auth::Basic),
            CaseKind::RlJwt => Some(Auth::Jwt),
            CaseKind::RlHmacAuth => Some(Auth::Hmac),
            CaseKind::NoPlugins
            | CaseKind::RateLimiting
            | CaseKind::RlRedis
            | CaseKind::RlRedisSync
            | CaseKind::Prometheus
            | CaseKind::HttpLog
            | CaseKind::Statsd
            | CaseKind::Opentelemetry
            | CaseKind::TcpLog
            | CaseKind::ProxyCacheHit
            | CaseKind::WsEcho
            | CaseKind::GrpcUnary => None,
        }
    }

    /// Whether the case counts on the local Redis ([`config::REDIS`]).
    pub fn uses_redis(self) -> bool {
        matches!(self, CaseKind::RlRedis | CaseKind::RlRedisSync)
    }

    /// What the load speaks.
    pub fn protocol(self) -> Protocol {
        match self {
            CaseKind::WsEcho => Protocol::WebSocket,
            CaseKind::GrpcUnary => Protocol::Grpc,
            _ => Protocol::Http,
        }
    }
}

/// The credential a request of an authenticated case carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `apikey: key-{i}`.
    Key,
    /// `Authorization: Basic base64(c{i}:pw-{i})`.
    Basic,
    /// `Authorization: Bearer <HS256 token with iss key-{i}, signed with secret-{i}>`.
    Jwt,
    /// `Authorization: hmac username="c{i}", algorithm="hmac-sha256", headers="date", signature=".."` with
    /// the `Date` of [`config::fixed_headers`] (one date for the whole run; the plugin's `clock_skew` is a
    /// year).
    Hmac,
}

/// One benchmark case: a kind with its route and consumer counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Case {
    /// What plugins are configured.
    pub kind: CaseKind,
    /// Number of routes (`/r0` .. `/r{n-1}`), at least 1.
    pub routes: usize,
    /// Number of consumers (`c0` ..), 0 for cases without authentication.
    pub consumers: usize,
}

/// Routes and consumers of the large-config scenario.
pub const LARGE_COUNT: usize = 10_000;

impl Case {
    /// The case with the given counts. Defaults: 1 route (10,000 for `large`); as many consumers
    /// as routes for authenticated kinds. Consumers are forced to 0 for unauthenticated kinds and
    /// to at least 1 for authenticated ones; routes to at least 1.
    pub fn new(kind: CaseKind, routes: Option<usize>, consumers: Option<usize>) -> Self {
        let default = if kind == CaseKind::Large {
            LARGE_COUNT
        } else {
            1
        };
        let routes = routes.unwrap_or(default).max(1);
        let consumers = match kind.auth() {
            None => 0,
            Some(_) => consumers.unwrap_or(routes).max(1),
        };
        Case {
            kind,
            routes,
            consumers,
        }
    }

    /// Parses `name[@routes[/consumers]]`.
    pub fn parse(spec: &str) -> Result<Self> {
        let (name, counts) = match spec.split_once('@') {
            Some((name, counts)) => (name, Some(counts)),
            None => (spec, None),
        };
        let kind = CaseKind::parse(name)?;
        let number = |s: &str| {
            s.parse::<usize>()
                .with_context(|| format!("bad count `{s}` in case `{spec}`"))
        };
        let (routes, consumers) = match counts {
            None => (None, None),
            Some(c) => match c.split_once('/') {
                Some((r, c)) => (Some(number(r)?), Some(number(c)?)),
                None => (Some(number(c)?), None),
            },
        };
        Ok(Case::new(kind, routes, consumers))
    }

    /// Whether nginx peers can serve this case (they have no plugins): the no-plugins case and the
    /// protocol cases, which have none either.
    pub fn peers_can_run(&self) -> bool {
        self.kind == CaseKind::NoPlugins || self.kind.protocol() != Protocol::Http
    }

    /// The case nginx's row is taken from when this case's row is compared with nginx: the same case
    /// for the protocol cases (messages and gRPC calls compare only with themselves), the no-plugins
    /// case with the same routes otherwise.
    pub fn peer_case(&self) -> Case {
        match self.kind.protocol() {
            Protocol::Http => self.baseline(),
            Protocol::WebSocket | Protocol::Grpc => *self,
        }
    }

    /// The no-plugins case with the same routes: the baseline of this case's plugin cost.
    pub fn baseline(&self) -> Case {
        Case::new(CaseKind::NoPlugins, Some(self.routes), None)
    }

    /// A name safe for file names.
    pub fn file_stem(&self) -> String {
        self.to_string().replace(['@', '/'], "_")
    }
}

impl fmt::Display for Case {
    /// `name@routes`, or `name@routes/consumers` when consumers differ from routes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.kind.name(), self.routes)?;
        if self.consumers != 0 && self.consumers != self.routes {
            write!(f, "/{}", self.consumers)?;
        }
        Ok(())
    }
}

/// Named suites: `kong8` = Kong's published benchmark cases (each plugin set over 1 and 100
/// routes/consumers); `metrics` = no plugins vs a global prometheus with every flag on vs a global
/// http-log to the built-in upstream, 1 and 100 routes.
pub fn suite(name: &str) -> Result<Vec<Case>> {
    match name {
        "kong8" => Ok([
            CaseKind::NoPlugins,
            CaseKind::RateLimiting,
            CaseKind::RlKeyAuth,
            CaseKind::RlBasicAuth,
        ]
        .into_iter()
        .flat_map(|k| [Case::new(k, Some(1), None), Case::new(k, Some(100), None)])
        .collect()),
        "metrics" => Ok(
            [CaseKind::NoPlugins, CaseKind::Prometheus, CaseKind::HttpLog]
                .into_iter()
                .flat_map(|k| [Case::new(k, Some(1), None), Case::new(k, Some(100), None)])
                .collect(),
        ),
        other => bail!("unknown suite `{other}` (known: kong8, metrics)"),
    }
}
