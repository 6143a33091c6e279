//! `udp-log` (priority 8): sends each request's log record as one UDP datagram holding the JSON record,
//! as Kong does (no newline, one datagram per record).
//!
//! Config as Kong 3.x: `host` and `port` (required), `timeout` (10000 ms, for resolving the host and each
//! send). `custom_fields_by_lua` is refused when non-empty. Records are queued on the worker and sent from
//! the `sluice-log` thread; as in Kong, a record that could not be sent is lost (and logged), not retried.

use crate::logging::address;
use crate::logging::logger::{check_no_lua, custom_fields_by_lua, QueueLogger};
use crate::logging::sockets::{self, millis, DatagramSink, Peer};
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    host: String,
    port: u16,
    /// Milliseconds for resolving the host and for each send.
    timeout: f64,
}

fn schema() -> Schema {
    Schema::new(vec![
        ("host", address::host().required()),
        ("port", address::port().required()),
        ("timeout", Field::number().default(10000)),
        ("custom_fields_by_lua", custom_fields_by_lua()),
    ])
    .with_check(check_no_lua)
}

pub fn builtin() -> Builtin {
    Builtin::new("udp-log", 8, schema(), build)
}

/// The datagram of one record: the record itself.
fn frame(record: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(record);
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let key = format!("udp-log {}", entity.config);
    let peer = Peer::udp(&config.host, config.port);
    let queue = sockets::shared_queue(ctx, "udp-log", key, peer.name(), || {
        Ok(DatagramSink::new(peer, millis(config.timeout), frame))
    })?;
    Ok(QueueLogger::register("udp-log", queue, ctx.entity_json()))
}

#[cfg(test)]
mod tests;
