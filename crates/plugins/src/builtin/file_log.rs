//! `file-log` (priority 9): appends each request's log record as one JSON line to `path`.
//!
//! Writes happen on the `sluice-log` thread's blocking pool, never on a proxy worker: records are queued
//! (up to 10,000 waiting; beyond that they are dropped and counted) and written in batches, one `write`
//! per batch. The file is opened with `O_APPEND | O_CREAT`, mode 0644, as Kong does, and kept open;
//! `reopen: true` opens and closes it around every write (Kong's option for log rotation), and
//! [`crate::logging::reopen_log_files`] (SIGUSR1 in the binary) makes every file-log reopen its file before
//! the next write. `custom_fields_by_lua` is refused when non-empty.

mod sink;

use crate::logging::logger::{check_no_lua, custom_fields_by_lua, QueueLogger};
use crate::logging::queue::{Queue, QueueConfig};
use crate::logging::runtime;
use crate::plugin::Plugin;
use crate::registry::{typed_config, BuildCtx, Builtin};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    /// The file records are appended to; created when missing.
    path: String,
    /// Close and reopen the file around every write.
    reopen: bool,
}

fn schema() -> Schema {
    Schema::new(vec![
        // Kong's own `err` answers every check of the path, the empty string included.
        (
            "path",
            Field::string().required().len_min(0).check(valid_path),
        ),
        ("reopen", Field::boolean().default(false)),
        ("custom_fields_by_lua", custom_fields_by_lua()),
    ])
    .with_check(check_no_lua)
}

/// Kong's filename rule: no `*`, `&`, `%` or backtick anywhere, no whitespace at either end, at least
/// two characters.
fn valid_path(v: &serde_json::Value) -> Result<(), String> {
    let path = v.as_str().unwrap_or_default();
    let bad = |c: char| matches!(c, '*' | '&' | '%' | '`');
    let edge_ok = |c: Option<char>| c.is_some_and(|c| !c.is_whitespace());
    if path.chars().count() >= 2
        && !path.contains(bad)
        && edge_ok(path.chars().next())
        && edge_ok(path.chars().last())
    {
        Ok(())
    } else {
        Err("not a valid filename".into())
    }
}

/// Batching for file writes (Kong's file-log has no queue settings): whatever is waiting, up to 1,000
/// lines per write, no coalescing delay, no retry (a failed write is reported and its lines are lost).
fn queue_config() -> QueueConfig {
    QueueConfig {
        max_batch_size: 1000,
        max_coalescing_delay: 0.0,
        max_retry_time: -1.0,
        ..QueueConfig::default()
    }
}

pub fn builtin() -> Builtin {
    Builtin::new("file-log", 9, schema(), build)
}

fn build(ctx: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let key = format!("file-log {} {}", config.reopen, config.path);
    let queue = ctx.state.log_queues().get_or_start(key, || {
        let sink = sink::FileSink::new(config.path.clone().into(), config.reopen);
        Ok(Queue::start(
            "file-log",
            config.path.clone(),
            queue_config(),
            sink,
            runtime::handle()?,
        ))
    })?;
    Ok(QueueLogger::register("file-log", queue, ctx.entity_json()))
}

#[cfg(test)]
mod tests;
