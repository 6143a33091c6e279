//! Reading a `POST /config` body: JSON, YAML, or a form field `config` (urlencoded or multipart).

use crate::page::params;
use serde_json::Value;
use sluice_model::declarative::to_document;

/// The declarative document in a request body, or a message saying why it could not be read.
pub fn declarative_doc(content_type: &str, body: &[u8]) -> Result<Value, String> {
    let ct = content_type.to_ascii_lowercase();
    let text = if ct.starts_with("application/x-www-form-urlencoded") {
        let body = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
        params(Some(body))
            .into_iter()
            .find(|(k, _)| k == "config")
            .map(|(_, v)| v)
            .ok_or("expected a 'config' field")?
    } else if ct.starts_with("multipart/form-data") {
        multipart_field(&ct, content_type, body, "config")?
    } else {
        String::from_utf8(body.to_vec()).map_err(|_| "the body is not UTF-8".to_string())?
    };
    if text.trim().is_empty() {
        return Err("expected a declarative configuration".into());
    }
    let doc = to_document(&text)?;
    // A JSON body may wrap the config as {"config": "<yaml or json text>"} (what `GET /config` returns).
    if let Some(Value::String(inner)) = doc.get("config") {
        if doc.as_object().is_some_and(|m| m.len() == 1) {
            return to_document(inner);
        }
    }
    Ok(doc)
}

/// The value of one field of a multipart/form-data body.
fn multipart_field(
    lower_ct: &str,
    content_type: &str,
    body: &[u8],
    name: &str,
) -> Result<String, String> {
    let start = lower_ct
        .find("boundary=")
        .ok_or("multipart body without a boundary")?
        + 9;
    let boundary = content_type[start..]
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches('"');
    let body = String::from_utf8_lossy(body);
    let delimiter = format!("--{boundary}");
    for part in body.split(delimiter.as_str()) {
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let wanted = format!("name=\"{name}\"");
        if head.contains(&wanted) {
            return Ok(value.strip_suffix("\r\n").unwrap_or(value).to_string());
        }
    }
    Err(format!("expected a '{name}' field"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_body_shape() {
        let yaml = "_format_version: '3.0'\n";
        assert_eq!(
            declarative_doc("application/x-yaml", yaml.as_bytes()).unwrap()["_format_version"],
            "3.0"
        );
        assert_eq!(
            declarative_doc("application/json", br#"{"_format_version":"3.0"}"#).unwrap()
                ["_format_version"],
            "3.0"
        );
        let form = "config=_format_version%3A+%223.0%22%0A";
        assert_eq!(
            declarative_doc("application/x-www-form-urlencoded", form.as_bytes()).unwrap()
                ["_format_version"],
            "3.0"
        );
        let mp = "--XX\r\nContent-Disposition: form-data; name=\"config\"\r\n\r\n_format_version: '3.0'\r\n--XX--\r\n";
        assert_eq!(
            declarative_doc("multipart/form-data; boundary=XX", mp.as_bytes()).unwrap()
                ["_format_version"],
            "3.0"
        );
        let wrapped = serde_json::json!({"config": yaml}).to_string();
        assert_eq!(
            declarative_doc("application/json", wrapped.as_bytes()).unwrap()["_format_version"],
            "3.0"
        );
        assert!(declarative_doc("application/json", b"{nope").is_err());
        assert!(declarative_doc("application/json", b"").is_err());
    }
}
