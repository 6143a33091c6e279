//! Read buffers of quiet connections, kept per worker thread for the next connection that speaks. A quiet
//! connection holds no buffer (memory per idle keep-alive connection), and yet the request that wakes it
//! does not pay an allocation for its head's buffer: under a closed-loop load every connection goes quiet
//! between two requests, so that was one allocation and one free per request.

use bytes::BytesMut;
use sluice_h1::Spares;

/// Spares kept per worker thread at most.
const KEPT: usize = 64;
/// A buffer with more room than this (one a large head or body grew) is freed rather than kept.
const LARGEST: usize = 16 * 1024;

thread_local! {
    static SPARES: Spares<BytesMut> = const { Spares::new(KEPT) };
}

/// An empty buffer with room for at least `room` bytes: a spare when one is kept, else a new one.
pub(super) fn take(room: usize) -> BytesMut {
    let mut buf = SPARES
        .try_with(Spares::take)
        .ok()
        .flatten()
        .unwrap_or_default();
    buf.reserve(room);
    buf
}

/// Keeps `buf`, empty, for the next [`take`]; it is dropped when enough are kept or it is large.
pub(super) fn give(buf: BytesMut) {
    if !buf.is_empty() || buf.capacity() == 0 || buf.capacity() > LARGEST {
        return;
    }
    let _ = SPARES.try_with(|s| s.give(buf));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_is_taken_again_and_the_kept_ones_are_bounded() {
        let first = take(4096);
        let at = first.as_ptr();
        give(first);
        let again = take(4096);
        assert_eq!(
            again.as_ptr(),
            at,
            "the spare is reused, not a new allocation"
        );
        assert!(again.is_empty() && again.capacity() >= 4096);
        let mut many: Vec<BytesMut> = (0..KEPT + 10).map(|_| take(4096)).collect();
        for b in many.drain(..) {
            give(b);
        }
        assert_eq!(SPARES.with(Spares::len), KEPT);
        let mut grown = take(4096);
        grown.reserve(LARGEST * 2);
        let kept = SPARES.with(Spares::len);
        give(grown);
        assert_eq!(SPARES.with(Spares::len), kept, "a large buffer is freed");
    }
}
