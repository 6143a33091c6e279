//! The format of gateway-made error bodies, negotiated from `Accept` like Kong: the media range with the
//! highest `q` wins (the first one on ties); JSON for anything unknown or absent.

/// A format Kong can render an error in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mime {
    Json,
    Html,
    Xml,
    Plain,
}

impl Mime {
    /// The `Content-Type` of a body in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Mime::Json => "application/json; charset=utf-8",
            Mime::Html => "text/html; charset=utf-8",
            Mime::Xml => "application/xml; charset=utf-8",
            Mime::Plain => "text/plain; charset=utf-8",
        }
    }

    /// Kong's error body for `message` in this format.
    pub fn error_body(self, message: &str, request_id: &str) -> String {
        match self {
            Mime::Json => format!(
                "{{\n  \"message\":{},\n  \"request_id\":\"{request_id}\"\n}}",
                serde_json::Value::from(message)
            ),
            Mime::Html => format!(
                "<!doctype html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n    <title>Error</title>\n  </head>\n  <body>\n    <h1>Error</h1>\n    <p>{message}.</p>\n    <p>request_id: {request_id}</p>\n  </body>\n</html>\n"
            ),
            Mime::Xml => format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<error>\n  <message>{message}</message>\n  <requestid>{request_id}</requestid>\n</error>\n"
            ),
            Mime::Plain => format!("{message}\nrequest_id: {request_id}\n"),
        }
    }
}

/// The format for an `Accept` header value (or JSON without one).
pub fn negotiate(accept: Option<&[u8]>) -> Mime {
    let Some(accept) = accept.and_then(|a| std::str::from_utf8(a).ok()) else {
        return Mime::Json;
    };
    let mut best = Mime::Json;
    let mut best_q = 0.0f32;
    for range in accept.split(',') {
        let mut params = range.split(';').map(str::trim);
        let media = params.next().unwrap_or("").to_ascii_lowercase();
        let Some((kind, sub)) = media.split_once('/') else {
            continue;
        };
        if kind.is_empty() || sub.is_empty() {
            continue;
        }
        let q = params
            .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
            .find_map(|v| v.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if q > best_q {
            best_q = q;
            best = of(kind, sub);
        }
    }
    best
}

fn of(kind: &str, sub: &str) -> Mime {
    match (kind, sub) {
        ("text", "html") => Mime::Html,
        ("application", "xml") => Mime::Xml,
        ("text", "plain") | ("text", "*") => Mime::Plain,
        _ => Mime::Json,
    }
}

#[cfg(test)]
mod tests;
