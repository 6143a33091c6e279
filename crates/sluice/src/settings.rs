//! Node settings, with Kong's `kong.conf` names.
//!
//! Precedence, lowest to highest: built-in defaults, the conf file (`-c sluice.conf`, Kong's `key = value`
//! format), `SLUICE_<NAME>` environment variables (Kong's `KONG_<NAME>`), then command-line flags.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every setting the node reads. Values stay strings here; the parts that use them parse them (e.g. the proxy
/// parses `proxy_listen`) so the errors name the setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub proxy_listen: String,
    pub admin_listen: String,
    pub status_listen: String,
    /// Kong's `stream_listen` (`off` by default), parsed by the proxy.
    pub stream_listen: String,
    pub declarative_config: Option<PathBuf>,
    pub prefix: PathBuf,
    pub worker_threads: usize,
    pub log_level: String,
    pub trusted_ips: String,
    pub headers: String,
    pub lmdb_environment_path: PathBuf,
    pub lmdb_map_size: u64,
    /// Kong's `mem_cache_size`: the bound of each of proxy-cache's memory stores (128m).
    pub mem_cache_size: u64,
    pub database: String,
    /// How to reach PostgreSQL, when `database = postgres`.
    pub pg: Option<sluice_db::PgSettings>,
    /// Certificate and key files (comma lists of up to two: RSA and ECDSA) for the proxy's `ssl` listeners;
    /// unset means the generated default under `<prefix>/ssl`.
    pub ssl_cert: Option<String>,
    pub ssl_cert_key: Option<String>,
    /// The same for `admin_listen ... ssl` and `status_listen ... ssl`.
    pub admin_ssl_cert: Option<String>,
    pub admin_ssl_cert_key: Option<String>,
    pub status_ssl_cert: Option<String>,
    pub status_ssl_cert_key: Option<String>,
    /// Kong's `dns_*` settings, parsed by the proxy.
    pub dns: sluice_proxy::DnsSettings,
    /// `role` and the `cluster_*` settings (hybrid mode).
    pub cluster: crate::hybrid::ClusterSettings,
    /// Client connections: header and keep-alive timeouts, connections per worker.
    pub client: client::ClientSettings,
    /// Upstream connections kept between requests: `upstream_keepalive_pool_size` (512),
    /// `upstream_keepalive_max_requests` (10000) and `upstream_keepalive_idle_timeout` (60 s); 0 turns
    /// each limit off (the pool size: keeps no connection).
    pub upstream_keepalive: sluice_proxy::Keepalive,
    /// Warnings for the conf file's Kong settings this build does not read (logged at start).
    pub ignored: Vec<String>,
}

/// Known setting names (for rejecting typos in conf files and env).
const KNOWN: &[&str] = &[
    "proxy_listen",
    "admin_listen",
    "status_listen",
    "stream_listen",
    "declarative_config",
    "prefix",
    "worker_threads",
    "nginx_worker_processes",
    "log_level",
    "trusted_ips",
    "headers",
    "lmdb_environment_path",
    "lmdb_map_size",
    "mem_cache_size",
    "database",
    "pg_host",
    "pg_port",
    "pg_user",
    "pg_password",
    "pg_database",
    "pg_schema",
    "pg_ssl",
    "pg_ssl_verify",
    "pg_timeout",
    "pg_pool_size",
    "ssl_cert",
    "ssl_cert_key",
    "admin_ssl_cert",
    "admin_ssl_cert_key",
    "status_ssl_cert",
    "status_ssl_cert_key",
    "dns_resolver",
    "dns_hostsfile",
    "dns_order",
    "dns_valid_ttl",
    "dns_stale_ttl",
    "dns_not_found_ttl",
    "dns_error_ttl",
    "upstream_keepalive_pool_size",
    "upstream_keepalive_max_requests",
    "upstream_keepalive_idle_timeout",
];

/// A setting this build reads.
fn known(name: &str) -> bool {
    KNOWN.contains(&name)
        || crate::hybrid::SETTINGS.contains(&name)
        || client::SETTINGS.contains(&name)
}

impl Settings {
    /// Reads the conf file (if any) and the environment, and applies `overrides` (from flags) last.
    pub fn load(conf: Option<&Path>, overrides: &[(&str, String)]) -> Result<Settings> {
        let mut values = BTreeMap::new();
        let mut ignored = Vec::new();
        if let Some(path) = conf {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let (read, skipped) =
                parse_conf(&text).with_context(|| format!("in {}", path.display()))?;
            values.extend(read);
            ignored = skipped
                .into_iter()
                .map(|w| format!("{}: {w}", path.display()))
                .collect();
        }
        for (key, value) in std::env::vars() {
            if let Some(name) = key.strip_prefix("SLUICE_") {
                let name = name.to_ascii_lowercase();
                if known(&name) {
                    values.insert(name, value);
                }
            }
        }
        for (k, v) in overrides {
            values.insert((*k).to_string(), v.clone());
        }
        let mut settings = Settings::from_values(&values)?;
        settings.ignored = ignored;
        Ok(settings)
    }

    fn from_values(values: &BTreeMap<String, String>) -> Result<Settings> {
        let get = |k: &str| {
            values
                .get(k)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let prefix = PathBuf::from(get("prefix").unwrap_or_else(|| "/usr/local/sluice".into()));
        let workers = get("worker_threads").or_else(|| get("nginx_worker_processes"));
        let worker_threads = match workers.as_deref() {
            None | Some("auto") => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            Some(n) => match n.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => bail!("worker_threads: expected a positive number or 'auto', got '{n}'"),
            },
        };
        let lmdb_environment_path = match get("lmdb_environment_path") {
            Some(p) if Path::new(&p).is_absolute() => PathBuf::from(p),
            Some(p) => prefix.join(p),
            None => prefix.join("dbless.lmdb"),
        };
        let lmdb_map_size = parse_size(&get("lmdb_map_size").unwrap_or_else(|| "2048m".into()))
            .context("lmdb_map_size")?;
        let mem_cache_size = parse_size(&get("mem_cache_size").unwrap_or_else(|| "128m".into()))
            .context("mem_cache_size")?;
        let database = get("database").unwrap_or_else(|| "off".into());
        let pg = match database.as_str() {
            "off" => None,
            "postgres" => Some(pg::from_values(&get)?),
            other => bail!("database: expected 'off' (DB-less) or 'postgres', got '{other}'"),
        };
        let log_level = get("log_level").unwrap_or_else(|| "notice".into());
        let dns = sluice_proxy::DnsSettings::from_kong(get).map_err(anyhow::Error::msg)?;
        let cluster = crate::hybrid::ClusterSettings::from_values(&get, &database)?;
        let client = client::ClientSettings::from_values(&get)?;
        let upstream_keepalive = sluice_proxy::Keepalive {
            pool_size: number(&get, "upstream_keepalive_pool_size", 512)? as usize,
            max_requests: number(&get, "upstream_keepalive_max_requests", 10_000)?
                .try_into()
                .context("upstream_keepalive_max_requests: too large")?,
            idle_timeout: Duration::from_secs(number(&get, "upstream_keepalive_idle_timeout", 60)?),
        };
        Ok(Settings {
            proxy_listen: get("proxy_listen")
                .unwrap_or_else(|| "0.0.0.0:8000, 0.0.0.0:8443 http2 ssl".into()),
            admin_listen: get("admin_listen").unwrap_or_else(|| "127.0.0.1:8001".into()),
            status_listen: get("status_listen").unwrap_or_else(|| "127.0.0.1:8007".into()),
            stream_listen: get("stream_listen").unwrap_or_else(|| "off".into()),
            declarative_config: get("declarative_config").map(PathBuf::from),
            prefix,
            worker_threads,
            log_level,
            trusted_ips: get("trusted_ips").unwrap_or_default(),
            headers: get("headers")
                .unwrap_or_else(|| "server_tokens, latency_tokens, X-Kong-Request-Id".into()),
            lmdb_environment_path,
            lmdb_map_size,
            mem_cache_size,
            database,
            pg,
            ssl_cert: get("ssl_cert"),
            ssl_cert_key: get("ssl_cert_key"),
            admin_ssl_cert: get("admin_ssl_cert"),
            admin_ssl_cert_key: get("admin_ssl_cert_key"),
            status_ssl_cert: get("status_ssl_cert"),
            status_ssl_cert_key: get("status_ssl_cert_key"),
            dns,
            cluster,
            client,
            upstream_keepalive,
            ignored: Vec::new(),
        })
    }

    /// The settings as Kong's `GET /` `configuration` object shows them.
    pub fn to_json(&self) -> serde_json::Value {
        let mut json = serde_json::json!({
            "proxy_listen": self.proxy_listen.split(',').map(str::trim).collect::<Vec<_>>(),
            "admin_listen": self.admin_listen.split(',').map(str::trim).collect::<Vec<_>>(),
            "status_listen": self.status_listen.split(',').map(str::trim).collect::<Vec<_>>(),
            "stream_listen": self.stream_listen.split(',').map(str::trim).collect::<Vec<_>>(),
            "declarative_config": self.declarative_config,
            "prefix": self.prefix,
            "worker_threads": self.worker_threads,
            "log_level": self.log_level,
            "trusted_ips": split_list(&self.trusted_ips),
            "headers": split_list(&self.headers),
            "lmdb_environment_path": self.lmdb_environment_path,
            "lmdb_map_size": self.lmdb_map_size,
            "mem_cache_size": self.mem_cache_size,
            "database": self.database,
            "ssl_cert": self.ssl_cert,
            "admin_ssl_cert": self.admin_ssl_cert,
            "status_ssl_cert": self.status_ssl_cert,
            "role": self.cluster.role.as_str(),
            "upstream_keepalive_pool_size": self.upstream_keepalive.pool_size,
            "upstream_keepalive_max_requests": self.upstream_keepalive.max_requests,
            "upstream_keepalive_idle_timeout": self.upstream_keepalive.idle_timeout.as_secs(),
            "router_flavor": "traditional_compatible",
        });
        if let Some(all) = json.as_object_mut() {
            for (name, setting) in [
                ("proxy_listeners", &self.proxy_listen),
                ("admin_listeners", &self.admin_listen),
                ("status_listeners", &self.status_listen),
            ] {
                all.insert(name.into(), listeners(setting));
            }
        }
        if let (Some(all), Some(pg)) = (json.as_object_mut(), &self.pg) {
            all.extend(pg::to_json(pg));
        }
        if let (Some(all), serde_json::Value::Object(dns)) =
            (json.as_object_mut(), self.dns.to_json())
        {
            all.extend(dns);
        }
        json
    }
}

/// A listen setting as Kong's `configuration.*_listeners` shows it (Kong Manager reads them).
fn listeners(setting: &str) -> serde_json::Value {
    let parsed = sluice_proxy::parse_listen(setting).unwrap_or_default();
    parsed
        .iter()
        .map(|l| {
            serde_json::json!({
                "ip": l.addr.ip().to_string(),
                "port": l.addr.port(),
                "ssl": l.ssl,
                "http2": l.http2,
                "backlog": l.backlog,
                "listener": l.addr.to_string() + if l.ssl { " ssl" } else { "" },
            })
        })
        .collect()
}

/// A setting that is a whole number 0 or more, `default` when unset.
pub fn number(get: &dyn Fn(&str) -> Option<String>, name: &str, default: u64) -> Result<u64> {
    match get(name) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .with_context(|| format!("{name}: expected a number, got '{v}'")),
    }
}

/// Splits a comma-separated setting into trimmed, non-empty items.
pub fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Parses Kong's conf format: `name = value` lines, `#` comments (a `\#` is a literal `#`). A Kong
/// setting this build does not read is left out, and named in the warnings [`Settings::ignored`]
/// carries; a name neither Kong nor Sluice knows is refused.
fn parse_conf(text: &str) -> Result<(BTreeMap<String, String>, Vec<String>)> {
    let mut out = BTreeMap::new();
    let mut ignored = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = strip_comment(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            bail!("line {}: expected 'name = value'", n + 1);
        };
        let k = k.trim().to_ascii_lowercase();
        if !known(&k) {
            if kong_names::is_kongs(&k) {
                ignored.push(format!(
                    "line {}: '{k}' is a Kong setting Sluice does not read; ignored",
                    n + 1
                ));
                continue;
            }
            bail!(
                "line {}: unknown setting '{k}' (neither Kong's nor Sluice's)",
                n + 1
            );
        }
        out.insert(k, v.trim().to_string());
    }
    Ok((out, ignored))
}

fn strip_comment(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'#') => {
                out.push('#');
                chars.next();
            }
            '#' => break,
            c => out.push(c),
        }
    }
    out
}

/// Parses Kong's (and nginx's) sizes: `2048m`, `1g`, `512k` (either case), or plain bytes.
fn parse_size(s: &str) -> Result<u64> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mult) = match s.chars().last() {
        Some('k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('m') => (&s[..s.len() - 1], 1 << 20),
        Some('g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s.as_str(), 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .with_context(|| format!("expected a size like 2048m, got '{s}'"))?;
    n.checked_mul(mult)
        .with_context(|| format!("the size '{s}' is too large"))
}

pub mod client;
mod kong_names;
mod pg;
#[cfg(test)]
mod tests;
