//! A config compiled for serving: router, per-route facts, balancers and plugin chains. Immutable; a reload
//! builds a new one and publishes it with one `ArcSwap::store`.

use crate::balancer::Balancer;
use sluice_model::Config;
use sluice_plugins::{CompiledPlugins, Registry};
use sluice_router::{RouteSpec, Router};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The live snapshot handle shared by the workers and the loader.
pub type SharedSnapshot = Arc<arc_swap::ArcSwap<Snapshot>>;

/// Everything a request needs, compiled once per config.
pub struct Snapshot {
    config: Arc<Config>,
    pub(crate) router: Router,
    pub(crate) routes: Vec<RouteInfo>,
    pub(crate) services: Vec<ServiceInfo>,
    pub(crate) plugins: CompiledPlugins,
    compile_duration: Duration,
}

/// Per-route facts the request path reads (indexed like `config.routes`).
pub(crate) struct RouteInfo {
    pub accepts_http: bool,
    pub strip_path: bool,
    pub preserve_host: bool,
    pub path_handling_v1: bool,
    pub https_redirect_status: u16,
    pub service: Option<usize>,
}

/// Per-service facts (indexed like `config.services`).
pub(crate) struct ServiceInfo {
    pub path: Option<String>,
    pub balancer: Balancer,
    /// The Host header to send when the route does not preserve the client's.
    pub host_header: Option<String>,
    pub retries: u32,
    pub connect_timeout: Duration,
    pub write_timeout: Duration,
    pub read_timeout: Duration,
    /// `protocol: https`: not supported by this build yet (answers 502 with a log line).
    pub tls: bool,
}

/// Why a validated config could not be compiled.
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
            routes: Vec::new(),
            services: Vec::new(),
            plugins: CompiledPlugins::empty(),
            compile_duration: Duration::ZERO,
        }
    }

    pub fn compile(config: Arc<Config>, registry: &Registry) -> Result<Snapshot, CompileError> {
        let started = Instant::now();
        let specs = config
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| RouteSpec {
                id: i,
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
                created_order: i as u64,
            })
            .collect();
        let mut errors = Vec::new();
        let router = Router::build(specs).map_err(|errs| {
            errs.into_iter()
                .map(|e| format!("route {}: {}", config.routes[e.route].id, e.message))
                .collect::<Vec<_>>()
        });
        let plugins = registry
            .compile(&config)
            .map_err(|errs| errs.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        let services: Vec<ServiceInfo> = config
            .services
            .iter()
            .map(|s| service_info(&config, s))
            .collect();
        let routes = config
            .routes
            .iter()
            .map(|r| RouteInfo {
                accepts_http: r.protocols.iter().any(|p| p == "http"),
                strip_path: r.strip_path,
                preserve_host: r.preserve_host,
                path_handling_v1: r.path_handling == "v1",
                https_redirect_status: r.https_redirect_status_code,
                service: r
                    .service
                    .and_then(|s| config.services.iter().position(|x| x.id == s.id)),
            })
            .collect();
        let (router, plugins) = match (router, plugins) {
            (Ok(r), Ok(p)) => (r, p),
            (r, p) => {
                errors.extend(r.err().into_iter().flatten());
                errors.extend(p.err().into_iter().flatten());
                return Err(CompileError(errors));
            }
        };
        Ok(Snapshot {
            config,
            router,
            routes,
            services,
            plugins,
            compile_duration: started.elapsed(),
        })
    }

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

fn service_info(config: &Config, s: &sluice_model::Service) -> ServiceInfo {
    let upstream = config
        .upstreams
        .iter()
        .find(|u| u.name.eq_ignore_ascii_case(&s.host));
    let (balancer, host_header) = match upstream {
        Some(u) => {
            let targets = config
                .targets
                .iter()
                .filter(|t| t.upstream.id == u.id)
                .filter_map(|t| {
                    let (host, port) = t.target.rsplit_once(':')?;
                    Some((host.to_string(), port.parse().ok()?, t.weight))
                })
                .collect();
            (
                Balancer::new(targets),
                u.host_header.clone().or_else(|| Some(u.name.clone())),
            )
        }
        None => {
            let default_port = if s.protocol == "https" { 443 } else { 80 };
            let host = if s.port == default_port {
                s.host.clone()
            } else {
                format!("{}:{}", s.host, s.port)
            };
            (Balancer::new(vec![(s.host.clone(), s.port, 1)]), Some(host))
        }
    };
    ServiceInfo {
        path: s.path.clone(),
        balancer,
        host_header,
        retries: s.retries,
        connect_timeout: Duration::from_millis(s.connect_timeout),
        write_timeout: Duration::from_millis(s.write_timeout),
        read_timeout: Duration::from_millis(s.read_timeout),
        tls: matches!(s.protocol.as_str(), "https" | "grpcs" | "tls"),
    }
}
