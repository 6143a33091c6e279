//! response-ratelimiting's limits as configured (names, periods, header names made once) and the per-request
//! values its phases hand on: what `access` read ([`Usage`]) and what the response spent ([`Spent`]).

use crate::builtin::rate_limiting::window::Period;
use crate::ctx::RequestCtx;
use crate::plugin::Flow;
use crate::response::PluginResponse;
use http::{HeaderName, HeaderValue, StatusCode};

/// The configured limits and the headers they use.
pub(super) struct Rules {
    pub(super) usage_header: HeaderName,
    pub(super) block_on_first_violation: bool,
    pub(super) hide_client_headers: bool,
    /// By name, sorted.
    pub(super) limits: Vec<Limit>,
}

/// One named limit, with its header names made once.
pub(super) struct Limit {
    pub(super) name: String,
    /// `X-RateLimit-Remaining-<name>`, to the upstream.
    pub(super) upstream_h: HeaderName,
    pub(super) windows: Vec<Window>,
}

/// One period of a named limit.
pub(super) struct Window {
    pub(super) period: Period,
    pub(super) limit: i64,
    pub(super) limit_h: HeaderName,
    pub(super) remaining_h: HeaderName,
}

/// What `access` read, for `header_filter` and `log` of the same request: whose counters, when, and each
/// window's remaining count (in the order of `limits`, then `windows`).
#[derive(Clone)]
pub(super) struct Usage {
    pub(super) identifier: String,
    pub(super) now: u64,
    pub(super) remaining: Vec<i64>,
}

/// What the response spent, per limit (in the order of `limits`); `stopped` when it was refused.
#[derive(Clone)]
pub(super) struct Spent {
    pub(super) increments: Vec<i64>,
    pub(super) stopped: bool,
}

impl Rules {
    /// The end of `access` once the usage is known: with `block_on_first_violation` a used-up limit is
    /// refused; otherwise the upstream is told what remains, and the usage kept for the later phases.
    pub(super) fn settle(&self, ctx: &mut RequestCtx<'_>, usage: Usage) -> Flow {
        let mut left = usage.remaining.iter();
        for limit in &self.limits {
            let mut least = i64::MAX;
            for _ in &limit.windows {
                let remaining = *left.next().unwrap_or(&0);
                if self.block_on_first_violation && remaining <= 0 {
                    return Flow::Respond(PluginResponse::message(
                        StatusCode::TOO_MANY_REQUESTS,
                        &format!("API rate limit exceeded for '{}'", limit.name),
                    ));
                }
                least = least.min(remaining);
            }
            ctx.request
                .headers
                .insert(limit.upstream_h.clone(), HeaderValue::from(least));
        }
        ctx.plugin_data.insert(usage);
        Flow::Continue
    }
    /// What the upstream's usage header says each limit spent (0 for a limit it does not name). Kong's
    /// grammar: comma-separated `name=n` parts (a part with more than one `=` is ignored), names and values
    /// trimmed, the value a base-10 integer; several header lines count as parts too.
    pub(super) fn spent(&self, headers: &http::HeaderMap) -> Vec<i64> {
        let mut spent = vec![0; self.limits.len()];
        let parts = headers
            .get_all(&self.usage_header)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','));
        for part in parts {
            let mut kv = part.split('=');
            let (Some(name), Some(value), None) = (kv.next(), kv.next(), kv.next()) else {
                continue;
            };
            let Ok(n) = value.trim().parse::<i64>() else {
                continue;
            };
            if let Ok(i) = self
                .limits
                .binary_search_by(|l| l.name.as_str().cmp(name.trim()))
            {
                spent[i] = n;
            }
        }
        spent
    }
}
