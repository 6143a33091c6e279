//! The Admin API answers Kong's clients read (decK, Kong Manager, scripts): each field by Kong's name with
//! Kong's JSON type, as `kong/api/routes/kong.lua` (`GET /`), `kong/api/routes/health.lua` and
//! `kong/pdk/node.lua` / `kong/pdk/nginx.lua` (`GET /status`), `kong/api/endpoints.lua` (entities with their
//! null fields, pagination) and `kong/api/routes/kong.lua` (`/schemas`) build them in Kong 3.9.1.

use super::{fixture, BIN};
use serde_json::Value;
use sluice_testkit::{get_json, Gateway};

/// A JSON type as Kong's answer has it; `Absent` for a key Kong leaves out.
#[derive(Debug, Clone, Copy, PartialEq)]
enum T {
    Str,
    Num,
    Bool,
    Obj,
    Arr,
    Null,
    Absent,
}

fn type_of(v: Option<&Value>) -> T {
    match v {
        None => T::Absent,
        Some(Value::String(_)) => T::Str,
        Some(Value::Number(_)) => T::Num,
        Some(Value::Bool(_)) => T::Bool,
        Some(Value::Object(_)) => T::Obj,
        Some(Value::Array(_)) => T::Arr,
        Some(Value::Null) => T::Null,
    }
}

const SERVICE: &str = "/services/9e4d6c2b-2a8d-4c3b-9f10-39a000000010";
const BILLING: &str = "/services/billing";
const PLUGIN: &str = "/plugins/6c5d4e3f-2a8d-4c3b-9f10-39a000000061";

/// (path, JSON pointer, Kong's type).
#[rustfmt::skip]
const SHAPES: &[(&str, &str, T)] = &[
    ("/", "/version", T::Str),
    ("/", "/tagline", T::Str),
    ("/", "/edition", T::Str),
    ("/", "/hostname", T::Str),
    ("/", "/node_id", T::Str),
    // Deliberately absent (docs/differences.md, "Admin API"): Sluice runs no Lua.
    ("/", "/lua_version", T::Absent),
    // nginx's timers: the worker runtimes' tasks.
    ("/", "/timers/running", T::Num),
    ("/", "/timers/pending", T::Num),
    ("/timers", "/worker/id", T::Num),
    ("/timers", "/worker/count", T::Num),
    ("/timers", "/stats/sys/running", T::Num),
    ("/timers", "/stats/sys/pending", T::Num),
    ("/timers", "/stats/sys/waiting", T::Num),
    ("/timers", "/stats/sys/total", T::Num),
    ("/timers", "/stats/timers", T::Obj),
    ("/timers", "/stats/flamegraph/running", T::Str),
    ("/", "/plugins/available_on_server/key-auth/priority", T::Num),
    ("/", "/plugins/available_on_server/key-auth/version", T::Str),
    ("/", "/plugins/enabled_in_cluster", T::Arr),
    ("/", "/configuration/database", T::Str),
    ("/", "/pids/master", T::Num),
    ("/", "/pids/workers", T::Arr),
    ("/status", "/server/connections_active", T::Num),
    ("/status", "/server/connections_reading", T::Num),
    ("/status", "/server/connections_writing", T::Num),
    ("/status", "/server/connections_waiting", T::Num),
    ("/status", "/server/connections_accepted", T::Num),
    ("/status", "/server/connections_handled", T::Num),
    ("/status", "/server/total_requests", T::Num),
    ("/status", "/configuration_hash", T::Str),
    // DB-less: Kong drops `database` (health.lua: `status_response.database = nil`).
    ("/status", "/database", T::Absent),
    ("/status", "/memory/workers_lua_vms", T::Arr),
    ("/status", "/memory/lua_shared_dicts", T::Obj),
    // An entity carries every field of its schema, null when unset (endpoints.lua selects with `nulls`).
    (SERVICE, "/id", T::Str),
    (SERVICE, "/name", T::Str),
    (SERVICE, "/host", T::Str),
    (SERVICE, "/port", T::Num),
    (SERVICE, "/path", T::Str),
    (SERVICE, "/protocol", T::Str),
    (SERVICE, "/retries", T::Num),
    (SERVICE, "/connect_timeout", T::Num),
    (SERVICE, "/enabled", T::Bool),
    (SERVICE, "/created_at", T::Num),
    (SERVICE, "/updated_at", T::Num),
    (SERVICE, "/tags", T::Null),
    (SERVICE, "/tls_verify", T::Null),
    (SERVICE, "/tls_verify_depth", T::Null),
    (SERVICE, "/ca_certificates", T::Null),
    (SERVICE, "/client_certificate", T::Null),
    (BILLING, "/client_certificate/id", T::Str),
    (BILLING, "/ca_certificates/0", T::Str),
    (BILLING, "/tls_verify", T::Bool),
    (BILLING, "/path", T::Null),
    ("/routes/order-by-id", "/service/id", T::Str),
    ("/routes/order-by-id", "/paths/0", T::Str),
    ("/routes/order-by-id", "/hosts", T::Null),
    ("/routes/order-by-id", "/headers", T::Null),
    ("/routes/order-by-id", "/sources", T::Null),
    ("/routes/order-by-id", "/regex_priority", T::Num),
    ("/routes/order-by-id", "/path_handling", T::Str),
    ("/routes/billing", "/headers/x-tenant/0", T::Str),
    (PLUGIN, "/service/id", T::Str),
    (PLUGIN, "/route", T::Null),
    (PLUGIN, "/consumer", T::Null),
    (PLUGIN, "/instance_name", T::Null),
    (PLUGIN, "/protocols/0", T::Str),
    (PLUGIN, "/enabled", T::Bool),
    (PLUGIN, "/config/redis/port", T::Num),
    (PLUGIN, "/config/minute", T::Num),
    (PLUGIN, "/config/second", T::Null),
    ("/upstreams/orders.upstream/targets", "/data/0/created_at", T::Num),
    ("/upstreams/orders.upstream/targets", "/data/0/upstream/id", T::Str),
    ("/upstreams/orders.upstream/targets", "/data/0/weight", T::Num),
    ("/consumers/alice", "/custom_id", T::Null),
    // Pagination: `data`, `offset` and `next` while more pages follow.
    ("/services?size=1", "/data/0/id", T::Str),
    ("/services?size=1", "/offset", T::Str),
    ("/services?size=1", "/next", T::Str),
    // A whole page: `next` is null and `offset` absent.
    ("/services", "/next", T::Null),
    ("/services", "/offset", T::Absent),
    // Schemas: `fields` is a list of one-key objects.
    ("/schemas/services", "/fields/0/id/type", T::Str),
    ("/schemas/plugins/key-auth", "/fields", T::Arr),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_answers_have_kongs_field_names_and_types() {
    let gw = Gateway::builder(BIN)
        .config_yaml(&fixture("kong-3.9-db-export.yaml"))
        .start();
    let mut wrong = Vec::new();
    let mut last: Option<(&str, Value)> = None;
    for (path, pointer, want) in SHAPES {
        let body = match &last {
            Some((p, body)) if p == path => body.clone(),
            _ => {
                let (status, _, body) = get_json(&gw.admin_url(path), &[]).await;
                assert_eq!(status, 200, "GET {path}: {body}");
                last = Some((path, body.clone()));
                body
            }
        };
        let got = type_of(body.pointer(pointer));
        if got != *want {
            wrong.push(format!("GET {path} {pointer}: {got:?}, Kong: {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // `next` is a path the client follows as is; the last page ends the walk.
    let first = get_json(&gw.admin_url("/services?size=1"), &[]).await.2;
    let next = first["next"].as_str().unwrap_or_default();
    assert!(next.starts_with("/services?offset="), "{next}");
    let second = get_json(&gw.admin_url(next), &[]).await.2;
    assert_eq!(second["data"].as_array().map(Vec::len), Some(1), "{second}");
    assert_eq!(second["next"], Value::Null, "{second}");
    // `/schemas/plugins/{name}` holds the plugin's config as a record.
    let schema = get_json(&gw.admin_url("/schemas/plugins/key-auth"), &[])
        .await
        .2;
    let config = schema["fields"]
        .as_array()
        .and_then(|f| f.iter().find_map(|f| f.get("config")))
        .unwrap_or_else(|| panic!("no config field: {schema}"));
    assert_eq!(config["type"], "record", "{schema}");
}
