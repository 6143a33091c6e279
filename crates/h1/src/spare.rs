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
    static MAPS: Spares<HeaderMap> = const { Spares::new(KEPT) };
}

/// A bounded stack of spare values, for one thread (held in a `thread_local!`): what a user gives back
/// is taken by the next user on that thread instead of being freed and made again. The proxy keeps its
/// client read buffers in one too.
pub struct Spares<T> {
    kept: RefCell<Vec<T>>,
    most: usize,
}

impl<T> Spares<T> {
    /// Keeps at most `most` values.
    pub const fn new(most: usize) -> Spares<T> {
        Spares {
            kept: RefCell::new(Vec::new()),
            most,
        }
    }

    /// The last value given back, if any.
    pub fn take(&self) -> Option<T> {
        self.kept.borrow_mut().pop()
    }

    /// Keeps `value` for the next [`Spares::take`], or drops it when `most` are kept.
    pub fn give(&self, value: T) {
        let mut kept = self.kept.borrow_mut();
        if kept.len() < self.most {
            kept.push(value);
        }
    }

    /// How many values are kept.
    pub fn len(&self) -> usize {
        self.kept.borrow().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.borrow().is_empty()
    }
}

/// An empty map with room for `capacity` fields: a kept one when there is one, else a new one.
pub(crate) fn header_map(capacity: usize) -> HeaderMap {
    match MAPS.try_with(Spares::take).ok().flatten() {
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
    let _ = MAPS.try_with(|m| m.give(map));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_back_map_is_reused_empty_and_large_ones_are_not_kept() {
        let mut map = header_map(8);
        map.insert("x-a", "1".parse().unwrap());
        let kept = MAPS.with(Spares::len);
        recycle_headers(map);
        assert_eq!(MAPS.with(Spares::len), kept + 1);
        let again = header_map(4);
        assert!(again.is_empty() && again.capacity() >= 8);
        assert_eq!(MAPS.with(Spares::len), kept);
        let large = header_map(LARGEST * 2);
        recycle_headers(large);
        assert_eq!(MAPS.with(Spares::len), kept, "a large map is freed");
    }
}
