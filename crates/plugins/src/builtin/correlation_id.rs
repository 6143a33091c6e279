//! `correlation-id` (priority 100001): gives every request an id header, generated when the client sent none.

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use http::{HeaderName, HeaderValue};
use serde::Deserialize;
use sluice_model::schema::{Field, Schema};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    header_name: String,
    /// `uuid`, `uuid#counter` or `tracker`.
    generator: String,
    /// Also send the id back to the client.
    echo_downstream: bool,
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("header_name", Field::string().default("Kong-Request-ID")),
        (
            "generator",
            Field::string()
                .default("uuid#counter")
                .one_of(&["uuid", "uuid#counter", "tracker"]),
        ),
        ("echo_downstream", Field::boolean().default(false)),
    ]);
    Builtin::new("correlation-id", 100001, config, build)
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    let header = HeaderName::from_bytes(config.header_name.to_ascii_lowercase().as_bytes())
        .map_err(|e| e.to_string())?;
    let generator = match config.generator.as_str() {
        "uuid" => Generator::Uuid,
        "tracker" => Generator::Tracker,
        _ => Generator::UuidCounter,
    };
    Ok(register(CorrelationId {
        config,
        generator,
        header,
        seed: uuid::Uuid::new_v4(),
        counter: AtomicU64::new(0),
    }))
}

/// Kong's `generator`, decided once per config.
#[derive(Debug, Clone, Copy)]
enum Generator {
    Uuid,
    UuidCounter,
    Tracker,
}

struct CorrelationId {
    config: Config,
    generator: Generator,
    header: HeaderName,
    /// The `uuid` part of `uuid#counter`, fixed for this plugin instance.
    seed: uuid::Uuid,
    counter: AtomicU64,
}

impl CorrelationId {
    fn generate(&self, ctx: &RequestCtx<'_>) -> String {
        match self.generator {
            Generator::Uuid => uuid::Uuid::new_v4().to_string(),
            Generator::Tracker => format!("{}-{}", ctx.client_ip, ctx.request_id),
            Generator::UuidCounter => format!(
                "{}#{}",
                self.seed,
                self.counter.fetch_add(1, Ordering::Relaxed) + 1
            ),
        }
    }
}

impl CorrelationId {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let id = match ctx.request.headers.get(&self.header) {
            Some(v) => v.clone(),
            None => match HeaderValue::from_str(&self.generate(ctx)) {
                Ok(v) => {
                    ctx.request.headers.insert(self.header.clone(), v.clone());
                    v
                }
                Err(_) => return Flow::Continue,
            },
        };
        if self.config.echo_downstream {
            ctx.response_headers.insert(self.header.clone(), id);
        }
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: CorrelationId) -> Arc<dyn Plugin> {
    Registered::new("correlation-id", plugin)
        .access(CorrelationId::access)
        .build()
}
