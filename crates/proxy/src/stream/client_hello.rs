//! The server name of a TLS ClientHello, read without answering it (nginx's `ssl_preread`): what routes a
//! connection on an `ssl` stream listener before deciding to terminate its TLS or pass it through.
//!
//! Bounded: a ClientHello longer than [`MAX_HELLO`] is refused, whatever its records say. The handshake
//! message may span several records; only record and handshake framing and the extensions list are
//! walked, nothing is decrypted or verified.

/// The longest ClientHello accepted (handshake message bytes).
pub(super) const MAX_HELLO: usize = 32 * 1024;

/// What the bytes read so far tell.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Hello {
    /// A ClientHello so far: read more.
    More,
    /// A whole ClientHello, with its server name (lower-case) when it has one.
    Done(Option<String>),
    /// Not a TLS ClientHello (or one over the bound).
    NotTls,
}

/// A cursor over bytes that fails (None) instead of reading past the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// A vector with a length prefix of `len_bytes` (1 or 2).
    fn vec(&mut self, len_bytes: usize) -> Option<&'a [u8]> {
        let n = if len_bytes == 1 {
            self.u8()?
        } else {
            self.u16()?
        };
        self.take(n)
    }
}

/// Reads the ClientHello in `buf`, the first bytes of a connection.
pub(super) fn parse(buf: &[u8]) -> Hello {
    // The handshake bytes carried by the records read so far.
    let mut handshake = Vec::new();
    let mut rest = buf;
    loop {
        if handshake.len() >= 4 {
            let len = usize::from(handshake[1]) << 16
                | usize::from(handshake[2]) << 8
                | usize::from(handshake[3]);
            if handshake[0] != 1 || len > MAX_HELLO {
                return Hello::NotTls;
            }
            if handshake.len() >= 4 + len {
                return match server_name(&handshake[4..4 + len]) {
                    Some(name) => Hello::Done(name),
                    None => Hello::NotTls,
                };
            }
        }
        if rest.is_empty() {
            return Hello::More;
        }
        // A record: content type 22 (handshake), a 3.x version, a length.
        if rest[0] != 22 || rest.get(1).is_some_and(|major| *major != 3) {
            return Hello::NotTls;
        }
        if rest.len() < 5 {
            return Hello::More;
        }
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        if len == 0 || len > 16 * 1024 + 256 {
            return Hello::NotTls;
        }
        let Some(body) = rest.get(5..5 + len) else {
            return Hello::More;
        };
        handshake.extend_from_slice(body);
        rest = &rest[5 + len..];
    }
}

/// The server name of a ClientHello body: Some(None) for a well-formed hello without one, None for a
/// malformed one.
fn server_name(body: &[u8]) -> Option<Option<String>> {
    let mut r = Reader(body);
    r.take(2 + 32)?; // version, random
    r.vec(1)?; // session id
    r.vec(2)?; // cipher suites
    r.vec(1)?; // compression methods
    if r.0.is_empty() {
        return Some(None); // no extensions at all
    }
    let mut extensions = Reader(r.vec(2)?);
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec(2)?;
        if kind != 0 {
            continue;
        }
        let mut list = Reader(Reader(data).vec(2)?);
        while !list.0.is_empty() {
            let name_type = list.u8()?;
            let name = list.vec(2)?;
            if name_type == 0 {
                let name = std::str::from_utf8(name).ok()?;
                return Some(Some(name.trim_end_matches('.').to_ascii_lowercase()));
            }
        }
        return Some(None);
    }
    Some(None)
}

#[cfg(test)]
mod tests;
