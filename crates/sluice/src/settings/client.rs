//! How long and how many client connections a worker keeps: the nginx directives Kong users set through
//! Kong's `nginx_*` injection, read under the same names.
//!
//! - `nginx_http_client_header_timeout` (nginx: 60s): a new connection's first request head.
//! - `nginx_http_keepalive_timeout` (nginx: 75s): an idle keep-alive connection after a response; `0`
//!   turns keep-alive off.
//! - `nginx_http_client_body_timeout` (nginx: 60s): the longest wait between two reads of a request body;
//!   past it the request gets 408 and the connection (h2: the stream) ends.
//! - `nginx_http_send_timeout` (nginx: 60s): the longest wait between two writes to a client that stopped
//!   reading a response; past it the connection is closed.
//!
//!   Both may also be set as `nginx_proxy_*` (Kong injects those into the proxy's `server` block, which
//!   overrides the `http` block in nginx): that name wins when both are set.
//! - `nginx_events_worker_connections` (Kong: `auto`, the open-files limit): client connections per worker;
//!   one more is accepted and closed at once.
//! - `nginx_http_client_body_buffer_size` (Kong: 8k): the most of a buffered request body held in memory;
//!   a larger one goes to a temporary file under the prefix's `client_body_temp`.
//! - `nginx_http_client_max_body_size` (Kong: 0, no limit): a larger request body gets 413.
//!
//!   Both may be set as `nginx_proxy_*` too, and under Kong's older names (`client_body_buffer_size`,
//!   `client_max_body_size`).
//! - `nginx_proxy_proxy_buffers` (nginx: `8 4k`): the most of a buffered response body held in memory;
//!   more goes to a temporary file under the prefix's `proxy_temp`, up to
//!   `nginx_proxy_proxy_max_temp_file_size` (nginx: 1024m; 0: no file). Also read as `nginx_location_*`
//!   (Kong's injection into its proxy location, which wins) and `nginx_http_*`.
//! - `nginx_http_large_client_header_buffers` (nginx: `4 8k`): a request line longer than one buffer gets
//!   414, a field line longer than one buffer or a head longer than all of them 400.

use super::parse_size;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// The names read here.
pub const SETTINGS: &[&str] = &[
    "nginx_http_client_header_timeout",
    "nginx_http_keepalive_timeout",
    "nginx_http_client_body_timeout",
    "nginx_proxy_client_body_timeout",
    "nginx_http_send_timeout",
    "nginx_proxy_send_timeout",
    "nginx_events_worker_connections",
    "nginx_http_large_client_header_buffers",
    "nginx_http_client_body_buffer_size",
    "nginx_proxy_client_body_buffer_size",
    "client_body_buffer_size",
    "nginx_http_client_max_body_size",
    "nginx_proxy_client_max_body_size",
    "client_max_body_size",
    "nginx_location_proxy_buffers",
    "nginx_proxy_proxy_buffers",
    "nginx_http_proxy_buffers",
    "nginx_location_proxy_max_temp_file_size",
    "nginx_proxy_proxy_max_temp_file_size",
    "nginx_http_proxy_max_temp_file_size",
];

/// The client-connection settings, with nginx's and Kong's defaults for those unset.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub body_timeout: Duration,
    pub send_timeout: Duration,
    pub worker_connections: usize,
    pub head_limits: sluice_h1::HeadLimits,
    /// `client_body_buffer_size`, bytes.
    pub body_buffer_size: usize,
    /// `client_max_body_size`, bytes; 0: no limit.
    pub max_body_size: u64,
    /// `proxy_buffers`, number × size, bytes.
    pub proxy_buffers: usize,
    /// `proxy_max_temp_file_size`, bytes; 0: no file.
    pub proxy_max_temp_file_size: u64,
}

impl ClientSettings {
    pub fn from_values(get: &dyn Fn(&str) -> Option<String>) -> Result<ClientSettings> {
        let time = |name: &str, default: &str| -> Result<Duration> {
            let value = get(name).unwrap_or_else(|| default.to_string());
            nginx_time(&value).with_context(|| format!("{name}: '{value}'"))
        };
        // `nginx_proxy_<directive>` (the proxy's server block) over `nginx_http_<directive>`.
        let server_time = |directive: &str, default: &str| -> Result<Duration> {
            let server = format!("nginx_proxy_{directive}");
            match get(&server) {
                Some(_) => time(&server, default),
                None => time(&format!("nginx_http_{directive}"), default),
            }
        };
        let worker_connections = match get("nginx_events_worker_connections").as_deref() {
            None | Some("auto") => open_files_limit(),
            Some(n) => match n.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => bail!("nginx_events_worker_connections: expected a positive number or 'auto', got '{n}'"),
            },
        };
        let buffers =
            get("nginx_http_large_client_header_buffers").unwrap_or_else(|| "4 8k".into());
        let head_limits = header_buffers(&buffers)
            .with_context(|| format!("nginx_http_large_client_header_buffers: '{buffers}'"))?;
        // `nginx_proxy_<directive>`, then `nginx_http_<directive>`, then Kong's older bare name.
        let size = |directive: &str, default: &str| -> Result<u64> {
            let names = [
                format!("nginx_proxy_{directive}"),
                format!("nginx_http_{directive}"),
                directive.to_string(),
            ];
            let (name, value) = names
                .iter()
                .find_map(|n| get(n).map(|v| (n.as_str(), v)))
                .unwrap_or((directive, default.to_string()));
            parse_size(&value).with_context(|| format!("{name}: '{value}'"))
        };
        // `nginx_location_<directive>` (Kong's proxy location), then the server and http blocks.
        let location = |directive: &str, default: &str| -> (String, String) {
            ["location", "proxy", "http"]
                .iter()
                .map(|block| format!("nginx_{block}_{directive}"))
                .find_map(|n| get(&n).map(|v| (n, v)))
                .unwrap_or_else(|| (directive.to_string(), default.to_string()))
        };
        let (name, value) = location("proxy_buffers", "8 4k");
        let proxy_buffers = buffers_total(&value).with_context(|| format!("{name}: '{value}'"))?;
        let (name, value) = location("proxy_max_temp_file_size", "1024m");
        let proxy_max_temp_file_size =
            parse_size(&value).with_context(|| format!("{name}: '{value}'"))?;
        Ok(ClientSettings {
            head_limits,
            proxy_buffers,
            proxy_max_temp_file_size,
            body_buffer_size: size("client_body_buffer_size", "8k")? as usize,
            max_body_size: size("client_max_body_size", "0")?,
            header_timeout: time("nginx_http_client_header_timeout", "60s")?,
            keepalive_timeout: time("nginx_http_keepalive_timeout", "75s")?,
            body_timeout: server_time("client_body_timeout", "60s")?,
            send_timeout: server_time("send_timeout", "60s")?,
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

/// nginx's `large_client_header_buffers number size` (`size` in bytes, or with `k` or `m`).
fn header_buffers(text: &str) -> Result<sluice_h1::HeadLimits> {
    let mut words = text.split_whitespace();
    let (Some(number), Some(size), None) = (words.next(), words.next(), words.next()) else {
        bail!("expected a number and a size, like 4 8k");
    };
    let number: usize = number.parse().context("the number of buffers")?;
    let line = parse_size(size).context("the buffer size")? as usize;
    let total = number.saturating_mul(line);
    if number < 2 || line < 64 || total > sluice_h1::MAX_REQUEST_HEAD {
        bail!("expected at least 2 buffers of at least 64 bytes, and at most 1m in all");
    }
    Ok(sluice_h1::HeadLimits { line, total })
}

/// nginx's `number size` buffer directives (`proxy_buffers 8 4k`): their total in bytes.
fn buffers_total(text: &str) -> Result<usize> {
    let mut words = text.split_whitespace();
    let (Some(number), Some(size), None) = (words.next(), words.next(), words.next()) else {
        bail!("expected a number and a size, like 8 4k");
    };
    let number: u64 = number.parse().context("the number of buffers")?;
    let total = number.saturating_mul(parse_size(size)?);
    if total == 0 {
        bail!("expected at least one buffer of at least one byte");
    }
    Ok(total as usize)
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
        assert_eq!(s.body_timeout, Duration::from_secs(60));
        assert_eq!(s.send_timeout, Duration::from_secs(60));
        assert_eq!((s.body_buffer_size, s.max_body_size), (8 * 1024, 0));
        let sized = ClientSettings::from_values(&|k| match k {
            "client_body_buffer_size" => Some("1m".into()),
            "nginx_http_client_max_body_size" => Some("10k".into()),
            "nginx_proxy_client_max_body_size" => Some("2K".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (sized.body_buffer_size, sized.max_body_size),
            (1 << 20, 2048)
        );
        assert_eq!(
            (s.proxy_buffers, s.proxy_max_temp_file_size),
            (32 * 1024, 1 << 30)
        );
        let proxied = ClientSettings::from_values(&|k| match k {
            "nginx_http_proxy_buffers" => Some("4 8k".into()),
            "nginx_location_proxy_buffers" => Some("16 16k".into()),
            "nginx_proxy_proxy_max_temp_file_size" => Some("0".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            (proxied.proxy_buffers, proxied.proxy_max_temp_file_size),
            (256 * 1024, 0)
        );
        let bad = ClientSettings::from_values(&|k| {
            (k == "nginx_proxy_proxy_buffers").then(|| "8".to_string())
        });
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("nginx_proxy_proxy_buffers"));
        let bad = ClientSettings::from_values(&|k| {
            (k == "nginx_http_client_max_body_size").then(|| "lots".to_string())
        });
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("nginx_http_client_max_body_size"));
        let set = ClientSettings::from_values(&|k| match k {
            "nginx_http_client_body_timeout" => Some("5s".into()),
            "nginx_http_send_timeout" => Some("7s".into()),
            "nginx_proxy_send_timeout" => Some("500ms".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(set.body_timeout, Duration::from_secs(5));
        assert_eq!(set.send_timeout, Duration::from_millis(500));
        let bad = ClientSettings::from_values(&|k| {
            (k == "nginx_proxy_client_body_timeout").then(|| "soon".to_string())
        });
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("nginx_proxy_client_body_timeout"));
        assert!(s.worker_connections >= 1);
        assert_eq!(
            s.head_limits,
            sluice_h1::HeadLimits {
                line: 8192,
                total: 32768
            }
        );
        let big = ClientSettings::from_values(&|k| {
            (k == "nginx_http_large_client_header_buffers").then(|| "8 16K".to_string())
        });
        assert_eq!(
            big.unwrap().head_limits,
            sluice_h1::HeadLimits {
                line: 16384,
                total: 131072
            }
        );
        for bad in ["4", "x 8k", "4 8q", "1 8k", "4 8k 1"] {
            let got = ClientSettings::from_values(&|k| {
                (k == "nginx_http_large_client_header_buffers").then(|| bad.to_string())
            });
            assert!(
                got.unwrap_err()
                    .to_string()
                    .contains("large_client_header_buffers"),
                "{bad}"
            );
        }
        let bad = ClientSettings::from_values(&|k| {
            (k == "nginx_events_worker_connections").then(|| "none".to_string())
        });
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("nginx_events_worker_connections"));
    }
}
