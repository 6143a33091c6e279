//! Syslog severities as Kong's `syslog` and `loggly` plugins use them: a severity for successful
//! responses, one for 4xx and one for 5xx, and `log_level`, the least severe level still sent.
//!
//! The choice is made in the log phase, on the worker, from the response status: a record that would not
//! be sent is never serialized. A record that is sent carries its severity (0 = emerg .. 7 = debug) as
//! one byte after the JSON, which the plugin's sink reads back with [`split`].

#[cfg(test)]
mod tests;

use super::entities::EntityJson;
use super::queue::Queue;
use super::serialize::serialize;
use crate::ctx::{LogRecord, RequestCtx};
use crate::plugin::{Plugin, Registered};
use serde::Deserialize;
use sluice_model::schema::Field;
use std::sync::Arc;

/// Severity names by numeric level, as syslog(3) numbers them.
const NAMES: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
];

/// Kong's severity field: one of the eight names, `info` by default.
pub fn field() -> Field {
    Field::string().default("info").one_of(&[
        "debug", "info", "notice", "warning", "err", "crit", "alert", "emerg",
    ])
}

/// The four severity fields of a config, in Kong's order (syslog declares them `required`, loggly not;
/// both have the default).
pub fn fields(required: bool) -> Vec<(&'static str, Field)> {
    let field = || match required {
        true => field().required(),
        false => field(),
    };
    vec![
        ("log_level", field()),
        ("successful_severity", field()),
        ("client_errors_severity", field()),
        ("server_errors_severity", field()),
    ]
}

/// The numeric level of a severity name.
fn level(name: &str) -> Result<u8, String> {
    NAMES
        .iter()
        .position(|n| *n == name)
        .map(|l| l as u8)
        .ok_or_else(|| format!("unknown severity '{name}'"))
}

/// The four severity fields as a config names them.
#[derive(Deserialize)]
struct Names {
    log_level: String,
    successful_severity: String,
    client_errors_severity: String,
    server_errors_severity: String,
}

/// The four severity settings of a config, as numeric levels (read from a config with
/// `#[serde(flatten)]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Names")]
pub struct Severities {
    log_level: u8,
    successful: u8,
    client_errors: u8,
    server_errors: u8,
}

impl Severities {
    /// From the config's `log_level`, `successful_severity`, `client_errors_severity` and
    /// `server_errors_severity` (names already checked by [`field`]).
    pub fn new(
        log_level: &str,
        successful: &str,
        client_errors: &str,
        server_errors: &str,
    ) -> Result<Severities, String> {
        Ok(Severities {
            log_level: level(log_level)?,
            successful: level(successful)?,
            client_errors: level(client_errors)?,
            server_errors: level(server_errors)?,
        })
    }

    /// The severity of a response with `status` (5xx, 4xx, anything else), or None when it is less
    /// severe than `log_level` and so not sent.
    pub fn of(&self, status: u16) -> Option<u8> {
        let severity = match status {
            500.. => self.server_errors,
            400..=499 => self.client_errors,
            _ => self.successful,
        };
        (severity <= self.log_level).then_some(severity)
    }
}

impl TryFrom<Names> for Severities {
    type Error = String;

    fn try_from(n: Names) -> Result<Severities, String> {
        Severities::new(
            &n.log_level,
            &n.successful_severity,
            &n.client_errors_severity,
            &n.server_errors_severity,
        )
    }
}

/// A queued record: its JSON and its severity.
pub fn split(record: &[u8]) -> (&[u8], u8) {
    match record.split_last() {
        Some((severity, json)) => (json, *severity),
        None => (record, 6),
    }
}

/// A logging plugin instance that sends only records at or above `log_level`, tagged with their severity.
pub struct SeverityLogger {
    queue: Arc<Queue>,
    entities: Arc<EntityJson>,
    severities: Severities,
}

impl SeverityLogger {
    /// The instance of plugin `name`: a log handler and no other phase.
    pub fn register(
        name: &'static str,
        queue: Arc<Queue>,
        entities: Arc<EntityJson>,
        severities: Severities,
    ) -> Arc<dyn Plugin> {
        let logger = SeverityLogger {
            queue,
            entities,
            severities,
        };
        Registered::new(name, logger)
            .log(SeverityLogger::log)
            .build()
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        if let Some(severity) = self.severities.of(record.status) {
            let mut bytes = serialize(ctx, record, &self.entities);
            bytes.push(severity);
            self.queue.push(super::queue::record(bytes));
        }
    }
}
