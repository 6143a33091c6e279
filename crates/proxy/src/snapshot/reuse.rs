//! What a snapshot compile takes from the live snapshot (run on every reload, on the loader's thread):
//! for each route equal, field for field, to a route of the live config (its *twin*), the twin's compiled
//! router route, and, when the services are the live ones too, its per-route facts ([`RouteInfo`]:
//! labels, metric series, gRPC facts) and whether it is routed at all, so a one-route change on a
//! 10,000-route config looks again at one route instead of every one.
//!
//! Routes usually keep their place in `config.routes` (a change replaces one in place or appends one),
//! so each is first compared with the live route at its own index; the id → index map of the live config
//! is built only when that misses (a route was deleted or the order changed). A config patched from the
//! live one says which routes changed: the others are taken without a comparison, and only the named
//! ones are compared.

use super::{RouteInfo, Snapshot};
use sluice_model::{Config, Route};
use sluice_router::Compiled;
use std::collections::HashMap;
use uuid::Uuid;

/// Route ids, e.g. the routes a patch changed.
pub type RouteIds = rustc_hash::FxHashSet<Uuid>;

/// The live snapshot's routes, looked up by the next config's routes.
pub(super) struct Reuse<'p> {
    previous: Option<&'p Snapshot>,
    /// The next config is the live one patched, and these are the routes the patch changed.
    changed: Option<&'p RouteIds>,
    /// The patch replaced routes at these indexes only (ascending) and added or removed none.
    replaced: Option<&'p [usize]>,
    /// The live config's route index by id, built on the first lookup that needs it.
    by_id: Option<HashMap<Uuid, usize>>,
    /// The next config's services equal the live config's, in the same order: whatever a route's
    /// compiled facts read of its service is unchanged, and so is its service's index.
    same_services: bool,
}

/// What the live snapshot holds for one route of the next config.
#[derive(Clone, Copy)]
pub(super) enum Twin {
    /// No equal live route: compile it.
    None,
    /// An equal live route at this index of the live config, with different services around it: its
    /// compiled router route serves, the rest is compiled again.
    Route(usize),
    /// An equal live route at this index, with the same services: everything it compiled serves,
    /// including whether it is routed.
    Whole(usize),
}

impl<'p> Reuse<'p> {
    /// For compiling `config` after `previous`.
    pub fn new(
        config: &Config,
        previous: Option<&'p Snapshot>,
        changed: Option<(&'p RouteIds, Option<&'p [usize]>)>,
    ) -> Reuse<'p> {
        let same_count = previous.is_some_and(|p| p.config.routes.len() == config.routes.len());
        Reuse {
            previous,
            changed: changed.map(|(ids, _)| ids),
            replaced: changed.and_then(|(_, at)| at).filter(|_| same_count),
            by_id: None,
            same_services: previous.is_some_and(|p| p.config.services == config.services),
        }
    }

    /// The twin of `route` (`config.routes[index]` of the new config).
    pub fn twin(&mut self, index: usize, route: &Route) -> Twin {
        let Some(previous) = self.previous else {
            return Twin::None;
        };
        // Not one of the routes the patch replaced: the live route of this index, unread.
        if self
            .replaced
            .is_some_and(|at| at.binary_search(&index).is_err())
        {
            return match self.same_services {
                false => Twin::Route(index),
                true => Twin::Whole(index),
            };
        }
        let live = &previous.config.routes;
        let at = match live.get(index) {
            Some(r) if r.id == route.id => index,
            _ => {
                let by_id = self.by_id.get_or_insert_with(|| {
                    live.iter().enumerate().map(|(i, r)| (r.id, i)).collect()
                });
                match by_id.get(&route.id) {
                    Some(at) => *at,
                    None => return Twin::None,
                }
            }
        };
        // A route the patch names may still be equal (a write that changed nothing the router reads):
        // it is compared, as every route is without a patch.
        let unchanged = self
            .changed
            .is_some_and(|changed| !changed.contains(&route.id))
            || live[at] == *route;
        match (unchanged, self.same_services) {
            (false, _) => Twin::None,
            (true, false) => Twin::Route(at),
            (true, true) => Twin::Whole(at),
        }
    }

    /// The live router's compiled form of the twin at `at`; None when the live router left it out.
    pub fn compiled(&self, at: usize) -> Option<Compiled> {
        self.previous?.router.compiled(at)
    }

    /// The live facts of the whole twin at `at`, when they were compiled with the same prometheus
    /// flags (`flags`: what the plugins now give the route).
    pub fn info(&self, at: usize, flags: Option<sluice_metrics::Flags>) -> Option<RouteInfo> {
        let info = self.previous?.routes.get(at)?;
        let live_flags = info.metrics.as_ref().map(|m| m.flags());
        (live_flags == flags).then(|| info.clone())
    }
}
