//! Entry points for the fuzz targets in `fuzz/` (not an API): the Admin API's own parsing of what a client
//! sends, which no other crate reaches. Each must return without panicking whatever the input.

use sluice_model::declarative::kinds::TABLE;

/// A form body (`application/x-www-form-urlencoded`) decoded and typed as each entity kind's schema would.
pub fn form_body(text: &str) {
    for kind in TABLE {
        let mut fields = crate::form::decode(text);
        kind.schema().infer(&mut fields);
    }
}

/// A request target's query string and path, unescaped as the router of the Admin API reads them.
pub fn target(text: &str) {
    let (path, query) = text.split_once('?').unwrap_or((text, ""));
    let _ = crate::query::pairs(Some(query));
    let _ = crate::query::unescape_path(path);
    let _ = crate::router::segments(path);
}
