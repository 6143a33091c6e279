//! Kong's config hash of a changed config, rehashing only what the change touched. The hash is made of six
//! parts (`sluice_cluster::hash::Parts`: routes, services, plugins, upstreams, targets, the rest); the CP
//! ([`super::push`]) and the DP ([`super::dp_delta`]) keep the parts of the live config, and for the next
//! one export and hash only the kinds a delta's changes name. A one-route change on the `large` config
//! (10,000 routes, 20,000 plugins, 10,000 consumers and credentials) exports the routes, not the 50,000
//! entities.
//!
//! The result is exactly the full computation's as long as the changes name every kind that differs,
//! which holds on both sides: the CP's diff compares every kind, and a DP's patch changes only the
//! entities the delta names (no cascades; a certificate's inline SNIs, which it rebuilds, are not in the
//! export). The DP still checks the result against the CP's hash, and hashes the whole config before it
//! calls a difference a mismatch ([`verify`]).

use sluice_cluster::delta::Change;
use sluice_cluster::hash::{Parts, Touched};
use sluice_model::{declarative, Config};

/// Every part of `config`: when nothing is known of the config before (a full push, a DP's first delta
/// after a full sync).
pub fn full(config: &Config) -> Parts {
    Parts::of(&declarative::export_of(config, |_| true))
}

/// The parts `changes` touch: the parts of the kinds they name. A delta never changes `_format_version`
/// (the CP's diff sends the whole config then).
pub fn touched(changes: &[Change]) -> Touched {
    changes.iter().map(|c| c.kind.as_str()).collect()
}

/// The parts of `config`, which differs from the config `previous` was computed for only in the
/// `touched` parts: only their kinds are exported and hashed.
pub fn partial(config: &Config, previous: &Parts, touched: Touched) -> Parts {
    if touched.is_empty() {
        return previous.clone();
    }
    previous.update(
        touched,
        &declarative::export_of(config, |k| touched.covers(k)),
    )
}

/// How [`verify`] found the hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rehashed {
    /// Only the touched parts.
    Partial,
    /// The whole config: no parts of the config before were known.
    Full,
    /// The whole config, after the partial hash differed from the expected one.
    FullAfterMiss,
}

/// The parts of `config` (the config `base` was computed for, patched with changes that touch
/// `touched`), when its hash is `expected`. A partial hash that differs is never trusted: the whole
/// config is hashed before Err (the hash it has) is returned, so a change that was not named costs time,
/// never a needless full sync.
pub fn verify(
    config: &Config,
    base: Option<&Parts>,
    touched: Touched,
    expected: &str,
) -> Result<(Parts, Rehashed), String> {
    let how = match base {
        Some(base) => {
            let parts = partial(config, base, touched);
            if parts.hashes().config == expected {
                return Ok((parts, Rehashed::Partial));
            }
            Rehashed::FullAfterMiss
        }
        None => Rehashed::Full,
    };
    let parts = full(config);
    let hash = parts.hashes().config;
    if hash == expected {
        Ok((parts, how))
    } else {
        Err(hash)
    }
}

#[cfg(test)]
mod tests;
