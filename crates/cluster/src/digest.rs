//! Sluice's check digest of a config, sent with each delta beside Kong's hash (Kong has no such thing).
//!
//! A DP checks that the config it built from deltas is the CP's. Kong's hash cannot be updated for a
//! change: it is MD5 over the entities in order, folded every 1 MB, so a check must feed every byte after
//! the first changed entity again (~6 MB of MD5, ~35M instructions, for a one-route change early in a
//! 10,000-route config). The digest is built so that a change costs only what it names:
//! - each hashed group (routes, services, plugins, upstreams, targets) is the wrapping sum of a 128-bit
//!   XXH3 of every entity's kept bytes (the same bytes Kong's hash is fed, [`crate::hash::Serialized`]),
//!   so it does not depend on the entities' order and needs no MD5 state;
//! - the rest (consumers, credentials, ...) is Kong's hash of the rest, as the CP computes it anyway;
//! - the config's digest is the XXH3 of the five sums and that hash, as 32 hex digits.
//!
//! What it checks on a DP is what Kong's hash checks there (the kept bytes of untouched entities and the
//! touched ones serialized again from the DP's live config), except the order of entities in the config,
//! which neither routing nor plugins depend on. It guards against a DP's own mistakes, not against a
//! hostile CP (the CP is trusted, and a sum of hashes can be steered).

use xxhash_rust::xxh3::xxh3_128;

/// The digest of one entity's kept bytes.
pub fn item(bytes: &[u8]) -> u128 {
    xxh3_128(bytes)
}

/// A group's digest: the wrapping sum of its entities' ([`item`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupSum(u128);

impl GroupSum {
    pub fn add(&mut self, item: u128) {
        self.0 = self.0.wrapping_add(item);
    }
}

/// The config's digest from its five group sums (in `hash::GROUPS` order) and Kong's hash of the rest.
pub fn config(groups: [GroupSum; 5], rest: &str) -> String {
    let mut bytes = Vec::with_capacity(5 * 16 + rest.len());
    for g in groups {
        bytes.extend_from_slice(&g.0.to_le_bytes());
    }
    bytes.extend_from_slice(rest.as_bytes());
    format!("{:032x}", xxh3_128(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(items: &[&[u8]]) -> GroupSum {
        let mut s = GroupSum::default();
        items.iter().for_each(|i| s.add(item(i)));
        s
    }

    #[test]
    fn a_group_sum_ignores_order_but_not_content() {
        assert_eq!(sum(&[b"a", b"b", b"c"]), sum(&[b"c", b"a", b"b"]));
        assert_ne!(sum(&[b"a", b"b"]), sum(&[b"a", b"c"]));
        assert_ne!(sum(&[b"a", b"b"]), sum(&[b"a", b"b", b"b"]));
    }

    #[test]
    fn the_config_digest_tells_groups_and_rest_apart() {
        let g = |s: &[&[u8]]| sum(s);
        let e = GroupSum::default();
        let one = config([g(&[b"x"]), e, e, e, e], "r");
        assert_eq!(one.len(), 32);
        assert_ne!(one, config([e, g(&[b"x"]), e, e, e], "r"));
        assert_ne!(one, config([g(&[b"x"]), e, e, e, e], "s"));
        assert_eq!(one, config([g(&[b"x"]), e, e, e, e], "r"));
    }
}
