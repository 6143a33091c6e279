//! Kong's route priority as one sort key, so precedence is a single comparison.
//!
//! Best first: more kinds of fields matched; plain hosts over wildcard hosts; more headers; regex paths over
//! prefix paths, regexes by `regex_priority` (higher first); prefixes by length (longer first); older routes.
//! A route with several paths yields one candidate per path, each ranked on its own.

use crate::matcher::{CompiledRoute, PathMatcher};
use std::cmp::Reverse;

/// Candidates `(route index, path index)` sorted best first.
pub(crate) fn ranked(routes: &[CompiledRoute]) -> Vec<(u32, Option<u32>)> {
    let mut keyed = Vec::new();
    for (ri, route) in routes.iter().enumerate() {
        let base = (
            Reverse(route.field_count()),
            route.has_wildcard_host(),
            Reverse(route.headers.len()),
        );
        if route.paths.is_empty() {
            keyed.push((
                (
                    base,
                    2u8,
                    Reverse(0i64),
                    Reverse(0usize),
                    route.created_order,
                ),
                (ri as u32, None),
            ));
        }
        for (pi, path) in route.paths.iter().enumerate() {
            let (kind, regex_priority, len) = match path {
                PathMatcher::Regex(_) => (0u8, route.regex_priority, 0),
                PathMatcher::Prefix(p) => (1u8, 0, p.len()),
            };
            keyed.push((
                (
                    base,
                    kind,
                    Reverse(regex_priority),
                    Reverse(len),
                    route.created_order,
                ),
                (ri as u32, Some(pi as u32)),
            ));
        }
    }
    keyed.sort_by_key(|k| k.0);
    keyed.into_iter().map(|(_, c)| c).collect()
}
