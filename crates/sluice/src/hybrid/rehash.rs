//! Kong's config hash of a changed config, rehashing only what the change touched. The hash is made of six
//! parts (`sluice_cluster::hash::Parts`: routes, services, plugins, upstreams, targets, the rest); the CP
//! ([`super::push`]) and the DP ([`super::dp_delta`]) keep the parts of the live config ([`Hashed`]) with
//! each group's entities serialized ([`groups`]), and for the next config serialize only the entities a
//! delta names: a one-route change on 10,000 routes serializes one route and feeds the other 9,999's kept
//! bytes to MD5. A touched rest (consumers, credentials, certificates, ...) is exported and hashed whole.
//!
//! The result is exactly the full computation's as long as the changes name every entity that differs,
//! which holds on both sides: the CP's diff compares every entity, and a DP's patch changes only the
//! entities the delta names (no cascades; a certificate's inline SNIs, which it rebuilds, are not in the
//! export). The DP still checks the result against the CP's hash, and hashes the whole config before it
//! calls a difference a mismatch ([`verify`]).
//!
//! A DP whose CP sends Sluice's digest with its deltas (`sluice_cluster::digest`) checks that instead: its
//! groups are rebuilt with their digests but without Kong's hash, so a check feeds no MD5 at all (Kong's
//! hash must feed every byte after the first changed entity again: ~6 MB for a change early in 10,000
//! routes).

use rustc_hash::FxHashSet;
use sluice_cluster::delta::Change;
use sluice_cluster::digest;
use sluice_cluster::hash::{Parts, Touched, GROUPS};
use sluice_model::{declarative, Config};
use std::sync::Arc;
use uuid::Uuid;

mod groups;

/// One config's groups, their entities kept serialized for the next config's group hashes, and the hash
/// of the rest. Two are equal when their parts are (the kept bytes are what the parts are made of).
#[derive(Clone)]
pub struct Hashed {
    groups: [Arc<groups::Kept>; 5],
    /// Kong's hash of the rest (every other kind, `_format_version`).
    pub rest: String,
}

impl PartialEq for Hashed {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl std::fmt::Debug for Hashed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.parts().fmt(f)
    }
}

impl Hashed {
    /// Kong's hash parts (a group rebuilt for its digest alone is hashed whole here).
    pub fn parts(&self) -> Parts {
        Parts {
            groups: [0, 1, 2, 3, 4].map(|i| self.groups[i].hash()),
            rest: self.rest.clone(),
        }
    }

    /// Sluice's digest of the config.
    pub fn digest(&self) -> String {
        digest::config([0, 1, 2, 3, 4].map(|i| self.groups[i].sum()), &self.rest)
    }

    /// The heap memory of the kept serialized groups, in bytes.
    pub fn kept_bytes(&self) -> usize {
        self.groups.iter().map(|g| g.heap_size()).sum()
    }
}

/// What a delta's changes touch: the parts, and per group the ids of the entities it names.
#[derive(Debug, Clone, Default)]
pub struct Touch {
    pub parts: Touched,
    /// FxHash: every kept entity of a touched group is looked up here on each check.
    ids: [FxHashSet<Uuid>; 5],
}

/// Every part of `config`, every entity serialized: when nothing is known of the config before (a full
/// push, a DP's first delta after a full sync).
pub fn full(config: &Config) -> Hashed {
    let groups = groups::of(config, None, |_| true, &Default::default(), true);
    with_rest(config, groups, None)
}

/// The parts and entities `changes` touch. A delta never changes `_format_version` (the CP's diff sends
/// the whole config then). An id that is not a UUID names no entity: the entity keeps its bytes, and the
/// DP's check of the whole config catches it ([`verify`]).
pub fn touched(changes: &[Change]) -> Touch {
    let mut touch = Touch::default();
    touch.add(changes);
    touch
}

impl Touch {
    /// Adds what `changes` touch: a run of deltas touches the union of what each touches.
    pub fn add(&mut self, changes: &[Change]) {
        for c in changes {
            self.parts.mark(&c.kind);
            if let (Some(i), Ok(id)) = (GROUPS.iter().position(|g| *g == c.kind), c.id.parse()) {
                self.ids[i].insert(id);
            }
        }
    }
}

/// The parts of `config`, which differs from the config `previous` was computed for only in the
/// entities `touch` names: only those are serialized; a touched rest is exported and hashed whole.
pub fn partial(config: &Config, previous: &Hashed, touch: &Touch) -> Hashed {
    rebuilt(config, previous, touch, true)
}

/// [`partial`], with Kong's hash of the rebuilt groups made only when `marks`.
fn rebuilt(config: &Config, previous: &Hashed, touch: &Touch, marks: bool) -> Hashed {
    if touch.parts.is_empty() {
        return previous.clone();
    }
    let groups = groups::of(
        config,
        Some(&previous.groups),
        |i| touch.parts.group(i),
        &touch.ids,
        marks,
    );
    with_rest(
        config,
        groups,
        Some(&previous.rest).filter(|_| !touch.parts.rest()),
    )
}

/// The kept `groups` with the rest's hash: `previous` when given, else exported and hashed (the other
/// kinds, `_format_version`).
fn with_rest(config: &Config, groups: [Arc<groups::Kept>; 5], previous: Option<&String>) -> Hashed {
    let rest = match previous {
        Some(rest) => rest.clone(),
        None => {
            let rest_only: Touched = ["_format_version"].into_iter().collect();
            Parts::of(&declarative::export_of(config, |k| rest_only.covers(k))).rest
        }
    };
    Hashed { groups, rest }
}

/// How [`verify`] found the hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rehashed {
    /// Only the touched parts.
    Partial,
    /// The whole config: no parts of the config before were known.
    Full,
    /// The whole config, after the partial hash differed from the expected one.
    FullAfterMiss,
}

/// The parts of `config` (the config `base` was computed for, patched with changes that touch
/// `touched`), when its hash is `expected` and, if the CP sent one, its digest `digest` (then only the
/// digest is compared, and Kong's hash of the rebuilt groups is not made). A partial result that differs
/// is never trusted: the whole config is hashed (Kong's hash) before Err (the hash it has) is returned,
/// so a change that was not named costs time, never a needless full sync.
pub fn verify(
    config: &Config,
    base: Option<&Hashed>,
    touch: &Touch,
    expected: &str,
    digest: Option<&str>,
) -> Result<(Hashed, Rehashed), String> {
    let how = match base {
        Some(base) => {
            let parts = rebuilt(config, base, touch, digest.is_none());
            let same = match digest {
                Some(digest) => parts.digest() == digest,
                None => parts.parts().hashes().config == expected,
            };
            if same {
                return Ok((parts, Rehashed::Partial));
            }
            Rehashed::FullAfterMiss
        }
        None => Rehashed::Full,
    };
    let parts = full(config);
    let hash = parts.parts().hashes().config;
    if hash == expected {
        Ok((parts, how))
    } else {
        Err(hash)
    }
}

#[cfg(test)]
mod tests;
