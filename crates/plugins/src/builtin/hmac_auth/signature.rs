//! hmac-auth's request-side pieces, run in `access`: reading Kong's `hmac username=.., algorithm=..,
//! headers=.., signature=..` parameters, the algorithms, the signing string Kong builds from the listed
//! headers (with the `request-line` and `@request-target` pseudo headers), the constant-time check of the
//! signature, the `Date`/`X-Date` clock skew and the body's `Digest`.

use base64::Engine;
use http::{HeaderMap, HeaderName};
use sha2::Digest;

/// The parameters of one `Authorization` or `Proxy-Authorization` value.
#[derive(Debug, PartialEq, Eq)]
pub struct Params<'a> {
    pub username: &'a [u8],
    pub algorithm: &'a [u8],
    /// The `headers` list as given: names separated by single spaces.
    pub headers: &'a [u8],
    pub signature: &'a [u8],
}

/// What follows each of the first three parameters' closing quote: `",`, spaces, the next name.
const NEXT: [&[u8]; 3] = [b"algorithm=\"", b"headers=\"", b"signature=\""];

impl<'a> Params<'a> {
    /// The parameters when `value` has them all (Kong then takes them; otherwise it has none).
    ///
    /// Kong matches `\s*[Hh]mac\s*username="(.+)",\s*algorithm="(.+)",\s*headers="(.+)",\s*signature="(.+)"`
    /// anywhere in the value, PCRE-style: the first `hmac` that can start a match, each group as long as
    /// the rest still matches. This finds the same groups in one pass per group (a regex engine took 15 µs
    /// per request here), from the last one back: the signature ends at the last quote; each earlier group
    /// ends at the last separator (`",` spaces `name="`) whose next group is not empty. Header values hold
    /// no line breaks, so `.` matches any byte. `tests` checks it against that regex on generated values.
    pub fn parse(value: &'a [u8]) -> Option<Params<'a>> {
        let last_quote = value.iter().rposition(|b| *b == b'"')?;
        // ends[i]: where group i ends (its closing quote); starts[i]: where group i + 1 starts.
        let mut ends = [0usize; 4];
        let mut starts = [0usize; 3];
        ends[3] = last_quote;
        for i in (0..3).rev() {
            let (end, next) = (0..ends[i + 1]).rev().find_map(|q| {
                let next = separator(value, q, NEXT[i])?;
                (next < ends[i + 1]).then_some((q, next))
            })?;
            (ends[i], starts[i]) = (end, next);
        }
        let username = (0..value.len()).find_map(|i| {
            let mac = value.get(i..i + 4)?;
            if !matches!(mac, [b'h' | b'H', b'm', b'a', b'c']) {
                return None;
            }
            let after = skip_spaces(value, i + 4);
            value[after..]
                .starts_with(b"username=\"")
                .then_some(after + 10)
        })?;
        (username < ends[0]).then(|| Params {
            username: &value[username..ends[0]],
            algorithm: &value[starts[0]..ends[1]],
            headers: &value[starts[1]..ends[2]],
            signature: &value[starts[2]..ends[3]],
        })
    }

    /// The listed header names, in order (Kong splits on each single space).
    pub fn header_names(&self) -> impl Iterator<Item = &'a [u8]> {
        self.headers.split(|b| *b == b' ')
    }
}

/// Where the next group starts when `value` has a separator at `q` (`",`, spaces, then `name`).
fn separator(value: &[u8], q: usize, name: &[u8]) -> Option<usize> {
    if value.get(q..q + 2)? != b"\",".as_slice() {
        return None;
    }
    let at = skip_spaces(value, q + 2);
    value[at..].starts_with(name).then_some(at + name.len())
}

/// The position after the whitespace (PCRE's `\s`) from `i`.
fn skip_spaces(value: &[u8], mut i: usize) -> usize {
    while value
        .get(i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
    {
        i += 1;
    }
    i
}

/// The algorithms Kong accepts, in its schema's order (the default of `algorithms`).
pub const ALGORITHMS: &[&str] = &["hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    pub fn from_name(name: &[u8]) -> Option<Algorithm> {
        Some(match name {
            b"hmac-sha1" => Algorithm::Sha1,
            b"hmac-sha256" => Algorithm::Sha256,
            b"hmac-sha384" => Algorithm::Sha384,
            b"hmac-sha512" => Algorithm::Sha512,
            _ => return None,
        })
    }

    /// How many there are: [`Algorithm::index`] is below it.
    pub const COUNT: usize = 4;

    /// A place in a table of one entry per algorithm.
    pub fn index(self) -> usize {
        self as usize
    }

    /// `secret` keyed for this algorithm (ring's HMAC: SHA-1 is Kong's, kept for compatibility).
    pub fn key(self, secret: &[u8]) -> ring::hmac::Key {
        use ring::hmac;
        let algorithm = match self {
            Algorithm::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            Algorithm::Sha256 => hmac::HMAC_SHA256,
            Algorithm::Sha384 => hmac::HMAC_SHA384,
            Algorithm::Sha512 => hmac::HMAC_SHA512,
        };
        hmac::Key::new(algorithm, secret)
    }
}

/// Room for any signature that can match (SHA-512's 64 bytes) and for what base64 reserves beyond it.
pub const LONGEST_SIGNATURE: usize = 128;

/// The base64 signature as sent (padding optional, as nginx decodes it), decoded into `out`; None when it
/// is not base64, or too long to be any algorithm's (either way it cannot match).
pub fn decode_signature<'o>(
    signature: &[u8],
    out: &'o mut [u8; LONGEST_SIGNATURE],
) -> Option<&'o [u8]> {
    const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let len = LENIENT.decode_slice(signature, out).ok()?;
    Some(&out[..len])
}

/// The first value of a request header by a name as the client wrote it (any case), as Kong reads it.
fn header<'h>(headers: &'h HeaderMap, name: &[u8]) -> Option<&'h [u8]> {
    let name = http::HeaderName::from_bytes(name).ok()?;
    headers.get(name).map(|v| v.as_bytes())
}

/// What Kong signs: for each listed name, `name: value` of the request's header; without such a header,
/// `request-line` stands for `METHOD /path?query HTTP/x.y`, `@request-target` for `method /path?query`,
/// and any other name for `name:`. Lines are joined by `\n`.
pub fn signing_string(params: &Params<'_>, request: &http::request::Parts) -> Vec<u8> {
    let target = request
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .as_bytes();
    let mut out = Vec::with_capacity(128);
    for (i, name) in params.header_names().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        match header(&request.headers, name) {
            Some(value) => {
                out.extend_from_slice(name);
                out.extend_from_slice(b": ");
                out.extend_from_slice(value);
            }
            None if name == b"request-line" => {
                out.extend_from_slice(request.method.as_str().as_bytes());
                out.push(b' ');
                out.extend_from_slice(target);
                out.extend_from_slice(b" HTTP/");
                out.extend_from_slice(version(request.version).as_bytes());
            }
            None if name == b"@request-target" => {
                out.extend_from_slice(b"@request-target: ");
                out.extend(
                    request
                        .method
                        .as_str()
                        .bytes()
                        .map(|b| b.to_ascii_lowercase()),
                );
                out.push(b' ');
                out.extend_from_slice(target);
            }
            None => {
                out.extend_from_slice(name);
                out.push(b':');
            }
        }
    }
    out
}

/// The version as Kong formats it (`%.01f`): `1.0`, `1.1`, `2.0`.
fn version(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2.0",
        http::Version::HTTP_3 => "3.0",
        _ => "1.1",
    }
}

/// Whether the request's `X-Date`, else its `Date`, is a valid HTTP date within `skew` seconds of `now`
/// (seconds since the epoch).
pub fn date_within(headers: &HeaderMap, skew: f64, now: u64) -> bool {
    let within = |name: &HeaderName| {
        let Some(text) = headers.get(name).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Ok(at) = httpdate::parse_http_date(text) else {
            return false;
        };
        let at = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        (now.abs_diff(at) as f64) <= skew
    };
    const X_DATE: HeaderName = HeaderName::from_static("x-date");
    within(&X_DATE) || within(&http::header::DATE)
}

/// `validate_request_body`: the `Digest` header is `SHA-256=` and the base64 SHA-256 of the body; without
/// a `Digest`, only an empty body passes.
pub fn digest_matches(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(received) = headers.get("digest") else {
        return body.is_empty();
    };
    let mut expected = b"SHA-256=".to_vec();
    let hash = sha2::Sha256::digest(body);
    expected.extend_from_slice(
        base64::engine::general_purpose::STANDARD
            .encode(hash)
            .as_bytes(),
    );
    subtle::ConstantTimeEq::ct_eq(received.as_bytes(), &expected[..]).into()
}
