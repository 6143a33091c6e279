//! `tcp-log` (priority 7): sends each request's log record to a TCP server as one line of JSON (the
//! record followed by `\n`, as Kong writes it), optionally over TLS.
//!
//! Config as Kong 3.x: `host` and `port` (required), `timeout` (10000 ms, for each of connect, handshake
//! and send), `keepalive` (60000 ms an idle connection is kept for the next records; 0 keeps it without a
//! limit), `tls` (false), `tls_sni` (the server name sent in the handshake; none when absent). As in Kong
//! the server's certificate is not verified. `custom_fields_by_lua` is refused when non-empty.
//!
//! Records are queued on the worker and written on the `sluice-log` thread: whatever is waiting goes out
//! in one write on one connection. Kong has no queue and no retry for this plugin; neither has Sluice (a
//! record that could not be sent is lost and logged), except that a kept connection the server closed
//! is replaced once before giving up.

mod sink;

use crate::logging::address;
use crate::logging::logger::{check_no_lua, custom_fields_by_lua, QueueLogger};
use crate::logging::sockets::{self, millis};
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
    /// Milliseconds for each of connect, TLS handshake and send.
    timeout: f64,
    /// Milliseconds an idle connection is kept (0: no limit).
    keepalive: f64,
    tls: bool,
    /// Server name sent in the TLS handshake.
    tls_sni: Option<String>,
}

fn schema() -> Schema {
    Schema::new(vec![
        ("host", address::host().required()),
        ("port", address::port().required()),
        ("timeout", Field::number().default(10000)),
        ("keepalive", Field::number().default(60000)),
        ("tls", Field::boolean().required().default(false)),
        ("tls_sni", Field::string()),
        ("custom_fields_by_lua", custom_fields_by_lua()),
    ])
    .with_check(check_no_lua)
}

pub fn builtin() -> Builtin {
    Builtin::new("tcp-log", 7, schema(), build)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    // Instances with the same settings share one queue (and connection); a reload keeps it.
    let key = format!("tcp-log {}", entity.config);
    let name = format!("{}:{}", config.host, config.port);
    let queue = sockets::shared_queue(ctx, "tcp-log", key, name, || {
        sink::TcpSink::new(
            config.host.clone(),
            config.port,
            millis(config.timeout),
            (config.keepalive > 0.0).then(|| millis(config.keepalive)),
            config.tls.then_some(config.tls_sni.as_deref()),
        )
    })?;
    Ok(QueueLogger::register("tcp-log", queue, ctx.entity_json()))
}

#[cfg(test)]
mod tests;
