//! hmac-auth's request-side pieces, run in `access`: reading Kong's `hmac username=.., algorithm=..,
//! headers=.., signature=..` parameters, the algorithms, the signing string Kong builds from the listed
//! headers (with the `request-line` and `@request-target` pseudo headers), the constant-time check of the
//! signature, the `Date`/`X-Date` clock skew and the body's `Digest`.

use base64::Engine;
use hmac::{Hmac, Mac};
use http::HeaderMap;
use regex::bytes::Regex;
use sha2::Digest;
use std::sync::LazyLock;

/// Kong's pattern for the parameters, unanchored, greedy, `.` stopping at line ends (as PCRE without `s`).
/// The bytes engine picks the same match as PCRE's backtracking does for this pattern (leftmost-first).
static PARAMS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?-u)\s*[Hh]mac\s*username="(.+)",\s*algorithm="(.+)",\s*headers="(.+)",\s*signature="(.+)""#,
    )
    .expect("the hmac parameter pattern compiles")
});

/// The parameters of one `Authorization` or `Proxy-Authorization` value.
#[derive(Debug, PartialEq, Eq)]
pub struct Params<'a> {
    pub username: &'a [u8],
    pub algorithm: &'a [u8],
    /// The `headers` list as given: names separated by single spaces.
    pub headers: &'a [u8],
    pub signature: &'a [u8],
}

impl<'a> Params<'a> {
    /// The parameters when `value` has them all (Kong then takes them; otherwise it has none).
    pub fn parse(value: &'a [u8]) -> Option<Params<'a>> {
        let m = PARAMS.captures(value)?;
        let part = |i| m.get(i).map_or(&b""[..], |g| g.as_bytes());
        Some(Params {
            username: part(1),
            algorithm: part(2),
            headers: part(3),
            signature: part(4),
        })
    }

    /// The listed header names, in order (Kong splits on each single space).
    pub fn header_names(&self) -> impl Iterator<Item = &'a [u8]> {
        self.headers.split(|b| *b == b' ')
    }
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

    /// Whether `signature` (decoded) is the HMAC of `data` with `secret`, compared in constant time.
    pub fn verify(self, secret: &[u8], data: &[u8], signature: &[u8]) -> bool {
        fn check<M: Mac + hmac::digest::KeyInit>(secret: &[u8], data: &[u8], sig: &[u8]) -> bool {
            let Ok(mut mac) = <M as Mac>::new_from_slice(secret) else {
                return false;
            };
            mac.update(data);
            mac.verify_slice(sig).is_ok()
        }
        match self {
            Algorithm::Sha1 => check::<Hmac<sha1::Sha1>>(secret, data, signature),
            Algorithm::Sha256 => check::<Hmac<sha2::Sha256>>(secret, data, signature),
            Algorithm::Sha384 => check::<Hmac<sha2::Sha384>>(secret, data, signature),
            Algorithm::Sha512 => check::<Hmac<sha2::Sha512>>(secret, data, signature),
        }
    }
}

/// The base64 signature as sent (padding optional, as nginx decodes it); None when it is not base64.
pub fn decode_signature(signature: &[u8]) -> Option<Vec<u8>> {
    const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    LENIENT.decode(signature).ok()
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
    let within = |name: &str| {
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
    within("x-date") || within("date")
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
