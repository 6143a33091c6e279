//! Rehashing only the touched parts gives exactly the full computation's hashes, on both sides of a delta:
//! the CP's (the new config) and the DP's (the old config patched with the delta's changes), each carrying
//! its parts from change to change. Over randomized changes, with deletes, cascades and emptied kinds; and
//! a partial hash that misses is confirmed over the whole config. A DP that checks the CP's digest instead
//! of Kong's hash reaches the same verdicts.

mod timing;
mod world;

use super::*;
use crate::dbnode::spare;
use crate::hybrid::{diff, dp_delta};
use sluice_cluster::delta::Op;
use sluice_cluster::hash::config_hashes;
use std::sync::Arc;
use world::{Rng, World};

fn parse(doc: serde_json::Value) -> Config {
    declarative::parse_value(doc, &sluice_plugins::Registry::builtin()).unwrap()
}

/// What the code before the parts computed: Kong's hashes of the whole export.
fn whole(config: &Config) -> sluice_cluster::hash::ConfigHashes {
    config_hashes(&declarative::export(config))
}

#[test]
fn partial_rehash_equals_the_full_one_over_random_changes() {
    let mut rng = Rng(0x0bad_cafe_1234_5678);
    let mut world = World::new(&mut rng);
    let mut old = parse(world.doc());
    let mut cp_parts = full(&old);
    let mut dp_parts = cp_parts.clone();
    let mut dp_digest = cp_parts.clone();
    assert_eq!(cp_parts.parts().hashes(), whole(&old));
    // How often each case came up: some part left untouched, a delete, a whole group emptied.
    let (mut some_untouched, mut deletes, mut emptied) = (0, 0, 0);
    for round in 0..150 {
        for _ in 0..1 + rng.below(3) {
            world.change(&mut rng);
        }
        let new = parse(world.doc());
        let changes = diff::diff(&old, &new).expect("appends and deletes are deltas");
        let touched = touched(&changes);
        let want = whole(&new);
        deletes += usize::from(changes.iter().any(|c| c.op == Op::Delete));
        let (was, is) = (group_sizes(&old), group_sizes(&new));
        emptied += usize::from((0..5).any(|i| was[i] > 0 && is[i] == 0));
        // CP: the new config.
        cp_parts = partial(&new, &cp_parts, &touched);
        assert_eq!(
            cp_parts.parts().hashes(),
            want,
            "round {round}: CP, {touched:?}"
        );
        // DP: the old config patched with the changes.
        let changes: Vec<_> = changes
            .into_iter()
            .map(|c| dp_delta::entity_change(c).unwrap())
            .collect();
        let (patched, _) = spare::next(None, &Arc::new(old), 0, &changes).unwrap();
        let (parts, how) = verify(&patched, Some(&dp_parts), &touched, &want.config, None).unwrap();
        assert_eq!(
            (&parts, how),
            (&cp_parts, Rehashed::Partial),
            "round {round}: DP"
        );
        assert_eq!(parts, full(&patched));
        dp_parts = parts;
        // DP checking the CP's digest: the same verdict, the same digest, and Kong's parts when asked.
        let digest = cp_parts.digest();
        let (parts, how) = verify(&patched, Some(&dp_digest), &touched, "", Some(&digest)).unwrap();
        assert_eq!(
            (parts.digest(), how),
            (digest, Rehashed::Partial),
            "round {round}: DP, digest"
        );
        assert_eq!(parts.parts(), cp_parts.parts(), "round {round}: DP, digest");
        dp_digest = parts;
        some_untouched += usize::from(!touched.parts.is_empty() && touched.parts != Touched::ALL);
        old = new;
    }
    assert!(
        some_untouched > 50 && deletes > 30 && emptied > 5,
        "rounds that rehash part: {some_untouched}, with deletes: {deletes}, emptying a group: {emptied}"
    );
}

/// The sizes of the five hashed groups.
fn group_sizes(c: &Config) -> [usize; 5] {
    let (r, s, p, u, t) = (&c.routes, &c.services, &c.plugins, &c.upstreams, &c.targets);
    [r.len(), s.len(), p.len(), u.len(), t.len()]
}

#[test]
fn a_partial_miss_is_confirmed_over_the_whole_config() {
    let mut rng = Rng(7);
    let config = parse(World::new(&mut rng).doc());
    let hash = whole(&config).config;
    let routes = Touch {
        parts: ["routes"].into_iter().collect(),
        ..Touch::default()
    };
    // Parts that missed a change in the rest (a kind the change list did not name): the partial hash
    // misses, the whole config's is right.
    let mut stale = full(&config);
    stale.rest = sluice_cluster::EMPTY_CONFIG_HASH.into();
    let digest = full(&config).digest();
    for with in [None, Some(digest.as_str())] {
        assert_eq!(
            verify(&config, Some(&stale), &routes, &hash, with),
            Ok((full(&config), Rehashed::FullAfterMiss))
        );
        assert_eq!(
            verify(&config, None, &routes, &hash, with),
            Ok((full(&config), Rehashed::Full))
        );
    }
    // A route that changed but was not named keeps its stale kept bytes: the partial hash misses too.
    let mut unnamed = config.clone();
    unnamed.routes[0].tags = Some(vec!["unnamed".into()]);
    let (unnamed_hash, unnamed_digest) = (whole(&unnamed).config, full(&unnamed).digest());
    for with in [None, Some(unnamed_digest.as_str())] {
        assert_eq!(
            verify(&unnamed, Some(&full(&config)), &routes, &unnamed_hash, with),
            Ok((full(&unnamed), Rehashed::FullAfterMiss))
        );
    }
    // A real difference: Err carries the hash the config has, whichever was compared first.
    for with in [None, Some("0123")] {
        assert_eq!(
            verify(&config, Some(&full(&config)), &routes, "0123", with),
            Err(hash.clone())
        );
    }
}
