//! Header maps given back by their last user, kept per thread for the next head parsed there. A map is two
//! allocations (its index table and its entries); the proxy gives back a response's map once its head is
//! written, so the next head's map costs neither allocation nor free.

use http::HeaderMap;
use std::cell::RefCell;

/// Maps kept per thread at most.
const KEPT: usize = 64;
/// A map that grew past this many fields is freed rather than kept.
const LARGEST: usize = 64;

thread_local! {
    static MAPS: RefCell<Vec<HeaderMap>> = const { RefCell::new(Vec::new()) };
}

/// An empty map with room for `capacity` fields: a kept one when there is one, else a new one.
pub(crate) fn header_map(capacity: usize) -> HeaderMap {
    match MAPS.try_with(|m| m.borrow_mut().pop()).ok().flatten() {
        Some(mut map) => {
            map.reserve(capacity);
            map
        }
        None => HeaderMap::with_capacity(capacity),
    }
}

/// Gives `map` back, emptied, for the next head parsed on this thread (freed when enough are kept or it
/// is large). Its values are dropped now, so it holds no read buffer.
pub fn recycle_headers(mut map: HeaderMap) {
    if map.capacity() > LARGEST {
        return;
    }
    map.clear();
    let _ = MAPS.try_with(|m| {
        let mut m = m.borrow_mut();
        if m.len() < KEPT {
            m.push(map);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_back_map_is_reused_empty_and_large_ones_are_not_kept() {
        let mut map = header_map(8);
        map.insert("x-a", "1".parse().unwrap());
        let kept = MAPS.with_borrow(|m| m.len());
        recycle_headers(map);
        assert_eq!(MAPS.with_borrow(|m| m.len()), kept + 1);
        let again = header_map(4);
        assert!(again.is_empty() && again.capacity() >= 8);
        assert_eq!(MAPS.with_borrow(|m| m.len()), kept);
        let large = header_map(LARGEST * 2);
        recycle_headers(large);
        assert_eq!(MAPS.with_borrow(|m| m.len()), kept, "a large map is freed");
    }
}
