//! `GET /tags` and `GET /tags/{tag}`: every (entity, tag) pair, Kong's `{entity_name, entity_id, tag}` rows.

use crate::catalog::COLLECTIONS;
use crate::errors::ApiError;
use crate::pagination::{ListQuery, Listed};
use crate::reply::{self, Reply};
use serde_json::{json, Value};
use sluice_model::Config;

/// One row of `/tags`.
struct TagRow<'c> {
    entity_name: &'static str,
    entity_id: uuid::Uuid,
    tag: &'c str,
}

impl Listed for TagRow<'_> {
    /// Rows are not tag-filtered (Kong's `/tags` takes no `tags` option): no tags.
    fn listed_tags(&self) -> &[String] {
        &[]
    }
    fn listed_json(&self) -> Value {
        json!({ "entity_name": self.entity_name, "entity_id": self.entity_id, "tag": self.tag })
    }
}

/// One page of tag rows, only those for `tag` when given.
pub fn list(
    config: &Config,
    tag: Option<&str>,
    base: &str,
    q: Option<&str>,
) -> Result<Reply, ApiError> {
    let mut list_query = ListQuery::parse(q)?;
    list_query.tags = None;
    let mut rows = Vec::new();
    for coll in COLLECTIONS {
        for entity in (coll.entities)(config) {
            for t in entity.tags() {
                if tag.is_none_or(|want| want == t) {
                    rows.push(TagRow {
                        entity_name: coll.schema,
                        entity_id: entity.id(),
                        tag: t,
                    });
                }
            }
        }
    }
    Ok(reply::ok(&list_query.page(base, &rows)))
}
