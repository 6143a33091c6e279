//! The one plugin body the queue logging plugins use: serialize the record (a request's, rendered once
//! per log pass for all of them, [`super::rendered`]; or a stream session's when Kong's stream subsystem
//! runs them), push it to the queue.

use super::entities::EntityJson;
use super::queue::{self, Queue};
use super::rendered;
use super::session::serialize_session;
use crate::ctx::{LogRecord, RequestCtx};
use crate::plugin::{Plugin, Registered};
use crate::stream::SessionRecord;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError};
use std::sync::Arc;

/// A logging plugin instance: its log phase serializes the request (on the worker, a few µs) and queues
/// it; it never waits, and a full queue only drops the record.
pub struct QueueLogger {
    queue: Arc<Queue>,
    /// The snapshot's routes and services as JSON (see [`crate::registry::BuildCtx::entity_json`]).
    entities: Arc<EntityJson>,
}

impl QueueLogger {
    /// The instance of plugin `name`: a log handler for requests and one for stream sessions.
    pub fn register(
        name: &'static str,
        queue: Arc<Queue>,
        entities: Arc<EntityJson>,
    ) -> Arc<dyn Plugin> {
        entities.count_logger();
        Registered::new(name, QueueLogger { queue, entities })
            .log(QueueLogger::log)
            .stream_log(QueueLogger::stream_log)
            .build()
    }

    fn stream_log(&self, session: &SessionRecord<'_>) {
        self.queue
            .push(queue::record(serialize_session(session, &self.entities)));
    }

    fn log(&self, ctx: &RequestCtx<'_>, record: &LogRecord) {
        self.queue
            .push(rendered::record(ctx, record, &self.entities));
    }
}

/// Kong's `custom_fields_by_lua` field (a map of field name to Lua code); accepted by the schema so Kong
/// configs parse, refused by [`check_no_lua`] when it holds anything.
pub fn custom_fields_by_lua() -> Field {
    Field::map(Field::string())
}

/// Refuses a non-empty `custom_fields_by_lua`: Sluice runs no Lua, and silently logging without the
/// fields a config asks for would be worse than saying so at load time.
pub fn check_no_lua(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    match m.get("custom_fields_by_lua") {
        Some(Value::Object(fields)) if !fields.is_empty() => Err(vec![FieldError::new(
            "custom_fields_by_lua",
            "not supported: Sluice does not run Lua code",
        )]),
        _ => Ok(()),
    }
}
