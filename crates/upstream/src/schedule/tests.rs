//! Tests of the smooth weighted round-robin order.

use super::*;

#[test]
fn smooth_schedule_interleaves_by_weight() {
    assert_eq!(smooth_schedule(&[3, 1]), vec![0, 0, 1, 0]);
    assert_eq!(smooth_schedule(&[0, 2]), vec![1]);
    assert_eq!(smooth_schedule(&[0]), Vec::<u32>::new());
    assert_eq!(smooth_schedule(&[100, 100]), vec![0, 1]);
    assert_eq!(smooth_schedule(&[]), Vec::<u32>::new());
    let s = smooth_schedule(&[5, 3, 2]);
    assert_eq!(s.len(), 10);
    assert_eq!(s.iter().filter(|i| **i == 0).count(), 5);
    assert_eq!(s.iter().filter(|i| **i == 2).count(), 2);
    let big = smooth_schedule(&[65535, 0, 1]);
    assert!(big.len() <= 10_001 && big.contains(&2) && !big.contains(&1));
}
