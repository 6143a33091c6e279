//! Request ids: 32 lower-case hex characters like Kong's, unique per process, no syscall per request.

use std::cell::Cell;

thread_local! {
    static STATE: Cell<(u64, u64)> = Cell::new(seed());
}

fn seed() -> (u64, u64) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let thread = std::thread::current().id();
    let mut h = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&(t, thread, std::process::id()), &mut h);
    (std::hash::Hasher::finish(&h), 0)
}

/// A fresh id: a per-thread random prefix and a counter, mixed so ids don't look sequential.
#[inline]
pub fn next() -> [u8; 32] {
    let (prefix, counter) = STATE.with(|s| {
        let (p, c) = s.get();
        s.set((p, c.wrapping_add(1)));
        (p, c)
    });
    let mixed = (counter ^ prefix.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut out = [0u8; 32];
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in prefix
        .to_be_bytes()
        .iter()
        .chain(mixed.to_be_bytes().iter())
        .enumerate()
    {
        out[i * 2] = HEX[(b >> 4) as usize];
        out[i * 2 + 1] = HEX[(b & 15) as usize];
    }
    out
}

/// The id as text (always ASCII hex).
#[inline]
pub fn as_str(id: &[u8; 32]) -> &str {
    std::str::from_utf8(id).unwrap_or_default()
}

#[cfg(test)]
mod tests;
