//! `GET /schemas/{entity}`, `GET /schemas/plugins/{name}`, their `POST .../validate` variants, and
//! `GET /endpoints`: what decK reads to fill in defaults before it diffs, and Kong Manager to build forms.

use crate::catalog;
use crate::errors::ApiError;
use crate::reply::{self, Reply};
use crate::Control;
use serde_json::{json, Map, Value};
use sluice_model::declarative::kinds::Kind;
use sluice_model::declarative::validate_one;
use sluice_model::schema::FieldError;
use sluice_model::writes::WriteError;
use uuid::Uuid;

/// `GET /schemas/{entity}`: the entity's fields in Kong's shape, foreign keys as `foreign` references.
pub fn entity(name: &str) -> Result<Reply, ApiError> {
    let kind = Kind::from_key(name).ok_or_else(|| no_schema(name))?;
    Ok(reply::ok(&entity_json(kind)))
}

/// `GET /schemas/plugins/{name}`: the plugin entity's schema with the plugin's own `config` record.
pub fn plugin(control: &dyn Control, name: &str) -> Result<Reply, ApiError> {
    let registry = control.registry().ok_or(ApiError::NotFound)?;
    let def = registry.plugin(name).ok_or(ApiError::NotFound)?;
    let mut schema = entity_json(Kind::Plugin);
    let mut config = def.config.to_kong_json();
    if let Value::Object(m) = &mut config {
        m.remove("entity_checks");
        m.insert("type".into(), "record".into());
        m.insert("required".into(), true.into());
    }
    set_field(&mut schema, "config", config);
    if let Some(own) = def.protocols {
        let fields = schema["fields"].as_array_mut();
        if let Some(protocols) = fields
            .into_iter()
            .flatten()
            .find_map(|f| f.get_mut("protocols"))
        {
            protocols["default"] = own.into();
        }
    }
    for (field, forbidden) in [
        ("consumer", def.no_consumer),
        ("route", def.no_route),
        ("service", def.no_service),
    ] {
        if forbidden {
            set_field(
                &mut schema,
                field,
                json!({ "type": "foreign", "reference": format!("{field}s"), "eq": null }),
            );
        }
    }
    Ok(reply::ok(&schema))
}

/// `POST /schemas/{entity}/validate` and `POST /schemas/plugins/validate`: 200 when the body is a valid
/// entity, else the schema violation a write would answer.
pub fn validate(control: &dyn Control, name: &str, body: &[u8]) -> Result<Reply, ApiError> {
    let kind = Kind::from_key(name).ok_or_else(|| no_schema(name))?;
    let registry = control.registry().ok_or(ApiError::NotFound)?;
    let body = crate::body::json_object(body)?;
    // Kong validates a given `id` as a UUID; a missing one is generated.
    let given = body.get("id").filter(|v| !v.is_null());
    let id = given
        .and_then(Value::as_str)
        .filter(|s| s.len() == 36)
        .and_then(|s| Uuid::parse_str(s).ok());
    let mut errors = Vec::new();
    if given.is_some() && id.is_none() {
        errors.push(FieldError::new("id", "expected a valid UUID"));
    }
    let id = id.unwrap_or_else(Uuid::new_v4);
    if let Err(found) = validate_one(kind, body, id, Vec::new(), registry, true) {
        errors.extend(found);
    }
    if !errors.is_empty() {
        return Err(ApiError::Write(WriteError::Schema(errors)));
    }
    Ok(reply::ok(
        &json!({ "message": "schema validation successful" }),
    ))
}

/// `GET /endpoints`: every path this Admin API serves, in Kong's `{data, next}` shape.
pub fn endpoints() -> Reply {
    let mut data: Vec<String> = [
        "/",
        "/status",
        "/status/dns",
        "/config",
        "/tags",
        "/tags/{tags}",
        "/plugins/enabled",
        "/endpoints",
        "/timers",
        "/schemas/{db_entity_name}",
        "/schemas/{db_entity_name}/validate",
        "/schemas/plugins/{name}",
        "/schemas/plugins/validate",
        "/upstreams/{upstreams}/health",
        "/upstreams/{upstreams}/targets/{targets}/healthy",
        "/upstreams/{upstreams}/targets/{targets}/unhealthy",
        "/upstreams/{upstreams}/targets/all",
        "/proxy-cache",
        "/proxy-cache/{cache_key}",
        "/proxy-cache/{plugin_id}/caches/{cache_key}",
        "/clustering/data-planes",
        "/clustering/status",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for c in catalog::COLLECTIONS {
        data.push(format!("/{}", c.path));
        data.push(format!("/{0}/{{{0}}}", c.path));
    }
    for r in catalog::RELATIONS {
        data.push(format!("/{0}/{{{0}}}/{1}", r.parent, r.segment));
        data.push(format!("/{0}/{{{0}}}/{1}/{{{1}}}", r.parent, r.segment));
    }
    data.sort();
    reply::ok(&json!({ "data": data, "next": null }))
}

fn no_schema(_name: &str) -> ApiError {
    ApiError::NotFound
}

/// The entity schema with Kong's markings: `id` auto UUID, timestamps auto, foreign keys as references.
fn entity_json(kind: Kind) -> Value {
    let mut schema = kind.schema().to_kong_json();
    set_field(
        &mut schema,
        "id",
        json!({ "type": "string", "uuid": true, "auto": true }),
    );
    for ts in ["created_at", "updated_at"] {
        set_field(
            &mut schema,
            ts,
            json!({ "type": "integer", "timestamp": true, "auto": true }),
        );
    }
    for fk in kind.references() {
        let required = field(&schema, fk.field).is_some_and(|f| f["required"] == true);
        let mut reference = json!({ "type": "foreign", "reference": fk.parent.key() });
        if required {
            reference["required"] = true.into();
        }
        set_field(&mut schema, fk.field, reference);
    }
    schema
}

fn field<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    schema["fields"]
        .as_array()?
        .iter()
        .find_map(|f| f.get(name))
}

/// Replaces field `name` of a Kong-shaped schema (or appends it).
fn set_field(schema: &mut Value, name: &str, value: Value) {
    let Some(fields) = schema["fields"].as_array_mut() else {
        return;
    };
    match fields.iter_mut().find_map(|f| f.get_mut(name)) {
        Some(slot) => *slot = value,
        None => {
            let mut one = Map::new();
            one.insert(name.to_string(), value);
            fields.push(Value::Object(one));
        }
    }
}
