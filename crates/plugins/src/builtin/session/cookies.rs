//! Session cookies on the wire: finding them in the request's `Cookie` headers, the `Set-Cookie` lines of
//! a save or a logout (with lua-resty-session's attributes), and splitting a large session over up to 9
//! cookies of at most 4 KB each (`session`, `session2`, ... `session9`). Used by the session plugin's
//! `access` (reading) and by every save, touch and logout (writing).

use super::codec::HEADER_ENCODED_SIZE;
use http::{HeaderMap, HeaderValue};

const MAX_COOKIE_SIZE: usize = 4096;
const MAX_COOKIES: usize = 9;
const EXPIRED: &str = "; Expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0";
/// The longest `Max-Age` browsers keep (400 days), lua-resty-session's cap for `remember` cookies.
const MAX_TTL: u64 = 34_560_000;

/// How many cookies a payload of `data_size` base64 characters takes under `name`.
pub(super) fn chunks(name: &str, data_size: usize) -> Result<usize, &'static str> {
    let limit = MAX_COOKIES * MAX_COOKIE_SIZE;
    let mut needed = name.len() + 1 + HEADER_ENCODED_SIZE + data_size;
    for n in 1..=MAX_COOKIES {
        if n > 1 {
            needed += name.len() + 2;
        }
        if needed > limit {
            break;
        }
        if needed <= MAX_COOKIE_SIZE * n {
            return Ok(n);
        }
    }
    Err("cookie size limit exceeded")
}

/// The part of a (base64, so ASCII) payload the first cookie carries after the header.
fn first_chunk<'p>(name: &str, payload: &'p str) -> &'p str {
    let room = MAX_COOKIE_SIZE.saturating_sub(HEADER_ENCODED_SIZE + name.len() + 1);
    &payload[..payload.len().min(room)]
}

/// The payload of a session whose first cookie is `first` (header included), joined from its chunks.
pub(super) fn payload(
    headers: &HeaderMap,
    name: &str,
    first: &str,
    data_size: usize,
) -> Result<String, &'static str> {
    let n = chunks(name, data_size)?;
    let mut payload = first.get(HEADER_ENCODED_SIZE..).unwrap_or("").to_string();
    for i in 2..=n {
        let chunk = super::super::auth::cookie(headers, &format!("{name}{i}"))
            .ok_or("missing session cookie chunk")?;
        payload.push_str(chunk);
    }
    Ok(payload)
}

/// The attributes every session cookie carries, from the plugin's `cookie_*` settings.
pub(super) struct Attributes {
    /// `; Domain=..; Path=..; SameSite=..[; Secure][; HttpOnly]`.
    pub flags: String,
}

impl Attributes {
    pub fn new(
        domain: Option<&str>,
        path: &str,
        same_site: &str,
        secure: bool,
        http_only: bool,
    ) -> Attributes {
        let mut flags = String::new();
        if let Some(d) = domain.filter(|d| !d.is_empty() && *d != "localhost") {
            flags.push_str("; Domain=");
            flags.push_str(d);
        }
        flags.push_str("; Path=");
        flags.push_str(path);
        flags.push_str("; SameSite=");
        flags.push_str(same_site);
        // A `SameSite=None` cookie is always `Secure` (browsers refuse it otherwise).
        if secure || same_site == "None" {
            flags.push_str("; Secure");
        }
        if http_only {
            flags.push_str("; HttpOnly");
        }
        Attributes { flags }
    }
}

/// `Set-Cookie` lines to send: (cookie name, whole line).
#[derive(Clone, Default)]
pub(super) struct Outgoing(pub Vec<(String, String)>);

impl Outgoing {
    /// A session cookie (`header` + `payload`) split over as many cookies as it needs; a `remember` cookie
    /// (created at `creation`, kept `max_age` seconds) gets `Expires` and `Max-Age`. Chunks an earlier
    /// version of the session had beyond the new count (`old_chunks`) are expired.
    pub fn session(
        &mut self,
        name: &str,
        header: &str,
        payload: &str,
        attrs: &Attributes,
        persistent: Option<(u64, u64)>,
        old_chunks: usize,
    ) -> Result<(), &'static str> {
        let n = chunks(name, payload.len())?;
        let lifetime = persistent.map_or(String::new(), |(creation, max_age)| {
            let max_age = if max_age == 0 || max_age > MAX_TTL {
                MAX_TTL
            } else {
                max_age
            };
            let expires =
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(creation + max_age);
            format!(
                "; Expires={}; Max-Age={max_age}",
                httpdate::fmt_http_date(expires)
            )
        });
        let first = first_chunk(name, payload);
        let mut rest = &payload[first.len()..];
        let flags = &attrs.flags;
        self.add(name, format!("{name}={header}{first}{flags}{lifetime}"));
        for i in 2..=n {
            let chunk_name = format!("{name}{i}");
            let room = MAX_COOKIE_SIZE.saturating_sub(name.len() + 2);
            let (chunk, tail) = rest.split_at(rest.len().min(room));
            rest = tail;
            self.add(
                &chunk_name,
                format!("{chunk_name}={chunk}{flags}{lifetime}"),
            );
        }
        for i in n + 1..=old_chunks {
            self.expire(&format!("{name}{i}"), attrs);
        }
        Ok(())
    }

    /// Only the first cookie of a session, after a touch (its other chunks are unchanged).
    pub fn first(&mut self, name: &str, header: &str, payload: &str, attrs: &Attributes) {
        let first = first_chunk(name, payload);
        self.add(name, format!("{name}={header}{first}{}", attrs.flags));
    }

    /// Clears a session's cookies (`chunks` of them) on the client.
    pub fn clear(&mut self, name: &str, chunks: usize, attrs: &Attributes) {
        self.expire(name, attrs);
        for i in 2..=chunks {
            self.expire(&format!("{name}{i}"), attrs);
        }
    }

    fn expire(&mut self, name: &str, attrs: &Attributes) {
        self.add(name, format!("{name}={}{EXPIRED}", attrs.flags));
    }

    fn add(&mut self, name: &str, line: String) {
        self.0.retain(|(n, _)| n != name);
        self.0.push((name.to_string(), line));
    }

    /// Puts the lines on a response, each replacing a `Set-Cookie` of the same cookie name already there.
    pub fn apply(self, headers: &mut HeaderMap) {
        if self.0.is_empty() {
            return;
        }
        let names: Vec<&str> = self.0.iter().map(|(n, _)| n.as_str()).collect();
        let kept: Vec<HeaderValue> = headers
            .get_all(http::header::SET_COOKIE)
            .iter()
            .filter(|v| {
                let line = v.to_str().unwrap_or("");
                let name = line.split_once('=').map_or(line, |(n, _)| n);
                !names.contains(&name)
            })
            .cloned()
            .collect();
        headers.remove(http::header::SET_COOKIE);
        let lines = self.0.into_iter().map(|(_, line)| line);
        for value in kept
            .into_iter()
            .chain(lines.filter_map(|l| HeaderValue::from_str(&l).ok()))
        {
            headers.append(http::header::SET_COOKIE, value);
        }
    }
}

#[cfg(test)]
mod tests;
