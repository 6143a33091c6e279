//! Kong's route priority (`traditional_compatible`) as one sort key, so precedence is a single comparison.
//!
//! Kong gives each route a 64-bit priority and its matching engine tries routes by priority, then by route
//! id, both descending. The priority, most significant first: how many kinds of fields the route matches on;
//! "plain hosts only" (the route has hosts and none is a wildcard); the number of headers; regex paths over
//! the rest, regexes by `regex_priority`; prefix length. A route whose paths differ in kind or length is split
//! first, one route per group (all regexes; each prefix length), and each split gets a derived id (UUID v5 of
//! the route id and the group's number), so it ranks and ties on its own. Creation time plays no part.

use crate::matcher::{CompiledRoute, PathMatcher};
use std::cmp::Reverse;
use std::sync::Arc;

/// Kong's namespace for the ids of split routes.
const SPLIT_NAMESPACE: uuid::Uuid = uuid::uuid!("7f145bf9-0dce-4f91-98eb-debbce4b9f6b");

/// Headers counted for priority at most (Kong's cap).
const MAX_HEADER_COUNT: usize = 255;

/// What a path group contributes to the priority: regex (then `regex_priority`) over prefix by length.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    None,
    Prefix(usize),
    Regex(i64),
}

fn group(path: &PathMatcher, regex_priority: i64) -> Group {
    match path {
        PathMatcher::Regex(_) => Group::Regex(regex_priority),
        PathMatcher::Prefix(p) => Group::Prefix(p.len()),
    }
}

/// Candidates `(route index, path index)` sorted best first.
pub(crate) fn ranked(routes: &[Arc<CompiledRoute>]) -> Vec<(u32, Option<u32>)> {
    let mut keyed = Vec::with_capacity(routes.len());
    for (ri, route) in routes.iter().enumerate() {
        let base = (
            route.field_count(),
            route.plain_hosts_only(),
            route.headers.len().min(MAX_HEADER_COUNT),
        );
        if route.paths.is_empty() {
            keyed.push((Reverse((base, Group::None, route.uuid)), (ri as u32, None)));
        }
        // Groups in order of first appearance, numbered from 1 as Kong does.
        let mut groups: Vec<Group> = Vec::new();
        for path in &route.paths {
            let g = group(path, route.regex_priority);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        for (pi, path) in route.paths.iter().enumerate() {
            let g = group(path, route.regex_priority);
            let uuid = if groups.len() == 1 {
                route.uuid
            } else {
                let n = groups.iter().position(|x| *x == g).unwrap_or(0) + 1;
                split_id(route.uuid, n)
            };
            keyed.push((Reverse((base, g, uuid)), (ri as u32, Some(pi as u32))));
        }
    }
    // The paths of one group keep their order (the first that matches is the one reported): ties are
    // broken by (route, path) index, as a stable sort would, without its scratch buffer.
    keyed.sort_unstable_by_key(|k| (k.0, k.1));
    keyed.into_iter().map(|(_, c)| c).collect()
}

/// The id Kong gives group `n` of a split route.
pub(crate) fn split_id(route: u128, n: usize) -> u128 {
    let name = format!("{}#{n}", uuid::Uuid::from_u128(route));
    uuid::Uuid::new_v5(&SPLIT_NAMESPACE, name.as_bytes()).as_u128()
}
