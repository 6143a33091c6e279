//! `ip-restriction` (priority 990): allow or deny clients by IP address or CIDR range.

use crate::ctx::RequestCtx;
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use crate::response::PluginResponse;
use http::StatusCode;
use ipnet::IpNet;
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::Arc;

#[derive(Debug, Deserialize)]
struct Config {
    allow: Option<Vec<String>>,
    deny: Option<Vec<String>>,
    /// Status of the refusal (default 403).
    status: Option<u16>,
    /// Message of the refusal (default "Your IP address is not allowed").
    message: Option<String>,
}

fn parse_net(s: &str) -> Option<IpNet> {
    s.parse::<IpNet>()
        .ok()
        .or_else(|| s.parse::<std::net::IpAddr>().ok().map(IpNet::from))
}

fn check_net(v: &Value) -> Result<(), String> {
    let s = v.as_str().unwrap_or_default();
    parse_net(s)
        .map(|_| ())
        .ok_or_else(|| format!("invalid ip or cidr range: '{s}'"))
}

fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let set = |k: &str| m[k].as_array().is_some_and(|a| !a.is_empty());
    if !set("allow") && !set("deny") {
        return Err(vec![FieldError::plugin_check(
            "at least one of these fields must be non-empty: 'config.allow', 'config.deny'",
        )]);
    }
    Ok(())
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("allow", Field::array(Field::string().check(check_net))),
        ("deny", Field::array(Field::string().check(check_net))),
        ("status", Field::integer().between(100.0, 599.0)),
        ("message", Field::string()),
    ])
    .with_check(check);
    Builtin::new("ip-restriction", 990, config, build)
        .protocols(&["http", "https", "tcp", "tls", "grpc", "grpcs"])
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    Ok(register(IpRestriction::of(entity)?))
}

/// One instance's rule, also read by the stream proxy (Kong runs the plugin in `preread` too, where a
/// refusal closes the connection).
pub struct IpRestriction {
    /// None: no allow list (Kong skips an empty one).
    allow: Option<Vec<IpNet>>,
    deny: Vec<IpNet>,
    status: StatusCode,
    message: String,
}

impl IpRestriction {
    /// The rule of a validated `ip-restriction` entity.
    pub fn of(entity: &sluice_model::Plugin) -> Result<IpRestriction, String> {
        let config: Config = typed_config(entity)?;
        let nets = |l: &Option<Vec<String>>| {
            l.iter()
                .flatten()
                .filter_map(|s| parse_net(s))
                .collect::<Vec<_>>()
        };
        let status =
            StatusCode::from_u16(config.status.unwrap_or(403)).map_err(|e| e.to_string())?;
        let allow = nets(&config.allow);
        Ok(IpRestriction {
            allow: (!allow.is_empty()).then_some(allow),
            deny: nets(&config.deny),
            status,
            message: config
                .message
                .unwrap_or_else(|| "Your IP address is not allowed".into()),
        })
    }

    /// Whether `ip` is refused: on the deny list, or missing from a non-empty allow list.
    pub fn refuses(&self, ip: std::net::IpAddr) -> bool {
        let ip = ip.to_canonical();
        let denied = self.deny.iter().any(|n| n.contains(&ip));
        denied
            || self
                .allow
                .as_ref()
                .is_some_and(|a| !a.iter().any(|n| n.contains(&ip)))
    }

    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        if self.refuses(ctx.client_ip) {
            return Flow::Respond(PluginResponse::message(self.status, &self.message));
        }
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: IpRestriction) -> Arc<dyn Plugin> {
    Registered::new("ip-restriction", plugin)
        .access(IpRestriction::access)
        .build()
}
