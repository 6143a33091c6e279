//! `correlation-id` (priority 100001): gives every request an id header, generated when the client sent none.

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin};
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
    Ok(Arc::new(CorrelationId {
        config,
        header,
        seed: uuid::Uuid::new_v4(),
        counter: AtomicU64::new(0),
    }))
}

struct CorrelationId {
    config: Config,
    header: HeaderName,
    /// The `uuid` part of `uuid#counter`, fixed for this plugin instance.
    seed: uuid::Uuid,
    counter: AtomicU64,
}

impl CorrelationId {
    fn generate(&self, ctx: &RequestCtx<'_>) -> String {
        match self.config.generator.as_str() {
            "uuid" => uuid::Uuid::new_v4().to_string(),
            "tracker" => format!("{}-{}", ctx.client_ip, ctx.request_id),
            _ => format!(
                "{}#{}",
                self.seed,
                self.counter.fetch_add(1, Ordering::Relaxed) + 1
            ),
        }
    }
}

impl Plugin for CorrelationId {
    fn name(&self) -> &'static str {
        "correlation-id"
    }

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
