//! proxy-cache's config: Kong's schema (fields, defaults, rules) and the typed form the factory reads.

use serde::Deserialize;
use sluice_model::schema::{Field, Schema};

#[derive(Debug, Deserialize)]
pub(super) struct Memory {
    pub(super) dictionary_name: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct Shown {
    pub(super) age: bool,
    #[serde(rename = "X-Cache-Status")]
    pub(super) status: bool,
    #[serde(rename = "X-Cache-Key")]
    pub(super) key: bool,
}

#[derive(Debug, Deserialize)]
pub(super) struct Config {
    pub(super) response_code: Vec<u16>,
    pub(super) request_method: Vec<String>,
    pub(super) content_type: Vec<String>,
    pub(super) cache_ttl: u64,
    pub(super) cache_control: bool,
    pub(super) ignore_uri_case: bool,
    pub(super) storage_ttl: Option<u64>,
    pub(super) memory: Memory,
    pub(super) vary_query_params: Option<Vec<String>>,
    pub(super) vary_headers: Option<Vec<String>>,
    pub(super) response_headers: Shown,
}

pub(super) fn schema() -> Schema {
    let strings = || Field::array(Field::string());
    let shown = |name| (name, Field::boolean().default(true));
    Schema::new(vec![
        (
            "response_code",
            Field::array(Field::integer().between(100.0, 900.0))
                .len_min(1)
                .required()
                .default(serde_json::json!([200, 301, 404])),
        ),
        (
            "request_method",
            Field::array(Field::string().one_of(&["HEAD", "GET", "POST", "PATCH", "PUT"]))
                .required()
                .default(serde_json::json!(["GET", "HEAD"])),
        ),
        (
            "content_type",
            strings()
                .required()
                .default(serde_json::json!(["text/plain", "application/json"])),
        ),
        ("cache_ttl", Field::integer().default(300).gt(0.0)),
        ("strategy", Field::string().one_of(&["memory"]).required()),
        ("cache_control", Field::boolean().default(false).required()),
        ("ignore_uri_case", Field::boolean().default(false)),
        ("storage_ttl", Field::integer()),
        (
            "memory",
            Field::record(Schema::new(vec![(
                "dictionary_name",
                Field::string().required().default("kong_db_cache"),
            )])),
        ),
        ("vary_query_params", strings()),
        ("vary_headers", strings()),
        (
            "response_headers",
            Field::record(Schema::new(vec![
                shown("age"),
                shown("X-Cache-Status"),
                shown("X-Cache-Key"),
            ])),
        ),
    ])
}
