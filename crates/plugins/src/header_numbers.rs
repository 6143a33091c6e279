//! Numbers as header values, for the headers the gateway adds to every proxied response (Kong's
//! latencies, `X-Kong-Upstream-Status`) and the plugins' counters (`X-RateLimit-Remaining-*`,
//! `RateLimit-Reset`).
//!
//! Formatting a number into a fresh `HeaderValue` allocates and runs `fmt` (~160–190 instructions, and a
//! rate-limited request writes five of them). The small numbers these headers nearly always carry are
//! made once per process as static values instead, and cloned without an allocation or a shared
//! reference count.

use http::HeaderValue;
use std::sync::LazyLock;

/// Numbers below this come from [`SMALL_NUMBERS`].
const SMALL: u64 = 1000;

/// `0` to `999` as static header values, made on first use (a few KB, kept for the process's life).
static SMALL_NUMBERS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    (0..SMALL)
        .map(|n| HeaderValue::from_static(Box::leak(n.to_string().into_boxed_str())))
        .collect()
});

/// `n` as a header value.
#[inline]
pub fn header_number(n: u64) -> HeaderValue {
    match SMALL_NUMBERS.get(n as usize) {
        Some(v) => v.clone(),
        None => HeaderValue::from(n),
    }
}

#[cfg(test)]
mod tests {
    use super::{header_number, SMALL};

    #[test]
    fn numbers_are_written_the_same_from_the_table_and_past_it() {
        for n in [0, 7, 42, 200, 999, SMALL, 12_345, u64::MAX] {
            assert_eq!(header_number(n).to_str().unwrap(), n.to_string());
        }
    }
}
