//! Unit tests of `ring`.
use super::*;

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("10.0.0.{i}:80")).collect()
}

fn ring(targets: &[(String, u32)], slots: usize) -> Ring {
    let named: Vec<(&str, u32)> = targets.iter().map(|(n, w)| (n.as_str(), *w)).collect();
    Ring::new(&named, slots)
}

/// The owner names of each slot.
fn owners(targets: &[(String, u32)], slots: usize) -> Vec<String> {
    ring(targets, slots)
        .owners()
        .iter()
        .map(|i| targets[*i as usize].0.clone())
        .collect()
}

#[test]
fn slots_are_shared_in_proportion_to_weight() {
    let targets = vec![
        ("a:1".to_string(), 100),
        ("b:1".to_string(), 100),
        ("c:1".to_string(), 200),
        ("d:1".to_string(), 0),
    ];
    let r = ring(&targets, 10_000);
    let share = |i: u32| r.owners().iter().filter(|o| **o == i).count() as f64 / 10_000.0;
    for (i, want) in [(0, 0.25), (1, 0.25), (2, 0.5), (3, 0.0)] {
        assert!((share(i) - want).abs() < 0.02, "target {i}: {}", share(i));
    }
}

#[test]
fn removing_a_target_remaps_only_its_own_slots() {
    let all: Vec<(String, u32)> = names(5).into_iter().map(|n| (n, 100)).collect();
    let before = owners(&all, 10_000);
    let removed = &all[2].0;
    let rest: Vec<(String, u32)> = all.iter().filter(|(n, _)| n != removed).cloned().collect();
    let after = owners(&rest, 10_000);
    let mut moved = 0;
    for (b, a) in before.iter().zip(&after) {
        if b == removed {
            moved += 1;
        } else {
            assert_eq!(a, b, "a slot of a kept target moved");
        }
    }
    let fraction = moved as f64 / 10_000.0;
    assert!((fraction - 0.2).abs() < 0.02, "remapped {fraction}");
}

#[test]
fn adding_a_target_takes_only_the_slots_it_wins() {
    let four: Vec<(String, u32)> = names(4).into_iter().map(|n| (n, 100)).collect();
    let mut five = four.clone();
    five.push(("10.0.1.9:80".to_string(), 100));
    let before = owners(&four, 10_000);
    let after = owners(&five, 10_000);
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    assert!(before
        .iter()
        .zip(&after)
        .all(|(b, a)| b == a || a == "10.0.1.9:80"));
    let fraction = moved as f64 / 10_000.0;
    assert!((fraction - 0.2).abs() < 0.02, "remapped {fraction}");
}

#[test]
fn a_key_always_lands_on_the_same_usable_target() {
    let targets: Vec<(String, u32)> = names(3).into_iter().map(|n| (n, 10)).collect();
    let r = ring(&targets, 100);
    let key = hash64(b"user-17");
    let owner = r.pick(Some(key), |_| true).unwrap();
    assert_eq!(r.pick(Some(key), |_| true), Some(owner));
    let next = r.pick(Some(key), |t| t != owner).unwrap();
    assert_ne!(next, owner);
    assert_eq!(r.pick(Some(key), |_| false), None);
    assert_eq!(ring(&[], 100).pick(Some(key), |_| true), None);
}

#[test]
fn the_hash_is_stable_across_processes() {
    // Fixed values: a change here would move every client of every hashing upstream.
    assert_eq!(hash64(b""), mix(0xcbf2_9ce4_8422_2325));
    assert_eq!(hash64(b"a"), hash64(b"a"));
    assert_ne!(hash64(b"a"), hash64(b"b"));
}

#[test]
fn equal_rings_are_built_once_while_alive() {
    let targets = [("10.7.0.1:80", 100), ("10.7.0.2:80", 50)];
    let a = Ring::shared(&targets, 500);
    assert!(Arc::ptr_eq(&a, &Ring::shared(&targets, 500)));
    assert!(!Arc::ptr_eq(&a, &Ring::shared(&targets, 501)));
    assert!(!Arc::ptr_eq(
        &a,
        &Ring::shared(&[("10.7.0.1:80", 100)], 500)
    ));
}
