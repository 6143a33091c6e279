//! The stream part of a snapshot: the stream router and, per stream route, what a session needs (its
//! service, whether its TLS is terminated, its ip-restriction instance, its metrics). Compiled with the rest of the
//! snapshot; a session reads the snapshot it started on to its end.

use crate::metrics::StreamMeter;
use sluice_model::{Config, Route};
use sluice_plugins::builtin::ip_restriction::IpRestriction;
use sluice_plugins::CompiledPlugins;
use sluice_router::stream::{StreamProtocols, StreamRouteSpec, StreamRouter};
use std::net::IpAddr;
use std::sync::Arc;

/// What a session needs of its route (indexed by the stream router's ids).
pub(crate) struct StreamRoute {
    /// Index into `config.routes`.
    pub route: usize,
    /// Index into the snapshot's services; None: the route has no service (the connection is closed).
    pub service: Option<usize>,
    /// The route has `tls`: its TLS is terminated here (else, on an `ssl` listener, passed through).
    pub terminate: bool,
    /// Kong's `preserve_host`: the client's server name is the one sent to a `tls` service.
    pub preserve_host: bool,
    /// The ip-restriction instance that applies (Kong's precedence: route and service, route, service,
    /// global), with the protocols it runs for.
    pub ip_restriction: Option<(StreamProtocols, Arc<IpRestriction>)>,
    /// The prometheus instance's series, when one applies.
    pub meter: Option<StreamMeter>,
}

impl StreamRoute {
    /// ip-restriction's `preread`: whether the client is refused on a connection of `protocol`.
    pub(crate) fn refuses(&self, protocol: StreamProtocols, ip: IpAddr) -> bool {
        self.ip_restriction
            .as_ref()
            .is_some_and(|(on, rule)| on.intersects(protocol) && rule.refuses(ip))
    }
}

/// The stream routes of a snapshot.
#[derive(Default)]
pub(crate) struct Streams {
    pub router: StreamRouter,
    pub routes: Vec<StreamRoute>,
}

/// Whether a route is served by the stream proxy (it lists tcp, tls, udp or tls_passthrough).
pub(crate) fn is_stream(r: &Route) -> bool {
    !StreamProtocols::from_names(&r.protocols).is_empty()
}

/// Whether a route has no protocol the HTTP proxy serves: the HTTP router leaves it out (a stream route has
/// no HTTP matcher, so it would otherwise match every request).
pub(crate) fn is_http_less(r: &Route) -> bool {
    !r.protocols.iter().any(|p| {
        matches!(
            p.as_str(),
            "http" | "https" | "grpc" | "grpcs" | "ws" | "wss"
        )
    })
}

impl Streams {
    /// Compiles the stream routes (those of disabled services left out, as for HTTP routes); `plugins`
    /// is None when the plugins failed to compile (the snapshot is refused anyway).
    pub(crate) fn compile(
        config: &Config,
        plugins: Option<&CompiledPlugins>,
        service_index: impl Fn(&Route) -> Option<usize>,
    ) -> Result<Streams, Vec<String>> {
        let mut specs = Vec::new();
        let mut routes = Vec::new();
        let mut errors = Vec::new();
        for (i, r) in config
            .routes
            .iter()
            .enumerate()
            .filter(|(_, r)| is_stream(r))
        {
            let service = service_index(r);
            if service.is_some_and(|s| !config.services[s].enabled) {
                continue;
            }
            let protocols = StreamProtocols::from_names(&r.protocols);
            let nets = |l: &Option<Vec<sluice_model::CidrPort>>| {
                l.iter().flatten().map(|n| (n.ip.clone(), n.port)).collect()
            };
            specs.push(StreamRouteSpec {
                id: routes.len(),
                protocols,
                sources: nets(&r.sources),
                destinations: nets(&r.destinations),
                snis: r.snis.clone().unwrap_or_default(),
                uuid: r.id.as_u128(),
            });
            let ip_restriction = match ip_restriction(config, r, protocols) {
                Ok(found) => found,
                Err(e) => {
                    errors.push(e);
                    None
                }
            };
            routes.push(StreamRoute {
                route: i,
                service,
                terminate: protocols.intersects(StreamProtocols::TLS),
                preserve_host: r.preserve_host,
                ip_restriction,
                meter: StreamMeter::new(config, r, plugins.and_then(|p| p.stream(Some(i)).metrics)),
            });
        }
        let router = StreamRouter::build(specs).map_err(|errs| {
            errs.into_iter()
                .map(|e| match routes.get(e.route) {
                    Some(r) => format!("route {}: {}", config.routes[r.route].id, e.message),
                    None => e.message,
                })
                .collect::<Vec<_>>()
        });
        match router {
            Ok(router) if errors.is_empty() => Ok(Streams { router, routes }),
            Ok(_) => Err(errors),
            Err(e) => Err(errors.into_iter().chain(e).collect()),
        }
    }
}

/// The most specific enabled ip-restriction instance for the route whose protocols meet the route's.
fn ip_restriction(
    config: &Config,
    r: &Route,
    protocols: StreamProtocols,
) -> Result<Option<(StreamProtocols, Arc<IpRestriction>)>, String> {
    let service = r.service.map(|s| s.id);
    let best = config
        .plugins
        .iter()
        .filter(|p| p.enabled && p.name == "ip-restriction" && p.consumer.is_none())
        .filter(|p| p.route.is_none_or(|x| x.id == r.id))
        .filter(|p| p.service.is_none_or(|x| Some(x.id) == service))
        .filter(|p| StreamProtocols::from_names(&p.protocols).intersects(protocols))
        // Kong's precedence without consumers: route and service, route, service, global.
        .max_by_key(|p| (p.route.is_some(), p.service.is_some()));
    let Some(p) = best else { return Ok(None) };
    let rule = IpRestriction::of(p).map_err(|e| format!("plugin {}: {e}", p.id))?;
    Ok(Some((
        StreamProtocols::from_names(&p.protocols),
        Arc::new(rule),
    )))
}
