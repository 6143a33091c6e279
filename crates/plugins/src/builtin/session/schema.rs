//! The session plugin's config: Kong 3.x's schema with its defaults (a random `secret` per process, as
//! Kong draws one when its schema loads), Kong's deprecated shorthands (`cookie_lifetime`,
//! `cookie_idletime`, `cookie_renew`, `cookie_discard`, `cookie_samesite`, `cookie_httponly`,
//! `cookie_persistent`), which write through to the current fields and are not kept, and the typed config
//! the plugin is built from. Runs when a config is validated and when the plugin is compiled.

use base64::Engine;
use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};
use std::sync::OnceLock;

const SAME_SITE: &[&str] = &["Strict", "Lax", "None", "Default"];
const HEADERS: &[&str] = &[
    "id",
    "audience",
    "subject",
    "timeout",
    "idling-timeout",
    "rolling-timeout",
    "absolute-timeout",
];

#[derive(Debug, Deserialize)]
pub(super) struct Config {
    pub secret: String,
    pub audience: String,
    pub idling_timeout: f64,
    pub rolling_timeout: f64,
    pub absolute_timeout: f64,
    pub cookie_name: String,
    pub cookie_path: String,
    pub cookie_domain: Option<String>,
    pub cookie_same_site: String,
    pub cookie_http_only: bool,
    pub cookie_secure: bool,
    pub remember: bool,
    pub remember_cookie_name: String,
    pub remember_rolling_timeout: f64,
    pub remember_absolute_timeout: f64,
    pub response_headers: Option<Vec<String>>,
    pub request_headers: Option<Vec<String>>,
    pub read_body_for_logout: bool,
    pub logout_methods: Option<Vec<String>>,
    pub logout_query_arg: Option<String>,
    pub logout_post_arg: Option<String>,
}

/// Kong's default `secret`: 32 random bytes in base64 with `/`, `+` and `=` replaced by a random digit,
/// capital and small letter; drawn once per process, so every load of a config without a `secret` gets
/// the same one until a restart (as in Kong, where the schema's default is drawn when it loads).
fn default_secret() -> &'static str {
    static SECRET: OnceLock<String> = OnceLock::new();
    SECRET.get_or_init(|| {
        let bytes: [u8; 32] = rand::random();
        let [digit, upper, lower]: [u8; 3] = rand::random();
        base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .replace('/', &char::from(b'0' + digit % 10).to_string())
            .replace('+', &char::from(b'A' + upper % 26).to_string())
            .replace('=', &char::from(b'a' + lower % 26).to_string())
    })
}

pub(super) fn schema() -> Schema {
    let number = |default: u32| Field::number().default(default);
    let headers = || Field::set(Field::string().one_of(HEADERS));
    Schema::new(vec![
        ("secret", Field::string().default(default_secret())),
        (
            "storage",
            Field::string()
                .one_of(&["cookie", "kong"])
                .default("cookie"),
        ),
        ("audience", Field::string().default("default")),
        ("idling_timeout", number(900)),
        ("rolling_timeout", number(3600)),
        ("absolute_timeout", number(86400)),
        ("stale_ttl", number(10)),
        ("cookie_name", Field::string().default("session")),
        ("cookie_path", Field::string().default("/")),
        ("cookie_domain", Field::string()),
        (
            "cookie_same_site",
            Field::string().one_of(SAME_SITE).default("Strict"),
        ),
        ("cookie_http_only", Field::boolean().default(true)),
        ("cookie_secure", Field::boolean().default(true)),
        ("remember", Field::boolean().default(false)),
        ("remember_cookie_name", Field::string().default("remember")),
        ("remember_rolling_timeout", number(604_800)),
        ("remember_absolute_timeout", number(2_592_000)),
        ("response_headers", headers()),
        ("request_headers", headers()),
        ("read_body_for_logout", Field::boolean().default(false)),
        (
            "logout_methods",
            Field::set(Field::string().one_of(&["GET", "POST", "DELETE"]))
                .default(serde_json::json!(["POST", "DELETE"])),
        ),
        (
            "logout_query_arg",
            Field::string().default("session_logout"),
        ),
        ("logout_post_arg", Field::string().default("session_logout")),
        // Kong 3.10's (false when unset): stored and exported only when given, for Kong 3.9.
        ("hash_subject", Field::boolean().only_when_set()),
        ("store_metadata", Field::boolean().only_when_set()),
        // Kong's deprecated shorthands, translated by `shorthands` and then dropped.
        ("cookie_lifetime", Field::number()),
        ("cookie_idletime", Field::number()),
        ("cookie_renew", Field::number()),
        ("cookie_discard", Field::number()),
        (
            "cookie_samesite",
            Field::string().one_of(&["Strict", "Lax", "None", "Default", "off"]),
        ),
        ("cookie_httponly", Field::boolean()),
        ("cookie_persistent", Field::boolean()),
    ])
    .with_subschema(shorthands)
    .with_check(check)
}

/// Kong's shorthands: each one given sets its current field (`cookie_idletime: null` sets an idling
/// timeout of 0, `cookie_samesite: off` is `Lax`, `cookie_renew` is ignored), and none is kept.
fn shorthands(given: &Map<String, Value>, out: &mut Map<String, Value>) {
    const MOVES: [(&str, &str); 6] = [
        ("cookie_lifetime", "rolling_timeout"),
        ("cookie_idletime", "idling_timeout"),
        ("cookie_discard", "stale_ttl"),
        ("cookie_samesite", "cookie_same_site"),
        ("cookie_httponly", "cookie_http_only"),
        ("cookie_persistent", "remember"),
    ];
    for (old, new) in MOVES {
        let value = out.remove(old).unwrap_or(Value::Null);
        let value = match (old, value) {
            ("cookie_idletime", Value::Null) if given.contains_key(old) => Value::from(0),
            ("cookie_samesite", Value::String(s)) if s == "off" => Value::from("Lax"),
            (_, Value::Null) => continue,
            (_, v) => v,
        };
        out.insert(new.to_string(), value);
    }
    out.remove("cookie_renew");
}

/// Sessions live in their cookies only: Kong's `kong` storage (a table in its database) is refused.
fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    if m["storage"] == "kong" {
        return Err(vec![FieldError::new(
            "storage",
            "storage 'kong' (sessions in the database) is not supported by this build; use 'cookie'",
        )]);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
