//! Parts: a partial rehash equals the full one over varied changes of config tables (groups changed,
//! emptied, dropped; the rest changed; nothing changed), and the touched bits follow the keys.

use super::*;
use crate::hash::config_hashes;
use serde_json::json;

/// A small deterministic generator (xorshift64), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KEYS: [&str; 9] = [
    "routes",
    "services",
    "plugins",
    "upstreams",
    "targets",
    "consumers",
    "keyauth_credentials",
    "_format_version",
    "_transform",
];

/// A value for `key`: a list of 0 to 7 entities (0: an empty list, which Kong hashes unlike a missing
/// one), or a scalar for the `_` keys.
fn value(rng: &mut Rng, key: &str) -> Value {
    match key {
        "_format_version" => json!(["1.1", "3.0"][rng.below(2) as usize]),
        "_transform" => json!(rng.below(2) == 0),
        _ => (0..rng.below(8))
            .map(|i| json!({"id": format!("{key}-{i}"), "n": rng.below(4), "tags": ["a", "b"]}))
            .collect(),
    }
}

fn table(rng: &mut Rng) -> Map<String, Value> {
    let mut table = Map::new();
    for k in KEYS {
        if rng.below(4) != 0 {
            table.insert(k.to_string(), value(rng, k));
        }
    }
    table
}

#[test]
fn a_partial_rehash_equals_the_full_one() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for round in 0..2000 {
        let old = table(&mut rng);
        let before = Parts::of(&old);
        let mut new = old.clone();
        let mut touched = Touched::default();
        for _ in 0..rng.below(4) {
            let key = KEYS[rng.below(KEYS.len() as u64) as usize];
            touched.mark(key);
            // Replace, drop or leave equal: a touched part may also end up unchanged.
            match rng.below(3) {
                0 => new.insert(key.into(), value(&mut rng, key)),
                1 => new.remove(key),
                _ => None,
            };
        }
        let partial: Map<String, Value> = new
            .iter()
            .filter(|(k, _)| touched.covers(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let after = before.update(touched, &partial);
        assert_eq!(after, Parts::of(&new), "round {round}: {touched:?} {new:?}");
        assert_eq!(after.hashes(), config_hashes(&Value::Object(new)));
    }
}

#[test]
fn an_untouched_change_is_not_seen() {
    // What the callers guard against: parts only follow what `touched` names.
    let old = json!({"routes": [{"id": 1}], "consumers": [{"id": 2}]});
    let new = json!({"routes": [{"id": 1}], "consumers": []});
    let parts = Parts::of(old.as_object().unwrap());
    let routes: Touched = ["routes"].into_iter().collect();
    let stale = parts.update(routes, new.as_object().unwrap());
    assert_eq!(stale, parts);
    assert_ne!(stale.hashes(), config_hashes(&new));
}

#[test]
fn keys_mark_their_part() {
    let t: Touched = ["targets", "consumers"].into_iter().collect();
    assert!(t.group(4) && t.rest() && !t.group(0));
    assert!(t.covers("snis") && t.covers("_format_version") && !t.covers("routes"));
    assert!(Touched::default().is_empty());
    assert!((0..5).all(|i| Touched::ALL.group(i)) && Touched::ALL.rest());
    let rest: Touched = ["_format_version"].into_iter().collect();
    assert_eq!(rest, ["certificates"].into_iter().collect());
}
