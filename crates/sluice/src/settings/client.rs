//! How long and how many client connections a worker keeps: the nginx directives Kong users set through
//! Kong's `nginx_*` injection, read under the same names.
//!
//! - `nginx_http_client_header_timeout` (nginx: 60s): a new connection's first request head.
//! - `nginx_http_keepalive_timeout` (nginx: 75s): an idle keep-alive connection after a response; `0`
//!   turns keep-alive off.
//! - `nginx_events_worker_connections` (Kong: `auto`, the open-files limit): client connections per worker;
//!   one more is accepted and closed at once.

use anyhow::{bail, Context, Result};
use std::time::Duration;

/// The names read here.
pub const SETTINGS: &[&str] = &[
    "nginx_http_client_header_timeout",
    "nginx_http_keepalive_timeout",
    "nginx_events_worker_connections",
];

/// The client-connection settings, with nginx's and Kong's defaults for those unset.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub worker_connections: usize,
}

impl ClientSettings {
    pub fn from_values(get: &dyn Fn(&str) -> Option<String>) -> Result<ClientSettings> {
        let time = |name: &str, default: &str| -> Result<Duration> {
            let value = get(name).unwrap_or_else(|| default.to_string());
            nginx_time(&value).with_context(|| format!("{name}: '{value}'"))
        };
        let worker_connections = match get("nginx_events_worker_connections").as_deref() {
            None | Some("auto") => open_files_limit(),
            Some(n) => match n.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => bail!("nginx_events_worker_connections: expected a positive number or 'auto', got '{n}'"),
            },
        };
        Ok(ClientSettings {
            header_timeout: time("nginx_http_client_header_timeout", "60s")?,
            keepalive_timeout: time("nginx_http_keepalive_timeout", "75s")?,
            worker_connections,
        })
    }
}

/// nginx's time syntax: a number with an optional unit (`ms`, `s`, `m`, `h`, `d`; seconds without one),
/// or several of them (`1m30s`).
pub fn nginx_time(text: &str) -> Result<Duration> {
    let text = text.trim();
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        bail!("expected a time like 60s");
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            bail!("expected a time like 60s, 500ms or 1m");
        }
        let n: u64 = rest[..digits].parse()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let ms = match &rest[..unit] {
            "ms" => 1,
            "" | "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            other => bail!("unknown time unit '{other}'"),
        };
        total += Duration::from_millis(n.saturating_mul(ms));
        rest = &rest[unit..];
    }
    Ok(total)
}

/// Kong's `auto`: the process's open-files limit.
fn open_files_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse().ok()
        })
        .unwrap_or(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_times_read_as_nginx_reads_them() {
        for (text, ms) in [
            ("60s", 60_000),
            ("75", 75_000),
            ("500ms", 500),
            ("1m30s", 90_000),
            ("0", 0),
        ] {
            assert_eq!(
                nginx_time(text).unwrap(),
                Duration::from_millis(ms),
                "{text}"
            );
        }
        for bad in ["", "s", "10x", "-1", "1.5s"] {
            assert!(nginx_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_are_nginx_and_kong_defaults() {
        let s = ClientSettings::from_values(&|_| None).unwrap();
        assert_eq!(s.header_timeout, Duration::from_secs(60));
        assert_eq!(s.keepalive_timeout, Duration::from_secs(75));
        assert!(s.worker_connections >= 1);
        let bad = ClientSettings::from_values(&|k| {
            (k == "nginx_events_worker_connections").then(|| "none".to_string())
        });
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("nginx_events_worker_connections"));
    }
}
