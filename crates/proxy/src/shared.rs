//! What every request of every worker reads, one `Arc` per connection: the live snapshot, the proxy
//! settings, the counters and the trusted-proxy rule. Below the workers and the request path, which all
//! take it, and the server, which makes it.

use crate::realip::Trust;
use crate::settings::ProxySettings;
use crate::snapshot::SharedSnapshot;
use crate::stats::Counters;
use std::sync::Arc;

/// What every request of every worker reads.
pub struct Shared {
    pub snapshot: SharedSnapshot,
    pub settings: Arc<ProxySettings>,
    pub counters: Arc<Counters>,
    pub trust: Trust,
}
