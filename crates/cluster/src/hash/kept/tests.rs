//! The kept-bytes hash equals the whole-array hash byte for byte: on random groups and random changes
//! (kept items reused, changed ones serialized anew), on groups large enough to fold several times, with
//! items that straddle a fold point and items larger than the limit themselves.

use super::*;
use crate::hash::value_hash;
use serde_json::{json, Map};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random JSON value of nesting up to `depth`; `big` is the largest string it may hold.
fn value(rng: &mut Rng, depth: u32, big: usize) -> Value {
    match rng.below(if depth == 0 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.below(1_000_000) as f64 / 8.0),
        3 => json!("s".repeat(rng.below(40))),
        4 => json!("b".repeat(rng.below(big + 1))),
        5 | 6 => {
            let mut map = Map::new();
            for _ in 0..rng.below(8) {
                let key = format!("k{}", rng.below(30));
                map.insert(key, value(rng, depth - 1, big));
            }
            Value::Object(map)
        }
        _ => Value::Array(
            (0..rng.below(9))
                .map(|_| value(rng, depth - 1, big))
                .collect(),
        ),
    }
}

/// An entity-like object: an id, nested values, and now and then a large string.
fn entity(rng: &mut Rng, big: usize) -> Value {
    let mut e = json!({ "id": format!("{:016x}", rng.next()) });
    for i in 0..rng.below(6) {
        e[format!("f{i}")] = value(rng, 3, big);
    }
    e
}

fn kept_hash(items: &[(Value, Serialized)]) -> String {
    array_hash(items.iter().map(|(_, s)| s))
}

fn whole_hash(items: &[(Value, Serialized)]) -> String {
    value_hash(&Value::Array(
        items.iter().map(|(v, _)| v.clone()).collect(),
    ))
}

fn kept(v: Value) -> (Value, Serialized) {
    let s = Serialized::of(&v);
    (v, s)
}

#[test]
fn equals_the_whole_hash_over_random_groups_and_changes() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut folds_seen = 0;
    // (items, largest string): small groups (0–7 items: every join rule), then groups of several MB.
    for (round, (count, big)) in [(0, 10), (1, 10), (3, 50), (5, 50), (6, 50), (7, 50)]
        .into_iter()
        .chain([(40, 80_000), (300, 10_000), (3, 1_100_000), (1_500, 2_000)])
        .enumerate()
    {
        let mut items: Vec<_> = (0..count).map(|_| kept(entity(&mut rng, big))).collect();
        assert_eq!(kept_hash(&items), whole_hash(&items), "round {round}");
        let size: usize = items.iter().map(|(_, s)| s.bytes.len()).sum();
        folds_seen += size / FOLD_AT;
        // Random changes: an item replaced, inserted, removed; the others keep their bytes.
        for change in 0..6 {
            match rng.below(3) {
                0 if !items.is_empty() => {
                    let at = rng.below(items.len());
                    items[at] = kept(entity(&mut rng, big));
                }
                1 if !items.is_empty() => {
                    items.remove(rng.below(items.len()));
                }
                _ => {
                    let at = rng.below(items.len() + 1);
                    items.insert(at, kept(entity(&mut rng, big)));
                }
            }
            assert_eq!(
                kept_hash(&items),
                whole_hash(&items),
                "round {round}, change {change}"
            );
        }
    }
    assert!(
        folds_seen >= 12,
        "the large groups folded {folds_seen} times"
    );
}

#[test]
fn folds_at_kongs_checks_inside_an_item() {
    // The first item fills the buffer to exactly the limit; the second is an object whose checks are
    // at its start, at each value: the fold must happen at the first check past the limit, inside it.
    for pad in [FOLD_AT - 4, FOLD_AT - 3, FOLD_AT - 1, FOLD_AT, FOLD_AT + 7] {
        let items: Vec<_> = [
            json!("x".repeat(pad)),
            json!({"a": "yy", "b": ["z", 1, null], "c": {"d": "w".repeat(FOLD_AT)}}),
            json!([1, 2]),
            json!("tail"),
            json!({}),
            json!([[[]]]),
        ]
        .into_iter()
        .map(kept)
        .collect();
        assert_eq!(kept_hash(&items), whole_hash(&items), "pad {pad}");
        assert_eq!(
            kept_hash(&items[..2]),
            whole_hash(&items[..2]),
            "pad {pad}, joined"
        );
    }
}

#[test]
fn records_each_value_start_once() {
    let s = Serialized::of(&json!({"a": [[1], "bc"], "d": null}));
    // a:1;bc;d:/null/;  — the object at 0, [[1],"bc"] and [1] and 1 all at 2, "bc" at 4, null at 9.
    assert_eq!(&*s.bytes, b"a:1;bc;d:/null/;");
    assert_eq!(&*s.checks, &[0, 2, 4, 9]);
}

#[test]
fn a_marked_hash_resumed_after_a_change_equals_the_whole_hash() {
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    // Several MB, so the folds after a change move; and groups around the 5-item join rule.
    for (count, big) in [
        (1_500, 2_000),
        (700, 3_000),
        (6, 50),
        (7, 50),
        (64, 50),
        (65, 50),
    ] {
        let mut items: Vec<_> = (0..count).map(|_| kept(entity(&mut rng, big))).collect();
        let mut marked = Marked::of(items.iter().map(|(_, s)| s), None);
        assert_eq!(marked.hash(), whole_hash(&items), "{count} items");
        for change in 0..12 {
            // The first index that differs from the array `marked` was made for.
            let at = match rng.below(4) {
                0 if items.len() > 1 => {
                    let at = rng.below(items.len());
                    items.remove(at);
                    at
                }
                1 => {
                    let at = rng.below(items.len() + 1);
                    items.insert(at, kept(entity(&mut rng, big)));
                    at
                }
                2 => items.len().saturating_sub(1),
                _ => rng.below(items.len()),
            };
            if let Some(item) = items.get_mut(at) {
                *item = kept(entity(&mut rng, big));
            }
            marked = Marked::of(items.iter().map(|(_, s)| s), Some((&marked, at)));
            let whole = whole_hash(&items);
            assert_eq!(
                marked.hash(),
                whole,
                "{count} items, change {change} at {at}"
            );
            let fresh = Marked::of(items.iter().map(|(_, s)| s), None);
            assert_eq!(
                fresh.marks.len(),
                marked.marks.len(),
                "the marks are all kept"
            );
        }
    }
}

#[test]
fn a_marked_hash_resumes_from_the_last_mark_before_the_change() {
    let items: Vec<_> = (0..1_000).map(|i| kept(json!({ "id": i }))).collect();
    let marked = Marked::of(items.iter().map(|(_, s)| s), None);
    assert_eq!(marked.marks.len(), 1_000usize.div_ceil(MARK_EVERY));
    // Claiming everything unchanged reuses the last mark: only the items after it are fed, so a wrong
    // claim about an item before it goes unnoticed (what `same` promises is trusted).
    let mut changed = items.clone();
    changed[10] = kept(json!({ "id": "other" }));
    let trusted = Marked::of(changed.iter().map(|(_, s)| s), Some((&marked, 1_000)));
    assert_eq!(trusted.hash(), marked.hash());
    let honest = Marked::of(changed.iter().map(|(_, s)| s), Some((&marked, 10)));
    assert_eq!(honest.hash(), whole_hash(&changed));
}
