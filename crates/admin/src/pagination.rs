//! Kong's list options and list body: `size`, `offset`, `tags` in; `{"data", "offset", "next"}` out.
//!
//! Offsets are opaque tokens (base64 of a position in the filtered list). They stay valid for as long as the
//! config does; Kong's DB-less offsets have the same lifetime (a reload rebuilds the LMDB keys).

use crate::catalog::AdminEntity;
use crate::errors::ApiError;
use crate::query;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

/// Kong's default and largest page sizes.
const DEFAULT_SIZE: usize = 100;
const MAX_SIZE: usize = 1000;
/// Kong refuses a `tags` filter naming more tags than this.
const MAX_TAGS: usize = 5;
/// Marks our offset tokens, so a token from elsewhere is refused instead of misread.
const OFFSET_PREFIX: &str = "sluice:";

/// Anything a list endpoint returns: it has tags to filter on and a JSON shape.
pub trait Listed {
    fn listed_tags(&self) -> &[String];
    fn listed_json(&self) -> Value;
}

impl Listed for &dyn AdminEntity {
    fn listed_tags(&self) -> &[String] {
        self.tags()
    }
    fn listed_json(&self) -> Value {
        self.to_json()
    }
}

/// `?tags=`: `a,b` (all of them) or `a/b` (any of them).
#[derive(Debug, Clone, PartialEq)]
pub struct TagFilter {
    pub tags: Vec<String>,
    /// True for `,` (AND), false for `/` (OR).
    pub all: bool,
    /// The value as given, repeated in `next` links.
    raw: String,
}

impl TagFilter {
    /// Parses a `tags` value with Kong's rules and messages.
    pub fn parse(raw: &str) -> Result<TagFilter, ApiError> {
        let invalid = |message: &str| ApiError::InvalidOption {
            option: "tags",
            message: message.to_string(),
        };
        if raw.is_empty() {
            return Err(invalid("cannot be null"));
        }
        let all = !raw.contains('/');
        if raw.contains(',') && raw.contains('/') {
            return Err(invalid("invalid filter syntax"));
        }
        let sep = if all { ',' } else { '/' };
        let body = raw.strip_suffix(sep).unwrap_or(raw);
        let tags: Vec<String> = body.split(sep).map(String::from).collect();
        if tags
            .iter()
            .any(|t| t.is_empty() || t.chars().any(char::is_control))
        {
            return Err(invalid("invalid filter syntax"));
        }
        if tags.len() > MAX_TAGS {
            return Err(invalid("cannot query more than 5 tags"));
        }
        Ok(TagFilter {
            tags,
            all,
            raw: raw.to_string(),
        })
    }

    /// Whether an entity with `tags` passes the filter.
    pub fn matches(&self, tags: &[String]) -> bool {
        let has = |t: &String| tags.contains(t);
        if self.all {
            self.tags.iter().all(has)
        } else {
            self.tags.iter().any(has)
        }
    }
}

/// The list options of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    pub size: usize,
    /// `size` as given, repeated in `next` links (Kong repeats it only when given).
    size_raw: Option<String>,
    pub start: usize,
    pub tags: Option<TagFilter>,
}

impl ListQuery {
    /// Reads `size`, `offset` and `tags` from a query string, refusing bad values as Kong does.
    pub fn parse(query: Option<&str>) -> Result<ListQuery, ApiError> {
        let mut q = ListQuery {
            size: DEFAULT_SIZE,
            size_raw: None,
            start: 0,
            tags: None,
        };
        if let Some(raw) = query::get(query, "size") {
            q.size = parse_size(&raw)?;
            q.size_raw = Some(raw);
        }
        if let Some(raw) = query::get(query, "offset") {
            q.start = decode_offset(&raw).ok_or(ApiError::InvalidOffset(raw))?;
        }
        if let Some(raw) = query::get(query, "tags") {
            q.tags = Some(TagFilter::parse(&raw)?);
        }
        Ok(q)
    }

    /// Kong's list body for `items` (already in order), served at `base` (`/services`,
    /// `/services/{id}/routes`): filtered by tags, cut to one page, with `offset` and `next` when more remain.
    pub fn page<T: Listed>(&self, base: &str, items: &[T]) -> Value {
        let mut matching = items.iter().filter(|e| {
            self.tags
                .as_ref()
                .is_none_or(|t| t.matches(e.listed_tags()))
        });
        let data: Vec<Value> = matching
            .by_ref()
            .skip(self.start)
            .take(self.size)
            .map(Listed::listed_json)
            .collect();
        if matching.next().is_none() {
            return json!({ "data": data, "next": Value::Null });
        }
        let offset = encode_offset(self.start + self.size);
        let mut next = format!("{base}?offset={}", query::escape(&offset));
        if let Some(tags) = &self.tags {
            next.push_str(&format!("&tags={}", query::escape(&tags.raw)));
        }
        if let Some(size) = &self.size_raw {
            next.push_str(&format!("&size={}", query::escape(size)));
        }
        json!({ "data": data, "offset": offset, "next": next })
    }
}

/// Kong's `size` check: a number, then an integer in 1..=1000.
fn parse_size(raw: &str) -> Result<usize, ApiError> {
    let n: f64 = raw
        .trim()
        .parse()
        .map_err(|_| ApiError::InvalidSize("size must be a number".into()))?;
    if n.fract() != 0.0 || !(1.0..=MAX_SIZE as f64).contains(&n) {
        return Err(ApiError::InvalidSize(format!(
            "size must be an integer between 1 and {MAX_SIZE}"
        )));
    }
    Ok(n as usize)
}

fn encode_offset(position: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{OFFSET_PREFIX}{position}"))
}

fn decode_offset(token: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(token.trim_end_matches('=')).ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix(OFFSET_PREFIX)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
