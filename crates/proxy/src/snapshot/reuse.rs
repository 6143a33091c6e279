//! What a snapshot compile takes from the live snapshot (run on every reload, on the loader's thread):
//! the compiled router route of each route that is equal, field for field, to a route of the live
//! config. Routes usually keep their place in `config.routes` (a change replaces one in place or
//! appends one), so each is first compared with the live route at its own index; the id → index map of
//! the live config is built only when that misses (a route was deleted or the order changed). A config
//! patched from the live one says which routes changed: the others are taken without a comparison, and
//! only the named ones are compared.

use super::Snapshot;
use sluice_model::Route;
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
    /// The live config's route index by id, built on the first lookup that needs it.
    by_id: Option<HashMap<Uuid, usize>>,
}

impl<'p> Reuse<'p> {
    pub fn new(previous: Option<&'p Snapshot>, changed: Option<&'p RouteIds>) -> Reuse<'p> {
        Reuse {
            previous,
            changed,
            by_id: None,
        }
    }

    /// The compiled router route of the live route equal to `route` (`config.routes[index]` of the new
    /// config); None when there is no such route (new or changed) or it was not in the live router.
    pub fn route(&mut self, index: usize, route: &Route) -> Option<Compiled> {
        let previous = self.previous?;
        let live = &previous.config.routes;
        let at = match live.get(index) {
            Some(r) if r.id == route.id => index,
            _ => *self
                .by_id
                .get_or_insert_with(|| live.iter().enumerate().map(|(i, r)| (r.id, i)).collect())
                .get(&route.id)?,
        };
        // A route the patch names may still be equal (a write that changed nothing the router reads):
        // it is compared, as every route is without a patch.
        let unchanged = self
            .changed
            .is_some_and(|changed| !changed.contains(&route.id))
            || live[at] == *route;
        if !unchanged {
            return None;
        }
        previous.router.compiled(at)
    }
}
