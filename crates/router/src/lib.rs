//! Kong's `traditional_compatible` router as a pure library: request parts in, best route out.
//!
//! [`Router::build`] compiles route specs once per config snapshot. Each path of a route becomes one
//! *candidate*; candidates are sorted once by Kong's priority rules ([`priority`]), so the best match is the
//! matching candidate with the lowest rank. Matching avoids scanning every route: plain prefix paths are
//! indexed by their text in a hash map probed once per distinct prefix length, and only candidates without a
//! prefix path (regex paths, host/header/method-only routes) are scanned — in rank order, stopping at the first
//! hit or as soon as nothing better than the best prefix hit can follow. Matching allocates nothing unless a
//! regex route with captures matches or the path has escapes of non-ASCII bytes ([`path`]: decoded as Kong
//! does; a path that is then not UTF-8 matches nothing).
//!
//! A config change rebuilds the router, but not every route: [`Router::build_from`] takes the compiled
//! routes of an earlier router for the routes the caller knows are unchanged ([`Router::compiled`]), and
//! compiles only the others; the ranking and the indexes above are patched from the earlier router's
//! ([`index`]: no prefix hashed again, no regex compiled again unless the set of regex paths changed).
//!
//! Protocols (http vs https) are not matched here: Kong matches the route, then the proxy answers 426 when an
//! https-only route is hit over plain http.

use std::sync::Arc;

mod host;
mod index;
mod matcher;
mod path;
mod priority;
mod routes;
pub mod stream;
#[cfg(test)]
mod tests;

pub use host::bare_host;
use index::Indexes;
pub use matcher::RequestParts;
use matcher::{CompiledRoute, Input};
use routes::{Routes, Slot};

/// One route as the router sees it, built from the model by the proxy.
#[derive(Debug, Clone, Default)]
pub struct RouteSpec {
    /// The caller's index, returned in [`Match::id`].
    pub id: usize,
    /// Upper-case methods; empty = any.
    pub methods: Vec<String>,
    /// `example.com`, `example.com:8080`, `*.example.com`, `example.*`; empty = any.
    pub hosts: Vec<String>,
    /// `/prefix` or `~/regex`; empty = any.
    pub paths: Vec<String>,
    /// Header name → accepted values (`~*re` = case-insensitive regex, else case-insensitive text). The name
    /// is matched as Kong does: case-insensitively, with `_` and `-` alike.
    pub headers: Vec<(String, Vec<String>)>,
    /// Accepted TLS server names (`*.example.com` and `example.*` too); empty = any.
    pub snis: Vec<String>,
    pub regex_priority: i64,
    /// The route's id (`Uuid::as_u128`): between routes of equal priority the larger id wins, as in Kong's
    /// matching engine (creation time plays no part in `traditional_compatible`).
    pub uuid: u128,
}

/// A route compiled by a [`Router`], to be reused by the next one ([`Router::build_from`] after that
/// router) when the caller's route did not change: its position in the router it came from, which lets
/// the build keep its ranking instead of sorting every route again, and share the route without taking a
/// count on it.
#[derive(Clone, Copy)]
pub struct Compiled {
    position: u32,
}

/// One route for [`Router::build_from`]: to compile, or compiled by the earlier router.
pub enum RouteInput {
    /// Boxed: most inputs of a build after an earlier router are `Compiled`, and a list of 10,000 inputs
    /// as large as a spec was most of what such a build copied.
    Spec(Box<RouteSpec>),
    /// The caller's index (as [`RouteSpec::id`]) and the route the earlier router compiled from an
    /// equal spec.
    Compiled(usize, Compiled),
}

/// A route that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    pub route: usize,
    pub message: String,
}

/// The part of the request path a route matched: what `strip_path` removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchedPath {
    /// Byte length of the matched prefix (or of the whole regex match) at the start of
    /// [`RequestParts::path`] (escapes counted as sent, though the match ran on the decoded path).
    pub len: usize,
    pub regex: bool,
}

/// Regex path captures, by index (0 = whole match) and by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captures {
    pub unnamed: Vec<Option<String>>,
    pub named: Vec<(String, String)>,
}

/// The best route for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub id: usize,
    /// None when the route has no paths.
    pub matched_path: Option<MatchedPath>,
    /// Regex paths only.
    pub captures: Option<Captures>,
}

/// The compiled, immutable router of one config snapshot.
pub struct Router {
    routes: Routes,
    /// The caller's index of each route (as given; ascending when the caller gave them so).
    ids: Vec<usize>,
    /// (route index, path index or None) in rank order: index = rank.
    ranking: priority::Ranking,
    /// Prefix map, prefix lengths, scanned candidates and regex set ([`index`]).
    index: Indexes,
}

impl Router {
    /// Compiles the routes; every invalid regex is reported.
    pub fn build(specs: Vec<RouteSpec>) -> Result<Router, Vec<BuildError>> {
        Router::build_from(
            specs
                .into_iter()
                .map(|s| RouteInput::Spec(Box::new(s)))
                .collect(),
            None,
        )
    }

    /// Builds a router from routes to compile and routes `previous` compiled; only the former are
    /// compiled. The regex set of `previous` is reused when the regex paths
    /// are the same. Every invalid regex is reported.
    pub fn build_from(
        inputs: Vec<RouteInput>,
        previous: Option<&Router>,
    ) -> Result<Router, Vec<BuildError>> {
        let mut errors = Vec::new();
        let mut slots = Vec::with_capacity(inputs.len());
        let mut ids = Vec::with_capacity(inputs.len());
        for input in inputs {
            match input {
                RouteInput::Compiled(id, compiled) => {
                    let kept =
                        previous.is_some_and(|p| (compiled.position as usize) < p.routes.len());
                    if !kept {
                        errors.push(BuildError {
                            route: id,
                            message: "a compiled route that the earlier router does not have"
                                .into(),
                        });
                        continue;
                    }
                    slots.push(Slot::Kept(compiled.position));
                    ids.push(id);
                }
                RouteInput::Spec(spec) => match CompiledRoute::compile(&spec) {
                    Ok(r) => {
                        slots.push(Slot::New(Arc::new(r)));
                        ids.push(spec.id);
                    }
                    Err(e) => errors.extend(e.into_iter().map(|message| BuildError {
                        route: spec.id,
                        message,
                    })),
                },
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let routes = Routes::build(&slots, previous.map(|p| &p.routes));
        // Each route's position in `previous`, when it was compiled there.
        let from: Vec<Option<u32>> = slots.iter().map(Slot::kept).collect();
        let (ranking, moves) = match previous {
            Some(p) => priority::Ranking::after(&routes, &from, &p.ranking),
            None => (priority::Ranking::of(&routes), None),
        };
        let ranked = index::Ranked {
            routes: &routes,
            candidates: &ranking.candidates,
        };
        let index = match (previous, moves) {
            (Some(p), Some(moves)) => Indexes::patch(&ranked, &p.index, &moves),
            (p, _) => Indexes::build(&ranked, p.map(|p| &p.index)),
        }
        .map_err(|e| vec![e])?;
        Ok(Router {
            routes,
            ids,
            ranking,
            index,
        })
    }

    /// The compiled route the caller gave index `id`, for [`Router::build_from`]; None when there is
    /// none (or the indexes were not given in ascending order).
    pub fn compiled(&self, id: usize) -> Option<Compiled> {
        // Usually every route of the caller is in the router, and the index is the position.
        let at = match self.ids.get(id) {
            Some(&at_id) if at_id == id => id,
            _ => self.ids.binary_search(&id).ok()?,
        };
        Some(Compiled {
            position: at as u32,
        })
    }

    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.len() == 0
    }

    /// The best route for the request, by Kong's priority rules.
    pub fn find(&self, req: &RequestParts<'_>) -> Option<Match> {
        let path = path::decode(req.path).ok()?;
        self.find_in(Input::new(req, &path))
    }

    fn find_in(&self, input: Input<'_>) -> Option<Match> {
        let mut best: Option<(u32, Match)> = None;
        let path = input.path.as_bytes();
        for &(len, _) in &self.index.prefix_lengths {
            if len > path.len() {
                break;
            }
            let Some(prefix) = input.path.get(..len) else {
                continue;
            };
            let Some(ranks) = self.index.prefixes.get(&index::PrefixKey::of(prefix)) else {
                continue;
            };
            for &rank in ranks.as_slice() {
                if best.as_ref().is_some_and(|(b, _)| rank >= *b) {
                    break;
                }
                if let Some(m) = self.try_candidate(rank, &input) {
                    best = Some((rank, m));
                    break;
                }
            }
        }
        // Which regex paths match, computed once and only when a regex candidate is reached.
        let mut regex_hits: Option<Option<regex::SetMatches>> = None;
        for &(rank, slot) in &self.index.scanned {
            if best.as_ref().is_some_and(|(b, _)| rank >= *b) {
                break;
            }
            if let Some(slot) = slot {
                let hits = regex_hits.get_or_insert_with(|| {
                    let set = &self.index.regex_set;
                    set.is_match(input.path).then(|| set.matches(input.path))
                });
                if !hits.as_ref().is_some_and(|h| h.matched(slot)) {
                    continue;
                }
            }
            if let Some(m) = self.try_candidate(rank, &input) {
                best = Some((rank, m));
                break;
            }
        }
        best.map(|(_, m)| m)
    }

    #[inline]
    fn try_candidate(&self, rank: u32, input: &Input<'_>) -> Option<Match> {
        let (route_index, path_index) = self.ranking.candidates[rank as usize];
        let route = self.routes.get(route_index as usize);
        if !route.matches_non_path(input) {
            return None;
        }
        let (matched_path, captures) = match path_index {
            None => (None, None),
            Some(p) => {
                let (len, captures) = route.paths[p as usize].matches(input.path)?;
                let len = if input.decoded {
                    path::encoded_len(input.req.path, len)
                } else {
                    len
                };
                (
                    Some(MatchedPath {
                        len,
                        regex: captures.is_some(),
                    }),
                    captures,
                )
            }
        };
        Some(Match {
            id: self.ids[route_index as usize],
            matched_path,
            captures,
        })
    }
}
