//! The router's indexes over its ranked candidates, made when a router is built: plain prefixes by their
//! text, the distinct prefix lengths, the candidates to scan (regex paths, routes without paths) and the
//! regex set over every regex path.
//!
//! A build after an earlier router, where most routes are the earlier router's ([`Moves`]: what became of
//! each earlier rank), patches that router's indexes instead of making them again: the earlier prefix map
//! is copied (no text hashed again), its ranks renumbered, and only the new routes' candidates are added.
//! The result is what a fresh build gives (`tests::a_ranking_kept_across_builds_is_the_fresh_ranking`).
//!
//! The prefix map is keyed by each prefix's length and hash ([`PrefixKey`]), not by its text: copying
//! and freeing a map keyed by `Arc<str>` touched every prefix's allocation (its count), ~10,000 cache
//! misses each way on every change of a 10,000-route config, a fifth of a data plane's apply. A copy is
//! now one pass over the table itself.

use crate::matcher::PathMatcher;
use crate::priority::Moves;
use crate::routes::Routes;
use crate::BuildError;
use rustc_hash::FxBuildHasher;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

/// A plain prefix as the prefix map keys it: its length and its FxHash. Two prefixes of one length may
/// share a key (a collision): their candidates then share the entry, and each candidate's own path match
/// ([`crate::Router`]'s `try_candidate`, which every candidate goes through) tells them apart.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct PrefixKey {
    len: u32,
    hash: u64,
}

impl PrefixKey {
    #[inline]
    pub fn of(prefix: &str) -> PrefixKey {
        PrefixKey {
            len: prefix.len() as u32,
            hash: text_hash(prefix),
        }
    }

    fn len(self) -> usize {
        self.len as usize
    }
}

impl Hash for PrefixKey {
    /// The text's hash alone: the length is in it already.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

#[cfg(not(test))]
#[inline]
fn text_hash(prefix: &str) -> u64 {
    FxBuildHasher.hash_one(prefix)
}

/// In tests, every prefix of a length can be made to collide ([`collide`]).
#[cfg(test)]
fn text_hash(prefix: &str) -> u64 {
    match COLLIDE.get() {
        true => 0,
        false => FxBuildHasher.hash_one(prefix),
    }
}

#[cfg(test)]
thread_local! {
    static COLLIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes every two prefixes of one length share a key on this thread (for tests of collisions).
#[cfg(test)]
pub(crate) fn collide(on: bool) {
    COLLIDE.set(on);
}

/// What [`Indexes`] are built from: the routes and their candidates in rank order.
pub(crate) struct Ranked<'a> {
    pub routes: &'a Routes,
    pub candidates: &'a [(u32, Option<u32>)],
}

impl Ranked<'_> {
    /// The path of the candidate at `rank` (None: a route without paths).
    fn path(&self, rank: u32) -> Option<&PathMatcher> {
        let (route, path) = self.candidates[rank as usize];
        path.map(|p| &self.routes.get(route as usize).paths[p as usize])
    }
}

/// The ranks of the candidates of one prefix: nearly always one, kept without an allocation of its own.
#[derive(Clone, Debug)]
pub(crate) enum Ranks {
    One(u32),
    Many(Vec<u32>),
}

impl Ranks {
    /// Adds `rank`, keeping the ranks ascending.
    fn insert(&mut self, rank: u32) {
        match self {
            Ranks::One(first) => {
                *self = Ranks::Many(match rank > *first {
                    true => vec![*first, rank],
                    false => vec![rank, *first],
                })
            }
            Ranks::Many(ranks) => {
                let at = ranks.partition_point(|r| *r < rank);
                ranks.insert(at, rank);
            }
        }
    }

    /// Renumbers the ranks with `kept` (earlier rank → rank now, `u32::MAX`: gone) and drops the gone
    /// ones; false when none is left.
    fn renumber(&mut self, kept: &[u32]) -> bool {
        match self {
            Ranks::One(rank) => {
                *rank = kept[*rank as usize];
                *rank != u32::MAX
            }
            Ranks::Many(ranks) => {
                ranks.retain_mut(|rank| {
                    *rank = kept[*rank as usize];
                    *rank != u32::MAX
                });
                !ranks.is_empty()
            }
        }
    }

    pub fn as_slice(&self) -> &[u32] {
        match self {
            Ranks::One(rank) => std::slice::from_ref(rank),
            Ranks::Many(ranks) => ranks,
        }
    }
}

/// The indexes of one router (see the module doc).
pub(crate) struct Indexes {
    /// Plain prefix (its key) → ranks of candidates with that prefix, ascending. Hashed with FxHash:
    /// SipHash was a quarter of a match's instructions, and the keys come from the config, so a request
    /// can only look up, never shape the table.
    pub prefixes: HashMap<PrefixKey, Ranks, FxBuildHasher>,
    /// Distinct prefix lengths, ascending, each with how many prefixes have it (for patching).
    pub prefix_lengths: Vec<(usize, u32)>,
    /// Ranks of candidates without a plain prefix path, ascending, with their slot in `regex_set` for regex
    /// paths.
    pub scanned: Vec<(u32, Option<usize>)>,
    /// Every regex path at once: one pass over the path tells which regex candidates can match at all.
    pub regex_set: regex::RegexSet,
    /// The patterns of `regex_set`, in order: a later router with the same ones reuses the set.
    pub patterns: Vec<String>,
}

impl Indexes {
    /// Indexes every candidate; `previous`'s regex set serves when the regex paths are the same.
    pub fn build(ranked: &Ranked<'_>, previous: Option<&Indexes>) -> Result<Indexes, BuildError> {
        let mut prefixes = HashMap::with_capacity_and_hasher(ranked.routes.len(), FxBuildHasher);
        let mut prefix_lengths = Vec::new();
        let mut scanned = Vec::new();
        for rank in 0..ranked.candidates.len() as u32 {
            match ranked.path(rank) {
                Some(PathMatcher::Prefix(p)) => {
                    add_prefix(&mut prefixes, &mut prefix_lengths, p, rank)
                }
                _ => scanned.push(rank),
            }
        }
        Indexes::with_scanned(prefixes, prefix_lengths, scanned, ranked, previous)
    }

    /// The indexes of `ranked`, made from `previous`'s (the earlier router's) and the `moves` between.
    pub fn patch(
        ranked: &Ranked<'_>,
        previous: &Indexes,
        moves: &Moves,
    ) -> Result<Indexes, BuildError> {
        let mut prefixes = previous.prefixes.clone();
        let mut prefix_lengths = previous.prefix_lengths.clone();
        prefixes.retain(|prefix, ranks| {
            let left = ranks.renumber(&moves.kept);
            if !left {
                forget_length(&mut prefix_lengths, prefix.len());
            }
            left
        });
        let kept_scanned = previous
            .scanned
            .iter()
            .map(|(rank, _)| moves.kept[*rank as usize]);
        let mut scanned: Vec<u32> = kept_scanned.filter(|rank| *rank != u32::MAX).collect();
        let mut fresh_scanned = Vec::new();
        for &rank in &moves.fresh {
            match ranked.path(rank) {
                Some(PathMatcher::Prefix(p)) => {
                    add_prefix(&mut prefixes, &mut prefix_lengths, p, rank)
                }
                _ => fresh_scanned.push(rank),
            }
        }
        if !fresh_scanned.is_empty() {
            scanned.extend(fresh_scanned);
            scanned.sort_unstable();
        }
        Indexes::with_scanned(prefixes, prefix_lengths, scanned, ranked, Some(previous))
    }

    /// Completes the indexes with the scanned candidates (ascending ranks): their regex slots and set.
    fn with_scanned(
        prefixes: HashMap<PrefixKey, Ranks, FxBuildHasher>,
        prefix_lengths: Vec<(usize, u32)>,
        scanned: Vec<u32>,
        ranked: &Ranked<'_>,
        previous: Option<&Indexes>,
    ) -> Result<Indexes, BuildError> {
        let mut patterns = Vec::new();
        let scanned = (scanned.into_iter())
            .map(|rank| match ranked.path(rank) {
                Some(PathMatcher::Regex(re)) => {
                    patterns.push(re.as_str().to_string());
                    (rank, Some(patterns.len() - 1))
                }
                _ => (rank, None),
            })
            .collect();
        let regex_set = match previous {
            Some(p) if p.patterns == patterns => p.regex_set.clone(),
            _ => regex::RegexSet::new(&patterns).map_err(|e| BuildError {
                route: usize::MAX,
                message: format!("regex paths do not compile together: {e}"),
            })?,
        };
        Ok(Indexes {
            prefixes,
            prefix_lengths,
            scanned,
            regex_set,
            patterns,
        })
    }
}

/// Adds the candidate at `rank` under its prefix (and the prefix's length when it is new).
fn add_prefix(
    prefixes: &mut HashMap<PrefixKey, Ranks, FxBuildHasher>,
    lengths: &mut Vec<(usize, u32)>,
    prefix: &str,
    rank: u32,
) {
    match prefixes.entry(PrefixKey::of(prefix)) {
        Entry::Occupied(mut e) => e.get_mut().insert(rank),
        Entry::Vacant(e) => {
            e.insert(Ranks::One(rank));
            match lengths.binary_search_by_key(&prefix.len(), |(len, _)| *len) {
                Ok(at) => lengths[at].1 += 1,
                Err(at) => lengths.insert(at, (prefix.len(), 1)),
            }
        }
    }
}

/// A prefix of length `len` is gone.
fn forget_length(lengths: &mut Vec<(usize, u32)>, len: usize) {
    if let Ok(at) = lengths.binary_search_by_key(&len, |(l, _)| *l) {
        lengths[at].1 -= 1;
        if lengths[at].1 == 0 {
            lengths.remove(at);
        }
    }
}
