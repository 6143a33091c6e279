//! `loggly` (priority 6): sends each request's log record to Loggly as one syslog-format UDP datagram,
//! with the customer token and tags in the structured data, and a severity chosen by the response status.
//!
//! Config as Kong 3.x: `host` (logs-01.loggly.com), `port` (514), `key` (required: the customer token),
//! `tags` (a set, `[kong]`), `log_level`, `successful_severity`, `client_errors_severity` (4xx),
//! `server_errors_severity` (5xx) — each one of debug, info, notice, warning, err, crit, alert, emerg,
//! `info` by default — and `timeout` (10000 ms, for resolving the host and each send).
//! `custom_fields_by_lua` is refused when non-empty.
//!
//! The datagram is Kong's: `<PRI>1 TIMESTAMP HOSTNAME kong - - [KEY@41058 tag="a" tag="b"] {json}`,
//! where PRI is 8 (facility user) plus the severity, TIMESTAMP is UTC to the second
//! (`2024-01-31T12:00:00Z`) and HOSTNAME is this machine's host name. Sent from the `sluice-log` thread;
//! as in Kong, a record that could not be sent is lost (and logged), not retried.

use crate::logging::address;
use crate::logging::logger::{check_no_lua, custom_fields_by_lua};
use crate::logging::severity::{self, split, Severities, SeverityLogger};
use crate::logging::sockets::{self, millis, DatagramSink, Peer};
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::fmt::Display;
use std::io::Write;
use std::sync::Arc;

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    host: String,
    port: u16,
    /// The Loggly customer token.
    key: String,
    tags: Vec<String>,
    #[serde(flatten)]
    severities: Severities,
    /// Milliseconds for resolving the host and for each send.
    timeout: f64,
}

fn schema() -> Schema {
    let tags = Field::set(Field::string()).default(serde_json::json!(["kong"]));
    let mut fields = vec![
        ("host", address::host().default("logs-01.loggly.com")),
        ("port", address::port().default(514)),
        ("key", Field::string().required()),
        ("tags", tags),
    ];
    fields.extend(severity::fields(false));
    fields.push(("timeout", Field::number().default(10000)));
    fields.push(("custom_fields_by_lua", custom_fields_by_lua()));
    Schema::new(fields).with_check(check_no_lua)
}

pub fn builtin() -> Builtin {
    Builtin::new("loggly", 6, schema(), build)
}

/// What follows the timestamp in every message of one config: ` HOSTNAME kong - - [KEY@41058 TAGS] `.
fn fixed_part(hostname: &str, key: &str, tags: &[String]) -> String {
    let tags: Vec<String> = tags.iter().map(|t| format!("tag=\"{t}\"")).collect();
    format!(" {hostname} kong - - [{key}@41058 {}] ", tags.join(" "))
}

/// Appends Kong's Loggly message for `json` at `severity`, sent at `stamp`.
fn message(out: &mut Vec<u8>, severity: u8, stamp: impl Display, fixed: &str, json: &[u8]) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "<{}>1 {stamp}{fixed}", 8 + u32::from(severity));
    out.extend_from_slice(json);
}

/// This machine's host name (what gethostname(2) returns).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let key = format!("loggly {}", entity.config);
    let peer = Peer::udp(&config.host, config.port);
    let queue = sockets::shared_queue(ctx, "loggly", key, peer.name(), || {
        let fixed = fixed_part(&hostname(), &config.key, &config.tags);
        let frame = move |record: &[u8], out: &mut Vec<u8>| {
            let (json, severity) = split(record);
            let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
            message(out, severity, stamp, &fixed, json);
        };
        Ok(DatagramSink::new(peer, millis(config.timeout), frame))
    })?;
    Ok(SeverityLogger::register(
        "loggly",
        queue,
        ctx.entity_json(),
        config.severities,
    ))
}

#[cfg(test)]
mod tests;
