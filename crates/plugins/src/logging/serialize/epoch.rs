//! Times since the epoch as a request's log record writes them (`tries[].balancer_start` and `_ns`,
//! `started_at`). A time of this era has ten digits of seconds, so those members have a fixed length:
//! they are put together in a buffer on the stack, the digits taken two at a time from a table, and
//! appended in one copy. The general writers ([`super::millis_and_nanos`], [`json::uint`]) format a
//! 19-digit number with `itoa` and append its pieces one by one: ~240 instructions per try.

use super::super::json;
use std::time::Duration;

/// `,"balancer_start":<ms>,"balancer_start_ns":<ns>` of `d`, a time since the epoch.
pub(super) fn balancer_start(out: &mut Vec<u8>, d: Duration) {
    const MS_KEY: &[u8] = b",\"balancer_start\":";
    const NS_KEY: &[u8] = b",\"balancer_start_ns\":";
    const MS: usize = MS_KEY.len();
    const NS: usize = MS + 13 + NS_KEY.len();
    let Some(secs) = ten_digits(d.as_secs()) else {
        return super::millis_and_nanos(out, (MS_KEY, NS_KEY), d);
    };
    let sub = nine_digits(d.subsec_nanos());
    let mut buf = [0u8; NS + 19];
    buf[..MS].copy_from_slice(MS_KEY);
    buf[MS..MS + 10].copy_from_slice(&secs);
    buf[MS + 10..MS + 13].copy_from_slice(&sub[..3]);
    buf[MS + 13..NS].copy_from_slice(NS_KEY);
    buf[NS..NS + 10].copy_from_slice(&secs);
    buf[NS + 10..].copy_from_slice(&sub);
    out.extend_from_slice(&buf);
}

/// `,"started_at":<ms>` of `d`, a time since the epoch.
pub(super) fn started_at(out: &mut Vec<u8>, d: Duration) {
    const KEY: &[u8] = b",\"started_at\":";
    const K: usize = KEY.len();
    let Some(secs) = ten_digits(d.as_secs()) else {
        out.extend_from_slice(KEY);
        return json::uint(out, d.as_millis() as u64);
    };
    let mut buf = [0u8; K + 13];
    buf[..K].copy_from_slice(KEY);
    buf[K..K + 10].copy_from_slice(&secs);
    let ms = d.subsec_millis();
    buf[K + 10] = b'0' + (ms / 100) as u8;
    buf[K + 11..].copy_from_slice(pair(ms % 100));
    out.extend_from_slice(&buf);
}

/// The digits of `n` when it has ten (no leading zero).
fn ten_digits(n: u64) -> Option<[u8; 10]> {
    if !(1_000_000_000..10_000_000_000).contains(&n) {
        return None;
    }
    let mut out = [0u8; 10];
    // Below 100 once divided: two digits.
    out[..2].copy_from_slice(pair((n / 100_000_000) as u32));
    out[2..].copy_from_slice(&eight_digits((n % 100_000_000) as u32));
    Some(out)
}

/// `n` (below 10^9, a second's nanoseconds) as nine digits, zeros in front.
fn nine_digits(n: u32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = b'0' + (n / 100_000_000 % 10) as u8;
    out[1..].copy_from_slice(&eight_digits(n % 100_000_000));
    out
}

/// `n` (below 10^8) as eight digits, zeros in front.
fn eight_digits(n: u32) -> [u8; 8] {
    let (high, low) = (n / 10_000, n % 10_000);
    let mut out = [0u8; 8];
    out[0..2].copy_from_slice(pair(high / 100));
    out[2..4].copy_from_slice(pair(high % 100));
    out[4..6].copy_from_slice(pair(low / 100));
    out[6..8].copy_from_slice(pair(low % 100));
    out
}

/// The two digits of `n` (below 100).
fn pair(n: u32) -> &'static [u8] {
    let i = 2 * n as usize;
    &PAIRS[i..i + 2]
}

/// `00` to `99`.
const PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        table[2 * i] = b'0' + (i / 10) as u8;
        table[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The general writers' bytes for the same times: `millis_and_nanos` and `json::uint` of the
    /// milliseconds, at the edges of the fast path's range and of each group of digits.
    #[test]
    fn fixed_length_times_are_what_the_general_writers_write() {
        let secs = [
            0,
            1,
            999_999_999,
            1_000_000_000,
            1_700_000_000,
            1_764_329_123,
            9_999_999_999,
            10_000_000_000,
        ];
        let nanos = [
            0,
            1,
            999_999,
            1_000_000,
            123_456_789,
            100_000_000,
            999_999_999,
        ];
        for s in secs {
            for n in nanos {
                let d = Duration::new(s, n);
                let mut general = Vec::new();
                let keys = (
                    &b",\"balancer_start\":"[..],
                    &b",\"balancer_start_ns\":"[..],
                );
                super::super::millis_and_nanos(&mut general, keys, d);
                let mut fast = Vec::new();
                balancer_start(&mut fast, d);
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    String::from_utf8(general).unwrap(),
                    "{d:?}"
                );
                let mut general = b",\"started_at\":".to_vec();
                json::uint(&mut general, d.as_millis() as u64);
                let mut fast = Vec::new();
                started_at(&mut fast, d);
                assert_eq!(fast, general, "{d:?}");
            }
        }
    }
}
