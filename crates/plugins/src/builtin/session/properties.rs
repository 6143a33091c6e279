//! The `Session-*` headers lua-resty-session can send for a session (`request_headers` upstream,
//! `response_headers` to the client): `id`, `audience`, `subject`, `timeout` (the nearest of the three), and
//! what is left of the `idling-timeout`, `rolling-timeout` and `absolute-timeout`. Made in `access` for an
//! opened session and in `header_filter` after a save.

use super::codec::Header;
use super::state::{Session, Settings};
use base64::Engine;

impl Settings {
    /// The `Session-*` headers `names` ask for (`id`, `audience`, `subject`, `timeout`, `idling-timeout`,
    /// `rolling-timeout`, `absolute-timeout`), for an opened or saved session.
    pub fn headers(&self, s: &Session, names: &[String]) -> Vec<(&'static str, String)> {
        let Some(meta) = s.meta() else {
            return Vec::new();
        };
        let t = self.timeouts;
        let (absolute, rolling, idling) = meta.elapsed();
        let left = |timeout: f64, elapsed: f64| (timeout != 0.0).then_some(timeout - elapsed);
        let entry = s.entry();
        names
            .iter()
            .filter_map(|name| {
                let (header, value) = match name.as_str() {
                    "id" => ("session-id", Some(session_id(&meta.header))),
                    "audience" => ("session-audience", entry[1].as_str().map(String::from)),
                    "subject" => ("session-subject", entry[2].as_str().map(String::from)),
                    "timeout" => {
                        let all = [
                            left(t.idling, idling),
                            left(t.rolling, rolling),
                            left(t.absolute, absolute),
                        ];
                        let min = all.into_iter().flatten().reduce(f64::min);
                        ("session-timeout", min.map(number))
                    }
                    "idling-timeout" => {
                        ("session-idling-timeout", left(t.idling, idling).map(number))
                    }
                    "rolling-timeout" => (
                        "session-rolling-timeout",
                        left(t.rolling, rolling).map(number),
                    ),
                    "absolute-timeout" => (
                        "session-absolute-timeout",
                        left(t.absolute, absolute).map(number),
                    ),
                    _ => return None,
                };
                value.map(|v| (header, v))
            })
            .collect()
    }
}

/// The session id as the `Session-Id` header gives it (base64url).
fn session_id(header: &Header) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header.sid())
}

/// A number as Lua prints it: integral values without a fraction.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}
