//! Percent-decoding of path segments and `application/x-www-form-urlencoded` pairs (query strings, form
//! bodies), and the encoding of `next` links.

/// Decodes one query or form component (`+` is a space); invalid escapes are kept literally.
pub fn unescape(s: &str) -> String {
    decode(s, true)
}

/// Decodes one path segment (`+` stays `+`), e.g. `/snis/%2A.example.test` → `*.example.test`.
pub fn unescape_path(s: &str) -> String {
    decode(s, false)
}

fn decode(s: &str, plus_is_space: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => match bytes.get(i + 1..i + 3).and_then(hex_pair) {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_pair(pair: &[u8]) -> Option<u8> {
    let hi = (*pair.first()? as char).to_digit(16)?;
    let lo = (*pair.get(1)? as char).to_digit(16)?;
    u8::try_from(hi * 16 + lo).ok()
}

/// Encodes a component for a `next` link: unreserved characters stay, everything else is `%XX`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The (name, value) pairs of a query string or urlencoded body, decoded, in order.
pub fn pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (unescape(k), unescape(v))
        })
        .collect()
}

/// The first value of parameter `name`.
pub fn get(query: Option<&str>, name: &str) -> Option<String> {
    pairs(query)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests;
