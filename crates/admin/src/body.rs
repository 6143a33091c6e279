//! Reading the declarative document out of a `POST /config` body, and the JSON object out of a write's.
//!
//! Kong accepts the config as the raw body (JSON or YAML, whatever the content type says: it tries JSON, then
//! YAML), as a form field `config` (urlencoded or multipart, e.g. `curl -F config=@kong.yml`), or as a JSON
//! body `{"config": "<yaml or json text>"}`.

use crate::errors::ApiError;
use crate::query;
use serde_json::{Map, Value};
use sluice_model::declarative::{json_document, to_document};

/// Kong's answer to an empty `POST /config`.
const NO_CONFIG: &str = "expected a declarative configuration";

/// The declarative document in a request body.
pub fn declarative_doc(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    let ct = content_type.to_ascii_lowercase();
    let text: std::borrow::Cow<'_, str> = if ct.starts_with("application/x-www-form-urlencoded") {
        let body = std::str::from_utf8(body).map_err(|_| not_utf8())?;
        query::get(Some(body), "config")
            .ok_or_else(no_config)?
            .into()
    } else if ct.starts_with("multipart/form-data") {
        multipart_field(content_type, body, "config")
            .ok_or_else(no_config)?
            .into()
    } else {
        std::str::from_utf8(body).map_err(|_| not_utf8())?.into()
    };
    let doc = parse_text(&text)?;
    if doc.get("_format_version").is_some() {
        return Ok(doc);
    }
    match doc.get("config") {
        Some(Value::String(inner)) => parse_text(inner),
        Some(inner @ Value::Object(_)) => Ok(inner.clone()),
        _ => Ok(doc),
    }
}

/// An entity write's (or a schema validation's) JSON body: an object, read under the document's memory
/// budget and depth limit.
pub fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match std::str::from_utf8(body).map(json_document) {
        Ok(Ok(Value::Object(m))) => Ok(m),
        _ => Err(ApiError::BadRequest("Cannot parse JSON body".into())),
    }
}

/// JSON or YAML text → a document object.
fn parse_text(text: &str) -> Result<Value, ApiError> {
    if text.trim().is_empty() {
        return Err(no_config());
    }
    let doc = to_document(text).map_err(|reason| ApiError::unparsable(&reason))?;
    if !doc.is_object() {
        return Err(ApiError::unparsable(
            "failed parsing declarative configuration: expected an object",
        ));
    }
    Ok(doc)
}

fn no_config() -> ApiError {
    ApiError::BadRequest(NO_CONFIG.into())
}

fn not_utf8() -> ApiError {
    ApiError::unparsable("failed parsing declarative configuration: the body is not UTF-8")
}

/// The value of field `name` of a multipart/form-data body, or None when absent or malformed.
fn multipart_field(content_type: &str, body: &[u8], name: &str) -> Option<String> {
    let boundary = content_type.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"'))
    })?;
    let delimiter = format!("--{boundary}");
    let body = String::from_utf8_lossy(body);
    body.split(delimiter.as_str()).find_map(|part| {
        let (head, value) = part.split_once("\r\n\r\n")?;
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?;
        let field = disposition.split(';').find_map(|p| {
            let (k, v) = p.trim().split_once('=')?;
            (k == "name").then(|| v.trim_matches('"'))
        })?;
        (field == name).then(|| value.strip_suffix("\r\n").unwrap_or(value).to_string())
    })
}

#[cfg(test)]
mod tests;
