//! A small JSON writer for log records: strings are copied in one piece unless they hold a character JSON
//! must escape (header values and URIs rarely do), and numbers go through `itoa`. It writes what
//! `serde_json` would, at a fraction of the per-call cost, which matters because a record is written on
//! the proxy worker for every request.

use std::fmt::Write as _;

/// A JSON array of already serialized values (a batch of records or spans), in one allocation.
pub fn array(items: &[bytes::Bytes]) -> bytes::Bytes {
    let mut body = Vec::with_capacity(items.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
    body.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.push(b']');
    body.into()
}

/// Appends `s` as a JSON string.
pub fn string(out: &mut Vec<u8>, s: &str) {
    if is_plain(s.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    string_parts(out, &[s]);
}

/// Appends the concatenation of `parts` as one JSON string (no intermediate `String`).
pub fn string_parts(out: &mut Vec<u8>, parts: &[&str]) {
    out.push(b'"');
    for part in parts {
        text(out, part);
    }
    out.push(b'"');
}

/// Appends `s` escaped as the inside of a JSON string (no quotes), for a string written in pieces.
pub fn text(out: &mut Vec<u8>, s: &str) {
    text_checked(out, s, is_plain(s.as_bytes()));
}

/// [`text`] when whether `s` is plain ([`is_plain`]) is known: a string written twice is looked at once.
pub fn text_checked(out: &mut Vec<u8>, s: &str, plain: bool) {
    if plain {
        out.extend_from_slice(s.as_bytes());
    } else {
        escape_into(out, s);
    }
}

/// Appends raw header bytes as a JSON string (invalid UTF-8 replaced, as `String::from_utf8_lossy`).
/// Inlined into the header loops that call it for every field.
#[inline]
pub fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    bytes_after(out, b"\"", b);
}

/// Ends a member's key (the caller wrote `"name`) and appends `value` as its JSON string ([`bytes`]): the
/// key's end and the value's opening quote are one copy when the value needs no escaping (a header's
/// member, for every field of a record).
#[inline(always)]
pub fn key_end_and_bytes(out: &mut Vec<u8>, value: &[u8]) {
    bytes_after(out, b"\":\"", value);
}

/// Appends `open` (what comes before the value, ending with its opening quote) and `value` as [`bytes`]
/// does.
#[inline(always)]
fn bytes_after(out: &mut Vec<u8>, open: &[u8], value: &[u8]) {
    if is_plain(value) {
        out.extend_from_slice(open);
        out.extend_from_slice(value);
        out.push(b'"');
    } else {
        out.extend_from_slice(&open[..open.len() - 1]);
        bytes_escaped(out, value);
    }
}

/// [`bytes`] of a value that needs escaping, out of line: the rare path's locals made every call of
/// `bytes` save and restore registers.
#[cold]
#[inline(never)]
fn bytes_escaped(out: &mut Vec<u8>, b: &[u8]) {
    match std::str::from_utf8(b) {
        Ok(s) => string(out, s),
        Err(_) => string(out, &String::from_utf8_lossy(b)),
    }
}

/// Printable ASCII other than `"` and `\\`: copied into a JSON string as is. Checks eight bytes at a
/// time (the usual "has a zero byte" bit tricks), since every header value of every request goes through it.
#[inline]
pub(crate) fn is_plain(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v;
    let mut chunks = s.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let control = w.wrapping_sub(ONES * 0x20) & !w;
        let quote = has_zero(w ^ (ONES * u64::from(b'"')));
        let backslash = has_zero(w ^ (ONES * u64::from(b'\\')));
        if (w | control | quote | backslash) & HIGH != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| PLAIN[usize::from(b)])
}

/// [`is_plain`]'s bytes, as a table: one load per byte of a string's tail.
const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x80 && !needs_escape(b as u8);
        b += 1;
    }
    table
};

pub fn uint(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

pub fn int(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends an IP address as a JSON string (IPv4 digit by digit: `Display` costs ~1k instructions).
pub fn ip(out: &mut Vec<u8>, ip: std::net::IpAddr) {
    match ip {
        std::net::IpAddr::V4(v4) => {
            // The quotes around the digits in the same buffer: one copy for the whole string.
            let mut buf = [b'"'; V4_ROOM];
            let end = v4_text(v4, &mut buf, 1);
            buf[end] = b'"';
            out.extend_from_slice(&buf[..=end]);
        }
        std::net::IpAddr::V6(_) => {
            out.push(b'"');
            ip_text(out, ip);
            out.push(b'"');
        }
    }
}

/// Appends an IP address as text, without quotes, as `Display` writes it (IPv4 digit by digit, much
/// cheaper than `Display`).
pub(crate) fn ip_text(out: &mut Vec<u8>, ip: std::net::IpAddr) {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mut buf = [0; V4_ROOM];
            let end = v4_text(v4, &mut buf, 0);
            out.extend_from_slice(&buf[..end]);
        }
        std::net::IpAddr::V6(v6) => {
            let mut s = String::with_capacity(40);
            let _ = write!(s, "{v6}");
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// Room for an IPv4 address (at most 15 bytes) between two quotes.
const V4_ROOM: usize = 17;

/// Writes `v4` as text into `buf` from `start` (0 or 1), returning where it ends. Written into a buffer
/// on the stack and appended once: a `push` per digit checked the vector's capacity each time (~140
/// instructions per address, two addresses per record). Each octet's digits and dot come from
/// [`OCTETS`] in one store (dividing by 100 and 10 per octet cost ~80 instructions an address).
fn v4_text(v4: std::net::Ipv4Addr, buf: &mut [u8; V4_ROOM], start: usize) -> usize {
    let mut n = start;
    for octet in v4.octets() {
        let (text, len) = OCTETS[usize::from(octet)];
        buf[n..n + 4].copy_from_slice(&text);
        n += usize::from(len);
    }
    // Without the last octet's dot.
    n - 1
}

/// Each octet's decimal digits and a dot (four bytes, the unused ones zero), and how many of them count.
const OCTETS: [([u8; 4], u8); 256] = {
    let mut table = [([0; 4], 0); 256];
    let mut i = 0;
    while i < 256 {
        let o = i as u8;
        table[i] = match o {
            100.. => ([b'0' + o / 100, b'0' + o / 10 % 10, b'0' + o % 10, b'.'], 4),
            10.. => ([b'0' + o / 10, b'0' + o % 10, b'.', 0], 3),
            _ => ([b'0' + o, b'.', 0, 0], 2),
        };
        i += 1;
    }
    table
};

const fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

#[cold]
#[inline(never)]
fn escape_into(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            b => out.push(b),
        }
    }
}

/// An object being written: members are separated by commas as they come.
pub struct Object<'a> {
    pub out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    pub fn open(out: &'a mut Vec<u8>) -> Object<'a> {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// An object whose opening brace and first members are already written.
    pub fn continued(out: &'a mut Vec<u8>) -> Object<'a> {
        Object { out, empty: false }
    }

    /// Starts member `name` (a plain ASCII key, never escaped); the caller writes its value to the
    /// returned buffer.
    #[inline]
    pub fn key(&mut self, name: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// Starts a member whose name is arbitrary text (escaped as needed).
    pub fn key_text(&mut self, name: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        string(self.out, name);
        self.out.push(b':');
        self.out
    }

    pub fn close(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`ip_text`] on its own.
    fn ip_string(ip: std::net::IpAddr) -> String {
        let mut out = Vec::new();
        ip_text(&mut out, ip);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_read_back_as_what_was_written() {
        for s in [
            "plain",
            "quote\" and \\ back",
            "ctl\u{1}\n\t\r\u{8}\u{c}",
            "ünï €",
            "",
        ] {
            let mut out = Vec::new();
            string(&mut out, s);
            assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
            assert_eq!(
                out,
                serde_json::to_vec(s).unwrap(),
                "same bytes as serde_json"
            );
        }
        for plain in [
            "",
            "a",
            "abcdefgh",
            "abcdefghij",
            "~ !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}",
        ] {
            assert!(is_plain(plain.as_bytes()), "{plain:?}");
        }
        for needs in [
            "abcdefg\"",
            "\"",
            "abcdefgh\\",
            "tab\there",
            "\u{7f}\u{80}é",
            "abcdefgh\u{1f}",
        ] {
            assert!(!is_plain(needs.as_bytes()), "{needs:?}");
        }
        for ip_text in ["127.0.0.1", "10.200.3.45", "::1", "2001:db8::7"] {
            let mut out = Vec::new();
            ip(&mut out, ip_text.parse().unwrap());
            assert_eq!(out, serde_json::to_vec(ip_text).unwrap());
            assert_eq!(ip_string(ip_text.parse().unwrap()), ip_text);
        }
        let mut out = Vec::new();
        bytes(&mut out, b"bad \xff utf8");
        assert_eq!(
            serde_json::from_slice::<String>(&out).unwrap(),
            "bad \u{fffd} utf8"
        );
    }

    /// IPv4 addresses of every length (1 to 3 digits per octet, 7 to 15 bytes) read as `Display` writes
    /// them, quoted or not, appended after what the buffer held.
    #[test]
    fn ipv4_addresses_of_every_length_are_written_whole() {
        for text in [
            "0.0.0.0",
            "1.20.100.9",
            "99.100.9.10",
            "255.255.255.255",
            "192.168.0.254",
        ] {
            let addr: std::net::IpAddr = text.parse().unwrap();
            let mut out = b"x".to_vec();
            ip(&mut out, addr);
            assert_eq!(out, format!("x\"{text}\"").into_bytes());
            assert_eq!(ip_string(addr), text);
        }
    }

    #[test]
    fn objects_separate_members() {
        let mut out = Vec::new();
        let mut o = Object::open(&mut out);
        uint(o.key("a"), 1);
        int(o.key("b"), -1);
        string_parts(o.key("c"), &["x", "\"", "y"]);
        o.close();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":1,"b":-1,"c":"x\"y"}"#
        );
    }
}
