//! Kong's route priority (`traditional_compatible`) as one sort key, so precedence is a single comparison.
//!
//! Kong gives each route a 64-bit priority and its matching engine tries routes by priority, then by route
//! id, both descending. The priority, most significant first: how many kinds of fields the route matches on;
//! "plain hosts only" (the route has hosts and none is a wildcard); the number of headers; regex paths over
//! the rest, regexes by `regex_priority`; prefix length. A route whose paths differ in kind or length is split
//! first, one route per group (all regexes; each prefix length), and each split gets a derived id (UUID v5 of
//! the route id and the group's number), so it ranks and ties on its own. Creation time plays no part.

use crate::matcher::{CompiledRoute, PathMatcher};
use crate::routes::Routes;
use std::ops::Range;

/// Kong's namespace for the ids of split routes.
const SPLIT_NAMESPACE: uuid::Uuid = uuid::uuid!("7f145bf9-0dce-4f91-98eb-debbce4b9f6b");

/// Headers counted for priority at most (Kong's cap).
const MAX_HEADER_COUNT: usize = 255;

/// What a path group contributes to the priority: regex (then `regex_priority`) over prefix by length.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    None,
    Prefix(usize),
    Regex(i64),
}

impl Group {
    /// The group as two integers that order as the group does: its kind, then its value (a regex's
    /// `regex_priority` with the sign bit flipped, so that it orders as an unsigned number).
    fn key(self) -> (u64, u64) {
        match self {
            Group::None => (0, 0),
            Group::Prefix(len) => (1, len as u64),
            Group::Regex(priority) => (2, (priority as u64) ^ (1 << 63)),
        }
    }
}

fn group(path: &PathMatcher, regex_priority: i64) -> Group {
    match path {
        PathMatcher::Regex(_) => Group::Regex(regex_priority),
        PathMatcher::Prefix(p) => Group::Prefix(p.len()),
    }
}

/// A candidate's place in the ranking, packed into integers so that sorting compares words, not nested
/// tuples and enums (a 10,000-route compile sorts ~10,000 of them per change): the priority and the
/// route's (or split's) id, both inverted for "highest first", then the (route, path) index.
type RankKey = (u128, u128, u64);

fn rank_key(route: &CompiledRoute, g: Group, uuid: u128, ri: usize, pi: Option<usize>) -> RankKey {
    let (kind, value) = g.key();
    let priority = u64::from(route.field_count()) << 16
        | u64::from(route.plain_hosts_only()) << 15
        | (route.headers.len().min(MAX_HEADER_COUNT) as u64) << 2
        | kind;
    let index = index(ri as u32, pi.map(|p| p as u32));
    (
        !(u128::from(priority) << 64 | u128::from(value)),
        !uuid,
        index,
    )
}

/// What became of an earlier router's ranks in a build after it ([`Ranking::after`]).
pub(crate) struct Moves {
    /// The rank now of each earlier rank (`u32::MAX`: its route is gone).
    pub kept: Vec<u32>,
    /// The ranks of the candidates of the routes not kept, ascending.
    pub fresh: Vec<u32>,
}

/// Candidates `(route index, path index)` sorted best first, with their keys (for the next build).
pub(crate) struct Ranking {
    pub candidates: Vec<(u32, Option<u32>)>,
    /// Each candidate's key without its index part (which changes with the positions).
    keys: Vec<(u128, u128)>,
    /// No two routes share a key (their ids differ, as a config's do): a later build may then merge
    /// into this ranking instead of sorting ([`Ranking::after`]).
    distinct: bool,
}

impl Ranking {
    /// Ranks every candidate of `routes`.
    pub fn of(routes: &Routes) -> Ranking {
        let (mut keyed, mut groups) = (Vec::with_capacity(routes.len()), Vec::new());
        for (ri, route) in routes.iter().enumerate() {
            keys_of(route, ri, &mut groups, &mut keyed);
        }
        // The paths of one group keep their order (the first that matches is the one reported): ties
        // are broken by (route, path) index, as a stable sort would, without its scratch buffer.
        keyed.sort_unstable();
        Ranking::from_sorted(keyed)
    }

    /// Ranks the candidates of `routes` after `previous`, the ranking of the router that `from`
    /// (each route's position there, when it is a route compiled there) refers to. A route kept from
    /// there keeps its keys, so the kept candidates keep their order (two candidates of different routes
    /// never tie, since route ids are unique, and a route's paths keep their order); only the other
    /// routes' candidates are sorted, and each is put in at the place a binary search of the earlier keys
    /// gives it, so the kept ones are copied in runs, not compared. The [`Moves`] say where the earlier ranks went
    /// (None: ranked from scratch, when two routes share an id).
    pub fn after(
        routes: &Routes,
        from: &[Option<u32>],
        previous: &Ranking,
    ) -> (Ranking, Option<Moves>) {
        if !previous.distinct {
            return (Ranking::of(routes), None);
        }
        // Where each previous route is now (a route has at least one candidate, so there are no more
        // routes than candidates).
        let mut now_at = vec![u32::MAX; previous.keys.len()];
        let (mut fresh, mut groups) = (Vec::new(), Vec::new());
        for (ri, (route, from)) in routes.iter().zip(from).enumerate() {
            match from {
                Some(old) if (*old as usize) < now_at.len() => now_at[*old as usize] = ri as u32,
                _ => keys_of(route, ri, &mut groups, &mut fresh),
            }
        }
        fresh.sort_unstable();
        // The earlier rank each fresh candidate goes before; a tie with a kept candidate or with another
        // fresh route is two routes with one id.
        let kept_route = |rank: usize| now_at[previous.candidates[rank].0 as usize] != u32::MAX;
        let mut before = Vec::with_capacity(fresh.len());
        for (i, f) in fresh.iter().enumerate() {
            let at = previous.keys.partition_point(|k| *k < (f.0, f.1));
            let ties = (at..previous.keys.len())
                .take_while(|r| previous.keys[*r] == (f.0, f.1))
                .any(kept_route);
            let ties_fresh = i > 0
                && (fresh[i - 1].0, fresh[i - 1].1) == (f.0, f.1)
                && fresh[i - 1].2 >> 32 != f.2 >> 32;
            if ties || ties_fresh {
                return (Ranking::of(routes), None);
            }
            before.push(at);
        }
        let mut merged = Ranking::with_capacity(fresh.len() + previous.keys.len());
        let mut moves = Moves {
            kept: vec![u32::MAX; previous.keys.len()],
            fresh: Vec::with_capacity(fresh.len()),
        };
        // The earlier ranks whose route is gone: with the new candidates' places, they end the runs of
        // kept candidates, and each run is copied whole.
        let gone = (previous.candidates.iter().enumerate())
            .filter(|(_, (ri, _))| now_at[*ri as usize] == u32::MAX)
            .map(|(rank, _)| rank);
        let (mut gone, mut fresh) = (gone.peekable(), fresh.into_iter().zip(before).peekable());
        let mut run = 0;
        loop {
            let end = match (fresh.peek(), gone.peek()) {
                (Some((_, at)), Some(g)) => (*at).min(*g),
                (Some((_, at)), None) => *at,
                (None, Some(g)) => *g,
                (None, None) => previous.keys.len(),
            };
            merged.copy_run(previous, &now_at, run..end, &mut moves.kept);
            run = end;
            if let Some((f, _)) = fresh.next_if(|(_, at)| *at == end) {
                moves.fresh.push(merged.next_rank());
                merged.push(f);
            } else if gone.next_if(|g| *g == end).is_some() {
                run = end + 1;
            } else {
                break;
            }
        }
        (merged, Some(moves))
    }

    fn with_capacity(n: usize) -> Ranking {
        Ranking {
            candidates: Vec::with_capacity(n),
            keys: Vec::with_capacity(n),
            distinct: true,
        }
    }

    /// The rank the next candidate pushed takes.
    fn next_rank(&self) -> u32 {
        self.candidates.len() as u32
    }

    /// Appends the candidates of `previous` at the ranks `run`, whose routes are now at `now_at`, and
    /// records their ranks here in `kept`.
    fn copy_run(
        &mut self,
        previous: &Ranking,
        now_at: &[u32],
        run: Range<usize>,
        kept: &mut [u32],
    ) {
        for (kept, rank) in kept[run.clone()].iter_mut().zip(self.next_rank()..) {
            *kept = rank;
        }
        self.keys.extend_from_slice(&previous.keys[run.clone()]);
        let moved = |&(ri, pi): &(u32, Option<u32>)| (now_at[ri as usize], pi);
        self.candidates
            .extend(previous.candidates[run].iter().map(moved));
    }

    /// Appends the candidate of `key`, ranked after the ones before.
    fn push(&mut self, (priority, uuid, index): RankKey) {
        let path = (index as u32).checked_sub(1);
        self.candidates.push(((index >> 32) as u32, path));
        self.keys.push((priority, uuid));
    }

    fn from_sorted(keyed: Vec<RankKey>) -> Ranking {
        let mut ranking = Ranking::with_capacity(keyed.len());
        // Candidates of one route may tie (paths of one group); of two routes, only when they share an id.
        ranking.distinct = (keyed.windows(2))
            .all(|w| (w[0].0, w[0].1) != (w[1].0, w[1].1) || w[0].2 >> 32 == w[1].2 >> 32);
        for key in keyed {
            ranking.push(key);
        }
        ranking
    }
}

/// The (route, path) index part of a key: paths numbered from 1, 0 for a route without paths.
fn index(route: u32, path: Option<u32>) -> u64 {
    u64::from(route) << 32 | path.map_or(0, |p| u64::from(p) + 1)
}

/// The keys of route `ri`'s candidates, pushed onto `keyed` (`groups`: scratch space).
fn keys_of(route: &CompiledRoute, ri: usize, groups: &mut Vec<Group>, keyed: &mut Vec<RankKey>) {
    if route.paths.is_empty() {
        keyed.push(rank_key(route, Group::None, route.uuid, ri, None));
    }
    // Groups in order of first appearance, numbered from 1 as Kong does.
    groups.clear();
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
        keyed.push(rank_key(route, g, uuid, ri, Some(pi)));
    }
}

/// The id Kong gives group `n` of a split route.
pub(crate) fn split_id(route: u128, n: usize) -> u128 {
    let name = format!("{}#{n}", uuid::Uuid::from_u128(route));
    uuid::Uuid::new_v5(&SPLIT_NAMESPACE, name.as_bytes()).as_u128()
}
