//! Kong's declarative config (`kong.yml` / JSON, as decK writes it) → validated [`Config`].
//!
//! The pass order: [`collect`] flattens nested entities (routes under services, credentials under consumers, ...)
//! into one list, remembering each one's parent and input position; [`build`] gives every entity its id (kept
//! when given, otherwise a UUIDv5 derived from its identity, so the same file gets the same ids), resolves
//! references by name or id, validates each entity against its [`schemas`] schema and plugin configs against
//! the plugin's schema, checks uniqueness, and hashes the result. All errors are collected. A reload may
//! hand it the previous load's result: entities whose input did not change are copied from it instead of
//! validated again ([`reuse`]).

use crate::errors::ConfigErrors;
use crate::schema::FieldError;
use crate::{Config, PluginRegistry};
use serde_json::Value;

mod bounded;
mod build;
mod collect;
mod export;
mod json;
pub mod kinds;
mod legacy;
mod one;
pub mod reuse;
pub mod schemas;
#[cfg(test)]
mod tests;
mod typed;
mod yaml;
mod yaml_bounds;

pub use export::{export, export_of, export_yaml, for_each_entity, for_each_entity_of};
pub use one::{validate_one, Validated};
pub use reuse::{Copies, Previous, Reusable};
pub use typed::{
    attach_snis, from_store, random_secret, remove as remove_entity, upsert as upsert_entity,
};

/// Reads YAML or JSON text into a document. YAML is a superset of JSON, but JSON is parsed directly when it
/// looks like JSON, for speed on large `POST /config` bodies. Either way the document may take only a
/// small multiple of the text's size in memory and nest at most 100 deep (see `bounded`).
pub fn to_document(text: &str) -> Result<Value, String> {
    let failed =
        |e: &dyn std::fmt::Display| format!("failed parsing declarative configuration: {e}");
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        match json_document(trimmed) {
            Ok(doc) => return Ok(doc),
            // Too deep or too big: reading it as YAML would be no cheaper.
            Err(e) if e.classify() == serde_json::error::Category::Data => return Err(failed(&e)),
            // Kong reads a body as YAML too: JSON that is not strict JSON (a trailing comma) is YAML's.
            Err(_) => {}
        }
    }
    yaml_bounds::check_flow_depth(text)?;
    yaml::read(text, &bounded::Budget::of(text)).map_err(|e| failed(&e))
}

/// Strict JSON text → a document, under the memory budget and depth limit of [`to_document`]. For
/// JSON request bodies (Admin API writes) as much as for declarative files.
pub fn json_document(text: &str) -> Result<Value, serde_json::Error> {
    json::read(text, &bounded::Budget::of(text))
}

/// Parses and validates a declarative config given as YAML or JSON text.
pub fn parse(text: &str, registry: &dyn PluginRegistry) -> Result<Config, ConfigErrors> {
    match to_document(text) {
        Ok(doc) => parse_value(doc, registry),
        Err(message) => Err(ConfigErrors {
            document: vec![FieldError::new("@document", message)],
            entities: Vec::new(),
        }),
    }
}

/// Validates a parsed declarative document.
pub fn parse_value(doc: Value, registry: &dyn PluginRegistry) -> Result<Config, ConfigErrors> {
    parse_value_reusing(doc, registry, None).map(|(config, _)| config)
}

/// [`parse_value`], taking a copy of each entity of `previous` whose input did not change instead of
/// validating it again (see [`reuse`]). Returns the config and what the next load may reuse of it, to be
/// kept with it. `previous` must be a config and the [`Reusable`] its load returned, with the same
/// registry; the result is the config [`parse_value`] gives, with `previous`'s timestamps on the entities
/// taken from it.
pub fn parse_value_reusing(
    mut doc: Value,
    registry: &dyn PluginRegistry,
    previous: Option<Previous<'_>>,
) -> Result<(Config, Reusable), ConfigErrors> {
    legacy::migrate(&mut doc);
    let mut errors = ConfigErrors::default();
    let collected = collect::collect(doc, &mut errors.document);
    build::build(collected, registry, &mut errors, previous)
}

mod prepare;

impl Config {
    /// Kong's `configuration_hash` of this config: 32 hex chars; the same file always gives the same hash.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Entity counts per kind, in table order (for `config check` and logs).
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        fn count<T>(key: &'static str, list: &[T], out: &mut Vec<(&'static str, usize)>) {
            out.push((key, list.len()));
        }
        let mut counts = Vec::with_capacity(kinds::TABLE.len());
        crate::entities::each_entity_list!(self, count, &mut counts);
        counts
    }

    /// One line, e.g. `2 services, 3 routes, 1 upstream, ...` (kinds with no entity left out).
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .counts()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| {
                let name = if n == 1 { k.trim_end_matches('s') } else { k };
                format!("{n} {name}")
            })
            .collect();
        if parts.is_empty() {
            "empty configuration".into()
        } else {
            parts.join(", ")
        }
    }
}
