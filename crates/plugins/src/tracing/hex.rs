//! Hex and decimal forms of ids as the header formats write them.

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// The bytes of a hex string (an odd length gets a leading `0`, as Kong's `from_hex`); None when a
/// character is not a hex digit.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let padded: Vec<u8> = if s.len() % 2 == 1 {
        std::iter::once(b'0').chain(s.bytes()).collect()
    } else {
        s.bytes().collect()
    };
    padded
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// A string of ASCII digits as the shortest big-endian bytes of its value (OpenSSL's `BN_bn2bin`, which
/// Kong uses for Datadog and GCP ids); None when it is not a number below 2^128.
pub fn from_dec(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u128 = s.parse().ok()?;
    let bytes = n.to_be_bytes();
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    Some(bytes[first..].to_vec())
}

/// The decimal value of big-endian `bytes` (at most 16).
pub fn to_dec(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(0u128, |n, b| n << 8 | u128::from(*b))
        .to_string()
}
