//! `acl` (priority 950): allow or deny consumers by their ACL groups. Runs after authentication.

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    /// Groups allowed (exclusive with `deny`).
    allow: Option<Vec<String>>,
    /// Groups denied (exclusive with `allow`).
    deny: Option<Vec<String>>,
    /// Don't send `X-Consumer-Groups` upstream.
    hide_groups_header: bool,
}

fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let set = |k: &str| m[k].as_array().is_some_and(|a| !a.is_empty());
    match (set("allow"), set("deny")) {
        (false, false) => Err(vec![FieldError::plugin_check(
            "at least one of these fields must be non-empty: 'config.allow', 'config.deny'",
        )]),
        (true, true) => Err(vec![FieldError::plugin_check(
            "exactly one of these fields must be non-empty: 'config.allow', 'config.deny'",
        )]),
        _ => Ok(()),
    }
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("allow", Field::array(Field::string())),
        ("deny", Field::array(Field::string())),
        ("hide_groups_header", Field::boolean().default(false)),
        (
            "always_use_authenticated_groups",
            Field::boolean().default(false),
        ),
    ])
    .with_check(check);
    Builtin::new("acl", 950, config, build).no_consumer()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    Ok(register(Acl { config }))
}

struct Acl {
    config: Config,
}

const DENY: &str = "You cannot consume this service";

impl Acl {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let Some(consumer) = ctx.consumer else {
            return Flow::Respond(PluginResponse::message(
                StatusCode::UNAUTHORIZED,
                "Unauthorized",
            ));
        };
        let groups = ctx.credentials.groups(&consumer.id);
        let listed = |list: &Option<Vec<String>>| list.iter().flatten().any(|g| groups.contains(g));
        let blocked = if self.config.allow.is_some() {
            !listed(&self.config.allow)
        } else {
            listed(&self.config.deny)
        };
        if blocked {
            return Flow::Respond(PluginResponse::message(StatusCode::FORBIDDEN, DENY));
        }
        if !self.config.hide_groups_header && !groups.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&groups.join(", ")) {
                ctx.request.headers.insert("x-consumer-groups", v);
            }
        }
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: Acl) -> Arc<dyn Plugin> {
    Registered::new("acl", plugin).access(Acl::access).build()
}
