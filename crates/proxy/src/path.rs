//! The upstream path: the service path joined with what is left of the request path (Kong's `strip_path`
//! and `path_handling`).
//!
//! - `strip_path`: the matched prefix (or whole regex match) is removed from the request path first.
//! - `v0`: the service path and the rest are joined with exactly one slash between them; an empty rest leaves
//!   the service path as it is.
//! - `v1`: concatenated as they are, except that a rest starting with `/` after a service path ending with `/`
//!   loses one slash.

/// Builds the upstream path (without the query string).
pub fn upstream_path(
    service_path: Option<&str>,
    request_path: &str,
    strip_len: usize,
    v1: bool,
) -> String {
    let rest = request_path.get(strip_len..).unwrap_or("");
    let base = service_path.unwrap_or("/");
    let mut out = String::with_capacity(base.len() + rest.len() + 1);
    out.push_str(base);
    if rest.is_empty() {
        return out;
    }
    match (base.ends_with('/'), rest.starts_with('/')) {
        (true, true) => out.push_str(&rest[1..]),
        (false, false) if !v1 => {
            out.push('/');
            out.push_str(rest);
        }
        _ => out.push_str(rest),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::upstream_path;

    #[test]
    fn joins_like_kong() {
        // (service path, request path, stripped bytes, v1, expected)
        let table: &[(Option<&str>, &str, usize, bool, &str)] = &[
            (None, "/api/items", 4, false, "/items"),
            (None, "/api", 4, false, "/"),
            (None, "/api/items", 0, false, "/api/items"),
            (Some("/base"), "/api/items", 4, false, "/base/items"),
            (Some("/base"), "/api", 4, false, "/base"),
            (Some("/base/"), "/api", 4, false, "/base/"),
            (Some("/base/"), "/api/items", 4, false, "/base/items"),
            (Some("/base"), "/apiitems", 4, false, "/base/items"),
            (Some("/base"), "/apiitems", 4, true, "/baseitems"),
            (Some("/base"), "/api/items", 0, false, "/base/api/items"),
            (Some("/"), "/x", 0, false, "/x"),
            (None, "/", 1, false, "/"),
        ];
        for (svc, req, strip, v1, want) in table {
            assert_eq!(
                upstream_path(*svc, req, *strip, *v1),
                *want,
                "{svc:?} {req} strip {strip} v1 {v1}"
            );
        }
    }
}
