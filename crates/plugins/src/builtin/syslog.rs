//! `syslog` (priority 4): writes each request's log record (the JSON) to the local syslog, with a
//! severity chosen by the response status, as Kong's call to syslog(3) does.
//!
//! Config as Kong 3.x: `log_level` (info: the least severe level still sent), `successful_severity`,
//! `client_errors_severity` (4xx), `server_errors_severity` (5xx) — each one of debug, info, notice,
//! warning, err, crit, alert, emerg, `info` by default — and `facility` (user; or auth, authpriv, cron,
//! daemon, ftp, kern, lpr, mail, news, syslog, uucp, local0..local7). `custom_fields_by_lua` is refused
//! when non-empty.
//!
//! The message is what glibc's syslog(3) sends after Kong's `openlog("kong", LOG_PID, facility)`:
//! `<PRI>Mmm dd hh:mm:ss kong[PID]: {json}` (local time), one datagram on the unix socket `/dev/log`.
//! `SLUICE_SYSLOG_SOCKET` (read when the plugin's queue starts) names another socket, for tests and for
//! hosts whose syslog listens elsewhere. Sent from the `sluice-log` thread; a record the socket did not
//! take within a second, or with no socket there, is lost (and logged), not retried.

use crate::logging::logger::{check_no_lua, custom_fields_by_lua};
use crate::logging::severity::{self, split, Severities, SeverityLogger};
use crate::logging::sockets::{self, DatagramSink, Peer};
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::fmt::Display;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// Facility names in syslog(3)'s numbering (the code is the index; unused codes are empty).
const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv",
    "ftp", "", "", "", "", "local0", "local1", "local2", "local3", "local4", "local5", "local6",
    "local7",
];

/// The socket written to unless `SLUICE_SYSLOG_SOCKET` names another.
const DEFAULT_SOCKET: &str = "/dev/log";

/// How long one message may wait for the syslog socket to take it.
const SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// The plugin's config, after schema validation.
#[derive(Debug, Deserialize)]
struct Config {
    #[serde(flatten)]
    severities: Severities,
    facility: String,
}

fn schema() -> Schema {
    let mut fields = severity::fields(true);
    fields.push(("custom_fields_by_lua", custom_fields_by_lua()));
    fields.push((
        "facility",
        Field::string().required().default("user").one_of(&[
            "auth", "authpriv", "cron", "daemon", "ftp", "kern", "lpr", "mail", "news", "syslog",
            "user", "uucp", "local0", "local1", "local2", "local3", "local4", "local5", "local6",
            "local7",
        ]),
    ));
    Schema::new(fields).with_check(check_no_lua)
}

pub fn builtin() -> Builtin {
    Builtin::new("syslog", 4, schema(), build)
}

/// Appends the message glibc's syslog(3) makes for `json` at `facility` and `severity`, logged by
/// process `pid` under Kong's ident `kong` at time `stamp` (`Mmm dd hh:mm:ss`, day padded with a space).
fn message(
    out: &mut Vec<u8>,
    facility: u8,
    severity: u8,
    stamp: impl Display,
    pid: u32,
    json: &[u8],
) {
    let priority = u32::from(facility) * 8 + u32::from(severity);
    // Writing to a Vec cannot fail.
    let _ = write!(out, "<{priority}>{stamp} kong[{pid}]: ");
    out.extend_from_slice(json);
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let facility = FACILITIES
        .iter()
        .position(|f| *f == config.facility)
        .ok_or_else(|| format!("unknown facility '{}'", config.facility))? as u8;
    let socket = std::env::var("SLUICE_SYSLOG_SOCKET").unwrap_or_else(|_| DEFAULT_SOCKET.into());
    // The severities are applied before records are queued: only the facility and socket shape delivery.
    let key = format!("syslog {facility} {socket}");
    let peer = Peer::Unix(socket.into());
    let queue = sockets::shared_queue(ctx, "syslog", key, peer.name(), || {
        let pid = std::process::id();
        let frame = move |record: &[u8], out: &mut Vec<u8>| {
            let (json, severity) = split(record);
            let stamp = chrono::Local::now().format("%b %e %H:%M:%S");
            message(out, facility, severity, stamp, pid, json);
        };
        Ok(DatagramSink::new(peer, SEND_TIMEOUT, frame))
    })?;
    Ok(SeverityLogger::register(
        "syslog",
        queue,
        ctx.entity_json(),
        config.severities,
    ))
}

#[cfg(test)]
mod tests;
