//! `policy: redis`: counters shared by every node, exact under any concurrency.
//!
//! Kong reads the usage, then increments in a later step, so concurrent requests on several nodes all see
//! room and all pass (Kong issues #5790, #11846). Here one Lua script checks every configured window and
//! increments them all, or none, in one atomic step on Redis: across any number of nodes the requests let
//! through equal the limit. Keys follow Kong's layout
//! (`ratelimit:<route_id>:<service_id>:<identifier>:<window start, ms>:<period>`), so a mixed Kong/Sluice
//! fleet shares counters; a key expires with its window.
//!
//! Requests that count in the same windows at the same time share one call ([`coalesce`]): the script
//! grants a batch as many counts as the windows have room for.
//!
//! Connections: one multiplexed (pipelining) connection per worker thread and Redis target, made on the
//! first request that needs it and dropped after an I/O error or timeout, so the next request reconnects. A
//! worker never blocks: the request waits on its own future only.

use crate::counters::Counted;
use crate::redis_client::{resp, Connection, Endpoint, Error};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

mod coalesce;

/// Grant a batch of requests as many counts as every window has room for, and add them to every window.
/// KEYS: one per window; ARGV: the limits, then each key's time to live in seconds, then how many
/// requests ask. Returns `{granted, count before...}`; a key made by this call gets its expiry.
const CHECK_AND_COUNT: &str = r"
local n = #KEYS
local granted = tonumber(ARGV[2 * n + 1])
local counts = {}
for i = 1, n do
  counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  local room = tonumber(ARGV[i]) - counts[i]
  if room < granted then granted = room end
end
if granted < 0 then granted = 0 end
if granted > 0 then
  for i = 1, n do
    if redis.call('INCRBY', KEYS[i], granted) == granted then
      redis.call('EXPIRE', KEYS[i], ARGV[n + i])
    end
  end
end
table.insert(counts, 1, granted)
return counts
";

/// Where the counters live, from Kong's `redis` record.
#[derive(Debug, Clone)]
pub struct Target {
    /// `redis[s]://[user:password@]host:port/database`: also the connection cache's key.
    url: String,
    endpoint: Endpoint,
    timeout: Duration,
    /// The check-and-count calls out now, with the requests queued to share the next one.
    in_flight: coalesce::InFlight,
}

/// Kong's `redis` record (the deprecated flat `redis_*` fields are folded into it by the caller).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
pub struct RedisConfig {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub database: Option<i64>,
    pub timeout: Option<u64>,
    pub ssl: Option<bool>,
    pub ssl_verify: Option<bool>,
}

impl Target {
    /// The target of `config`; an error names what is missing.
    pub fn new(config: &RedisConfig) -> Result<Target, String> {
        let host = config
            .host
            .as_deref()
            .filter(|h| !h.is_empty())
            .ok_or("policy 'redis' needs config.redis.host")?;
        let scheme = if config.ssl.unwrap_or(false) {
            "rediss"
        } else {
            "redis"
        };
        let auth = match (&config.username, &config.password) {
            (Some(u), Some(p)) => format!("{}:{}@", encode(u), encode(p)),
            (None, Some(p)) => format!(":{}@", encode(p)),
            _ => String::new(),
        };
        let port = config.port.unwrap_or(6379);
        let db = config.database.unwrap_or(0);
        let bracketed = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let mut url = format!("{scheme}://{auth}{bracketed}:{port}/{db}");
        let verify = config.ssl_verify.unwrap_or(false);
        if config.ssl.unwrap_or(false) && !verify {
            url.push_str("#insecure");
        }
        let tls = match config.ssl.unwrap_or(false) {
            true => Some(sluice_tls::client_config_without_alpn(verify)?),
            false => None,
        };
        Ok(Target {
            url,
            endpoint: Endpoint {
                host: host.to_string(),
                port,
                username: config.username.clone(),
                password: config.password.clone(),
                database: db,
                tls,
            },
            timeout: Duration::from_millis(config.timeout.unwrap_or(2000)),
            in_flight: coalesce::InFlight::default(),
        })
    }
}

/// Percent-encodes a URL userinfo part (the URL is the connection cache's key).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

thread_local! {
    /// This worker's connections, by target URL.
    static CONNECTIONS: RefCell<foldhash::HashMap<String, Connection>> = RefCell::default();
}

/// This worker's cached connection to `target`, if any.
fn cached(target: &Target) -> Option<Connection> {
    CONNECTIONS.with(|m| m.borrow().get(&target.url).cloned())
}

/// A new connection to `target`, cached for this worker's next requests.
async fn connect(target: &Target) -> Result<Connection, Error> {
    let c = target.endpoint.connect().await?;
    CONNECTIONS.with(|m| m.borrow_mut().insert(target.url.clone(), c.clone()));
    Ok(c)
}

/// A key to add to, and how long it is kept.
pub struct Window {
    pub key: String,
    pub ttl_secs: u64,
}

/// A request's windows as the script's arguments after its hash: the number of keys, each key, each limit,
/// each key's time to live, in RESP. Written once per request and copied into the command as one piece;
/// also what requests must share to share a call ([`coalesce`]): the same keys with the same limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyed {
    args: Arc<[u8]>,
    windows: usize,
}

impl Keyed {
    /// `windows`: each window's (key, limit, time to live in seconds).
    pub fn new(windows: &[(&[u8], u64, u64)]) -> Keyed {
        thread_local! {
            /// Where this worker writes the arguments before they get their own allocation.
            static ARGS: RefCell<Vec<u8>> = RefCell::default();
        }
        ARGS.with_borrow_mut(|out| {
            out.clear();
            resp::arg_number(out, windows.len() as u64);
            for (key, _, _) in windows {
                resp::arg(out, key);
            }
            for (_, limit, _) in windows {
                resp::arg_number(out, *limit);
            }
            for (_, _, ttl_secs) in windows {
                resp::arg_number(out, *ttl_secs);
            }
            Keyed {
                args: Arc::from(&out[..]),
                windows: windows.len(),
            }
        })
    }
}

/// Checks and counts one request in every window, atomically (alone, or in a batch of requests for the
/// same windows).
pub async fn check_and_count(target: &Target, windows: &Keyed) -> Result<Counted, String> {
    coalesce::check_and_count(&target.in_flight, windows.args.clone(), |asked| {
        check_and_count_many(target, windows, asked)
    })
    .await
}

/// `EVALSHA` and the script's SHA-1 in hex (sent instead of the script), as the command's first two
/// arguments in RESP: written once per process, copied into each call as one piece.
fn evalsha() -> &'static [u8] {
    use sha1::{Digest, Sha1};
    static HEAD: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let digest = Sha1::digest(CHECK_AND_COUNT.as_bytes());
        let sha: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let mut head = Vec::new();
        resp::arg(&mut head, b"EVALSHA");
        resp::arg(&mut head, sha.as_bytes());
        head
    });
    &HEAD
}

/// The script for `asked` requests: how many were granted and each window's count before. Sent by its
/// hash; a Redis that does not know it yet (`NOSCRIPT`: restarted, flushed) gets the whole script, which
/// it then keeps.
async fn check_and_count_many(
    target: &Target,
    windows: &Keyed,
    asked: u64,
) -> Result<coalesce::Tally, String> {
    let invoke = |script: Option<&'static str>| {
        move |out: &mut Vec<u8>| {
            resp::command(out, 4 + 3 * windows.windows);
            match script {
                None => out.extend_from_slice(evalsha()),
                Some(script) => {
                    resp::arg(out, b"EVAL");
                    resp::arg(out, script.as_bytes());
                }
            }
            out.extend_from_slice(&windows.args);
            resp::arg_number(out, asked);
        }
    };
    let tally = |reply: &[Option<i64>]| {
        (reply.len() == windows.windows + 1)
            .then(|| coalesce::Tally::of(reply))
            .flatten()
            .ok_or_else(|| format!("unexpected reply from redis: {reply:?}"))
    };
    let reply = match call(target, 1, invoke(None), tally).await {
        Err(Error::Reply(e)) if e.starts_with("NOSCRIPT") => {
            call(target, 1, invoke(Some(CHECK_AND_COUNT)), tally).await
        }
        reply => reply,
    };
    reply.map_err(|e| e.to_string())?
}

/// A reply's number as a count (nil and negative as 0).
pub(super) fn count(n: &Option<i64>) -> u64 {
    n.map_or(0, |n| n.max(0) as u64)
}

/// The counts of `keys` (0 for a key that does not exist), in one round trip.
pub async fn counts(target: &Target, keys: &[String]) -> Result<Vec<u64>, String> {
    let encode = |out: &mut Vec<u8>| {
        resp::command(out, 1 + keys.len());
        resp::arg(out, b"MGET");
        for key in keys {
            resp::arg(out, key.as_bytes());
        }
    };
    call(target, 1, encode, |reply| reply.iter().map(count).collect())
        .await
        .map_err(|e| e.to_string())
}

/// Adds `by` to each window's key, setting its expiry when the key is new, in one pipelined round trip.
pub async fn add(target: &Target, windows: &[Window], by: u64) -> Result<(), String> {
    let adds: Vec<(&str, u64, u64)> = windows
        .iter()
        .map(|w| (w.key.as_str(), w.ttl_secs, by))
        .collect();
    add_each(target, &adds).await.map(drop)
}

/// Adds to each `(key, time to live in seconds, by)` (the expiry set when the key has none), in one
/// pipelined round trip; each key's count after it.
pub async fn add_each(target: &Target, adds: &[(&str, u64, u64)]) -> Result<Vec<u64>, String> {
    let encode = |out: &mut Vec<u8>| {
        for (key, ttl_secs, by) in adds {
            resp::command(out, 3);
            resp::arg(out, b"INCRBY");
            resp::arg(out, key.as_bytes());
            resp::arg_number(out, *by);
            resp::command(out, 4);
            resp::arg(out, b"EXPIRE");
            resp::arg(out, key.as_bytes());
            resp::arg_number(out, *ttl_secs);
            resp::arg(out, b"NX");
        }
    };
    // Each INCRBY's count, then its EXPIRE's 0 or 1.
    let counts = |reply: &[Option<i64>]| reply.iter().step_by(2).map(count).collect();
    call(target, 2 * adds.len(), encode, counts)
        .await
        .map_err(|e| e.to_string())
}

/// Runs the `replies` commands `encode` writes on this worker's connection to `target`, connecting on
/// first use, within the target's timeout; `read` reads the replies' numbers. A cached connection that
/// turns out broken (Redis restarted since) is dropped and the call made once more on a new one, within
/// the same timeout, so the first request after an outage does not fail on every worker; any other failure
/// drops the connection, so the next call connects again (an error reply leaves it: Redis is fine, the
/// command was not). The deadline is the connection's to watch (one timer for all its calls), not a timer
/// per call.
async fn call<T>(
    target: &Target,
    replies: usize,
    encode: impl Fn(&mut Vec<u8>),
    read: impl Fn(&[Option<i64>]) -> T,
) -> Result<T, Error> {
    let deadline = tokio::time::Instant::now() + target.timeout;
    let reply = match cached(target) {
        Some(con) => match con.call(replies, Some(deadline), &encode, &read).await {
            Err(Error::Broken(_)) => {
                forget(target);
                // Boxed: the rare path keeps the common one's future small.
                Box::pin(call_anew(target, deadline, replies, &encode, &read)).await
            }
            reply => reply,
        },
        None => Box::pin(call_anew(target, deadline, replies, &encode, &read)).await,
    };
    match reply {
        Err(Error::TimedOut) => {
            forget(target);
            Err(Error::Broken(format!(
                "redis did not answer within {} ms",
                target.timeout.as_millis()
            )))
        }
        Err(Error::Broken(e)) => {
            forget(target);
            Err(Error::Broken(e))
        }
        reply => reply,
    }
}

/// [`call`] on a new connection, made by `deadline`.
async fn call_anew<T>(
    target: &Target,
    deadline: tokio::time::Instant,
    replies: usize,
    encode: impl Fn(&mut Vec<u8>),
    read: impl Fn(&[Option<i64>]) -> T,
) -> Result<T, Error> {
    let con = tokio::time::timeout_at(deadline, connect(target))
        .await
        .map_err(|_| Error::TimedOut)??;
    con.call(replies, Some(deadline), encode, read).await
}

/// Drops this worker's connection to `target`, so the next request connects again.
fn forget(target: &Target) {
    CONNECTIONS.with(|m| m.borrow_mut().remove(&target.url));
}

#[cfg(test)]
mod tests;
