//! Kong's migration of `_format_version` 1.1 and 2.1 documents to 3.0, applied before anything else reads
//! them: route paths that are not plain paths were regexes then, and 3.0 marks regexes with a leading `~`.
//! A plain path uses only `A-Z a-z 0-9 . - _ ~ / %`, and is normalized as a request path is
//! ([`crate::uri_path::normalize`]: escapes of unreserved characters decoded, dot segments removed, slashes
//! merged), since 3.0 no longer normalizes route paths when it loads them. Any other path becomes `~`
//! followed by the path with its percent-escapes decoded as a regex needs them (reserved characters stay
//! escaped, upper-cased; regex metacharacters become backslash escapes; the rest become the character). The
//! document then says 3.0.

use serde_json::Value;

/// Migrates `doc` in place when it is a 1.1 or 2.1 document.
pub fn migrate(doc: &mut Value) {
    let Some(Value::String(version)) = doc.get("_format_version") else {
        return;
    };
    if version != "1.1" && version != "2.1" {
        return;
    }
    if let Some(Value::Array(routes)) = doc.get_mut("routes") {
        routes.iter_mut().for_each(migrate_route);
    }
    if let Some(Value::Array(services)) = doc.get_mut("services") {
        for service in services {
            if let Some(Value::Array(routes)) = service.get_mut("routes") {
                routes.iter_mut().for_each(migrate_route);
            }
        }
    }
    doc["_format_version"] = "3.0".into();
}

fn migrate_route(route: &mut Value) {
    if let Some(Value::Array(paths)) = route.get_mut("paths") {
        for path in paths {
            if let Value::String(p) = path {
                *p = match is_plain(p) {
                    true => crate::uri_path::normalize(p).into_owned(),
                    false => format!("~{}", decode_for_regex(p)),
                };
            }
        }
    }
}

fn is_plain(path: &str) -> bool {
    path.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~' | b'/' | b'%'))
}

/// Characters whose percent-escape stays (upper-cased): they mean something in a URL.
const RESERVED: &[u8] = b"!#$%&'()*+,/:;=?@[]";

/// Decodes `%XX` escapes for use in a regex.
fn decode_for_regex(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        let decoded = hex
            .filter(|_| bytes[i] == b'%')
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match decoded {
            Some(b) if RESERVED.contains(&b) => out.push_str(&format!("%{b:02X}")),
            Some(b) if b".^-{}\\|".contains(&b) => {
                out.push('\\');
                out.push(b as char);
            }
            Some(b) if b.is_ascii() => out.push(b as char),
            _ => {
                // Not an escape (or not ASCII): kept as written.
                let c = path[i..].chars().next().unwrap_or('%');
                out.push(c);
                i += c.len_utf8();
                continue;
            }
        }
        i += 3;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn old_regex_paths_get_a_tilde() {
        let mut doc = json!({"_format_version": "2.1",
            "routes": [{"paths": ["/plain/path-1.2_~", "/api/v\\d+/users", "/a//b/./c/../d%7e%2F"]}],
            "services": [{"routes": [{"paths": ["/s/(a|b)", "/x%2Fy%2ez%41"]}]}]});
        migrate(&mut doc);
        assert_eq!(doc["_format_version"], "3.0");
        assert_eq!(
            doc["routes"][0]["paths"],
            json!(["/plain/path-1.2_~", "~/api/v\\d+/users", "/a/b/d~%2F"])
        );
        assert_eq!(
            doc["services"][0]["routes"][0]["paths"],
            json!(["~/s/(a|b)", "/x%2Fy.zA"])
        );
        let mut three = json!({"_format_version": "3.0", "routes": [{"paths": ["/a(b)"]}]});
        migrate(&mut three);
        assert_eq!(three["routes"][0]["paths"], json!(["/a(b)"]));
        assert_eq!(decode_for_regex("/x%2Fy%2ez%41(%7C)"), "/x%2Fy\\.zA(\\|)");
    }

    #[test]
    fn json_with_a_trailing_comma_reads_as_yaml() {
        let doc =
            crate::declarative::to_document("{\"_format_version\": \"3.0\", \"services\": [],}");
        assert_eq!(doc.unwrap()["_format_version"], "3.0");
    }
}
