//! Numbers as header values, for the headers the gateway adds to every proxied response (Kong's
//! latencies, `X-Kong-Upstream-Status`) and the plugins' counters (`X-RateLimit-Remaining-*`,
//! `RateLimit-Reset`).
//!
//! Formatting a number into a fresh `HeaderValue` allocates and runs `fmt` (~160–190 instructions, and a
//! rate-limited request writes five of them). The small numbers these headers nearly always carry are
//! made once per process as static values instead, and cloned without an allocation or a shared
//! reference count; a head written as text copies their bytes ([`number_text`]).

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

/// `n` as text, for a head written as text: the same table's bytes, or formatted into `buf` past it
/// (itoa's formatting cost ~50 instructions a number, and a rate-limited response carries five).
#[inline]
pub fn number_text(n: u64, buf: &mut itoa::Buffer) -> &[u8] {
    match SMALL_NUMBERS.get(n as usize) {
        Some(v) => v.as_bytes(),
        None => buf.format(n).as_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::{header_number, number_text, SMALL};

    #[test]
    fn numbers_are_written_the_same_from_the_table_and_past_it() {
        for n in [0, 7, 42, 200, 999, SMALL, 12_345, u64::MAX] {
            assert_eq!(header_number(n).to_str().unwrap(), n.to_string());
            let text = number_text(n, &mut itoa::Buffer::new()).to_vec();
            assert_eq!(String::from_utf8(text).unwrap(), n.to_string());
        }
    }
}
