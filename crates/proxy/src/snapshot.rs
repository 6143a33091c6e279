//! A config compiled for serving: router, per-route facts, balancers and plugin chains. Immutable; a reload
//! builds a new one and publishes it with one `ArcSwap::store`.
//!
//! A reload compiles against the live snapshot ([`Snapshot::compile_after`]): each route equal to one in
//! the live config keeps its compiled router route, and, when the services are the live ones, its
//! per-route facts ([`RouteInfo`]) and whether it is routed, so a one-route change on a 10,000-route
//! config compiles one route and patches the router's indexes ([`reuse`]).

mod certs;
mod reuse;
mod upstreams;

use crate::metrics::RouteMeter;
pub use reuse::RouteIds;
use reuse::Twin;
use sluice_model::{Config, Route, Service};
use sluice_plugins::{CompiledPlugins, Registry};
use sluice_router::{RouteInput, RouteSpec, Router};
use sluice_upstream::balancer::{Balancer, Peer};
use sluice_upstream::health::Checks;
use sluice_upstream::tls::UpstreamTls;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub(crate) use upstreams::Checked;
pub use upstreams::Health;
pub(crate) use upstreams::Upstreams;

/// The live snapshot handle shared by the workers and the loader.
pub type SharedSnapshot = Arc<arc_swap::ArcSwap<Snapshot>>;

/// Everything a request needs, compiled once per config.
pub struct Snapshot {
    config: Arc<Config>,
    pub(crate) router: Router,
    /// The stream routes (`tcp`, `tls`, `udp`, `tls_passthrough`), which the HTTP router never sees.
    pub(crate) streams: crate::stream::Streams,
    pub(crate) routes: Vec<RouteInfo>,
    pub(crate) services: Vec<ServiceInfo>,
    pub(crate) upstreams: Upstreams,
    pub(crate) plugins: CompiledPlugins,
    /// Certificates by SNI for the `ssl` listeners.
    pub(crate) certs: sluice_tls::CertStore,
    /// Consumers' metric slots, filled when some prometheus instance counts per consumer.
    pub(crate) consumer_slots: rustc_hash::FxHashMap<uuid::Uuid, u32>,
    compile_duration: Duration,
}

/// Per-route facts the request path reads (indexed like `config.routes`); an unchanged route's are
/// cloned into the next snapshot ([`reuse`]).
#[derive(Clone)]
pub(crate) struct RouteInfo {
    /// `protocols` has https but not http: plain-http requests get 426 or a redirect.
    pub https_only: bool,
    pub strip_path: bool,
    pub preserve_host: bool,
    pub path_handling_v1: bool,
    pub https_redirect_status: u16,
    /// Read a request body whole before choosing an upstream (Kong's `request_buffering`).
    pub request_buffering: bool,
    /// Read a response body ahead of the client (Kong's `response_buffering`).
    pub response_buffering: bool,
    /// Index into `config.services`.
    pub service: Option<usize>,
    /// Set when a prometheus instance applies to the route.
    pub metrics: Option<crate::metrics::RouteMeter>,
    /// Set when the route or its service speaks gRPC.
    pub grpc: Option<crate::grpc::Grpc>,
}

/// Per-service facts (indexed like `config.services`).
pub(crate) struct ServiceInfo {
    pub path: Option<String>,
    /// Shared by the services of one upstream.
    pub balancer: Arc<Balancer>,
    /// The upstream's health checks (all off for a service without an upstream).
    pub checks: Arc<Checks>,
    pub retries: u32,
    pub connect_timeout: Duration,
    pub write_timeout: Duration,
    pub read_timeout: Duration,
    /// The upstream speaks TLS (`https`, `grpcs`, `tls`, `wss`).
    pub tls: Option<UpstreamTls>,
}

/// Why a validated config could not be compiled: one message per problem.
#[derive(Debug, Clone)]
pub struct CompileError(pub Vec<String>);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl std::error::Error for CompileError {}

impl Snapshot {
    /// The snapshot before any config: no routes, so every request gets Kong's 404.
    pub fn empty() -> Snapshot {
        Snapshot {
            config: Arc::new(Config::default()),
            router: Router::build(Vec::new())
                .unwrap_or_else(|_| unreachable!("an empty router always builds")),
            streams: Default::default(),
            routes: Vec::new(),
            services: Vec::new(),
            upstreams: Upstreams::compile(&Config::default()),
            plugins: CompiledPlugins::empty(),
            certs: Default::default(),
            consumer_slots: Default::default(),
            compile_duration: Duration::ZERO,
        }
    }

    /// Compiles a validated config: the router (routes of disabled services left out, as Kong does),
    /// balancers, and plugin chains. Every problem is reported, not just the first.
    pub fn compile(config: Arc<Config>, registry: &Registry) -> Result<Snapshot, CompileError> {
        Snapshot::compile_after(config, registry, None)
    }

    /// [`Snapshot::compile`], reusing what `previous` (the live snapshot) compiled for the routes that
    /// did not change (each route compared with the live one of its id).
    pub fn compile_after(
        config: Arc<Config>,
        registry: &Registry,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, CompileError> {
        let reuse = reuse::Reuse::new(&config, previous, None);
        Snapshot::compile_reusing(config, registry, previous, reuse)
    }

    /// [`Snapshot::compile_after`] for a config made from `previous`'s by patching it: every route whose
    /// id is not in `changed_routes` is the live route of that id, so it takes its compiled form without
    /// being compared; only the named ones are compared (a DB-mode or hybrid change of one entity on a
    /// large config).
    pub fn compile_patched(
        config: Arc<Config>,
        registry: &Registry,
        previous: &Snapshot,
        changed_routes: &RouteIds,
    ) -> Result<Snapshot, CompileError> {
        Snapshot::compile_patched_at(config, registry, previous, changed_routes, None)
    }

    /// [`Snapshot::compile_patched`] where, with `replaced`, the patch replaced the named routes at
    /// these indexes (ascending) and added or removed none: every other index holds the live route of
    /// that index, which is then taken without reading either route.
    pub fn compile_patched_at(
        config: Arc<Config>,
        registry: &Registry,
        previous: &Snapshot,
        changed_routes: &RouteIds,
        replaced: Option<&[usize]>,
    ) -> Result<Snapshot, CompileError> {
        let reuse = reuse::Reuse::new(&config, Some(previous), Some((changed_routes, replaced)));
        Snapshot::compile_reusing(config, registry, Some(previous), reuse)
    }

    fn compile_reusing(
        config: Arc<Config>,
        registry: &Registry,
        previous: Option<&Snapshot>,
        mut reused: reuse::Reuse<'_>,
    ) -> Result<Snapshot, CompileError> {
        let started = Instant::now();
        let by_id: rustc_hash::FxHashMap<uuid::Uuid, usize> = config
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id, i))
            .collect();
        let service_index = |r: &Route| r.service.and_then(|s| by_id.get(&s.id).copied());
        let routable = |r: &Route| {
            service_index(r).is_none_or(|s| config.services[s].enabled)
                && !crate::stream::is_http_less(r)
        };
        let twins: Vec<Twin> = (config.routes.iter().enumerate())
            .map(|(i, r)| reused.twin(i, r))
            .collect();
        let mut inputs: Vec<RouteInput> = Vec::with_capacity(config.routes.len());
        for ((i, r), twin) in config.routes.iter().enumerate().zip(&twins) {
            let input = match *twin {
                // Routed now exactly when it was: same route, same services.
                Twin::Whole(at) => reused.compiled(at).map(|c| RouteInput::Compiled(i, c)),
                _ if !routable(r) => None,
                Twin::Route(at) => match reused.compiled(at) {
                    Some(c) => Some(RouteInput::Compiled(i, c)),
                    None => Some(RouteInput::Spec(Box::new(route_spec(i, r)))),
                },
                Twin::None => Some(RouteInput::Spec(Box::new(route_spec(i, r)))),
            };
            inputs.extend(input);
        }
        let mut errors = Vec::new();
        let router = Router::build_from(inputs, previous.map(|p| &p.router)).map_err(|errs| {
            errs.into_iter()
                .map(|e| match config.routes.get(e.route) {
                    Some(r) => format!("route {}: {}", r.id, e.message),
                    None => e.message,
                })
                .collect::<Vec<_>>()
        });
        let plugins = registry
            .compile(&config)
            .map_err(|errs| errs.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        let mut upstreams = Upstreams::compile(&config);
        let services: Vec<ServiceInfo> = config
            .services
            .iter()
            .filter_map(|s| {
                service_info(&config, s, &mut upstreams)
                    .map_err(|e| errors.push(e))
                    .ok()
            })
            .collect();
        let certs = certs::cert_store(&config).map_err(|e| errors.extend(e));
        let streams = match stream_free(&config, previous, &twins) {
            true => Default::default(),
            false => crate::stream::Streams::compile(&config, plugins.as_ref().ok(), service_index)
                .map_err(|e| errors.extend(e))
                .unwrap_or_default(),
        };
        let metered = plugins.as_ref().ok();
        let routes: Vec<RouteInfo> = (config.routes.iter().enumerate().zip(&twins))
            .map(|((i, r), twin)| {
                let flags = metered.and_then(|p| p.route_metrics(i));
                let live = match *twin {
                    Twin::Whole(at) => reused.info(at, flags),
                    _ => None,
                };
                live.unwrap_or_else(|| route_info(&config, r, flags, service_index(r)))
            })
            .collect();
        let (router, plugins, certs) = match (router, plugins, certs) {
            (Ok(r), Ok(p), Ok(c)) if errors.is_empty() => (r, p, c),
            (r, p, _) => {
                errors.extend(r.err().into_iter().flatten());
                errors.extend(p.err().into_iter().flatten());
                return Err(CompileError(errors));
            }
        };
        let per_consumer = routes
            .iter()
            .filter_map(|r: &RouteInfo| r.metrics.as_ref())
            .any(RouteMeter::per_consumer);
        let consumer_slots = match per_consumer {
            true => crate::metrics::consumer_slots(&config),
            false => Default::default(),
        };
        Ok(Snapshot {
            consumer_slots,
            config,
            router,
            streams,
            routes,
            services,
            upstreams,
            plugins,
            certs,
            compile_duration: started.elapsed(),
        })
    }

    /// The health of each target (`host:port`) of the upstream named `upstream`, for the Admin API; None
    /// when the snapshot has no such upstream.
    pub fn upstream_health(&self, upstream: &str) -> Option<Vec<(String, Health)>> {
        self.upstreams.health(upstream)
    }

    /// Whether the upstream named `upstream` would pick a target now (Kong's balancer health).
    pub fn upstream_available(&self, upstream: &str) -> bool {
        self.upstreams.available(upstream)
    }

    /// Marks a target healthy or unhealthy by hand (Admin API); the state outlives this snapshot like any
    /// health. False when the upstream or target does not exist.
    pub fn set_target_health(&self, upstream: &str, target: &str, healthy: bool) -> bool {
        self.upstreams.set_health(upstream, target, healthy)
    }

    /// The config this snapshot serves.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// Kong's `configuration_hash` of the config this snapshot serves.
    pub fn hash(&self) -> &str {
        self.config.hash()
    }

    /// How long [`Snapshot::compile`] took (router + plugin chains + balancers).
    pub fn compile_duration(&self) -> Duration {
        self.compile_duration
    }
}

#[cfg(test)]
mod tests;

/// Whether `config` has no stream route to compile, known without reading every route's protocols (a
/// pass over 10,000 routes on each change): the live snapshot had none, and each route that is not a
/// whole twin of a live one (same route, same services: routed exactly as before) is no stream route.
fn stream_free(config: &Config, previous: Option<&Snapshot>, twins: &[Twin]) -> bool {
    previous.is_some_and(|p| p.streams.routes.is_empty())
        && (config.routes.iter().zip(twins))
            .all(|(r, twin)| matches!(twin, Twin::Whole(_)) || !crate::stream::is_stream(r))
}

/// The facts of route `r` (`service`: its index in `config.services`; `flags`: the prometheus instance
/// that applies to it).
fn route_info(
    config: &Config,
    r: &Route,
    flags: Option<sluice_metrics::Flags>,
    service: Option<usize>,
) -> RouteInfo {
    RouteInfo {
        metrics: RouteMeter::new(config, r, flags),
        https_only: r.protocols.iter().any(|p| p == "https")
            && !r.protocols.iter().any(|p| p == "http"),
        strip_path: r.strip_path,
        preserve_host: r.preserve_host,
        path_handling_v1: r.path_handling == "v1",
        https_redirect_status: r.https_redirect_status_code,
        request_buffering: r.request_buffering,
        response_buffering: r.response_buffering,
        service,
        grpc: crate::grpc::of(r, service.map(|s| &config.services[s])),
    }
}

fn route_spec(index: usize, r: &Route) -> RouteSpec {
    RouteSpec {
        id: index,
        methods: r.methods.clone().unwrap_or_default(),
        hosts: r.hosts.clone().unwrap_or_default(),
        paths: r.paths.clone().unwrap_or_default(),
        headers: r
            .headers
            .clone()
            .map(|h| h.into_iter().collect())
            .unwrap_or_default(),
        snis: r.snis.clone().unwrap_or_default(),
        regex_priority: r.regex_priority,
        uuid: r.id.as_u128(),
    }
}

/// `host:port`, `[v6]:port`, or a host alone (Kong's default target port, 8000).
fn split_target(target: &str) -> Option<(&str, u16)> {
    match target.rsplit_once(':') {
        Some((host, port))
            if !port.contains(']') && (host.starts_with('[') || !host.contains(':')) =>
        {
            Some((host, port.parse().ok()?))
        }
        Some(_) if !target.starts_with('[') => None,
        _ => Some((target, 8000)),
    }
}

/// The targets of a service: its upstream's (when the host names one) or the host itself.
fn service_info(
    config: &Config,
    s: &Service,
    upstreams: &mut Upstreams,
) -> Result<ServiceInfo, String> {
    let default_port = match s.protocol.as_str() {
        "https" | "grpcs" | "wss" | "tls" => 443,
        _ => 80,
    };
    let (balancer, checks) = match upstreams.for_service(config, &s.host, default_port) {
        Some(found) => found,
        None => {
            let peer = Peer::new(&s.host, s.port, &s.host, default_port);
            (Arc::new(Balancer::single(peer)), Arc::default())
        }
    };
    Ok(ServiceInfo {
        path: s.path.clone(),
        balancer,
        checks,
        retries: s.retries,
        connect_timeout: Duration::from_millis(s.connect_timeout),
        write_timeout: Duration::from_millis(s.write_timeout),
        read_timeout: Duration::from_millis(s.read_timeout),
        tls: sluice_upstream::tls::upstream_tls(config, s)?,
    })
}
