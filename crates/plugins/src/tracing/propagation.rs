//! Kong's `propagation` record: `extract` (formats tried in order on the request; the first found wins),
//! `clear` (request headers removed after extraction), `inject` (formats written to the upstream request;
//! `preserve` = the format the context came in, else `default_format`) and `default_format`. The
//! deprecated `header_type` / `default_header_type` fields are mapped onto it as Kong's
//! `get_plugin_params` does when none of `extract`, `clear`, `inject` is set.

use super::context::TraceContext;
use super::formats::Format;
use http::{HeaderMap, HeaderName};
use serde::Deserialize;
use serde_json::json;
use sluice_model::declarative::schemas::typedefs;
use sluice_model::schema::{Field, Schema};

/// The legacy `header_type` values; its tails are what `inject` (with `preserve`), `default_format` and
/// `extract` (b3 covers b3-single) accept.
pub const HEADER_TYPES: &[&str] = &[
    "ignore",
    "preserve",
    "b3-single",
    "w3c",
    "b3",
    "jaeger",
    "ot",
    "datadog",
    "aws",
    "gcp",
    "instana",
];
const INJECT_OR_PRESERVE: &[&str] = HEADER_TYPES.split_at(1).1;
/// Format names `inject` and `default_format` accept.
pub const INJECTORS: &[&str] = HEADER_TYPES.split_at(2).1;
const EXTRACTORS: &[&str] = HEADER_TYPES.split_at(3).1;
/// The extraction order Kong used before the `propagation` record, for `header_type`.
const LEGACY_ORDER: [Format; 8] = [
    Format::B3,
    Format::W3c,
    Format::Jaeger,
    Format::Ot,
    Format::Datadog,
    Format::Aws,
    Format::Gcp,
    Format::Instana,
];

/// The schema of the `propagation` record with the plugin's `default_format`.
pub fn field(default_format: &'static str) -> Field {
    Field::record(Schema::new(vec![
        ("extract", Field::array(Field::string().one_of(EXTRACTORS))),
        (
            "clear",
            Field::array(Field::string().check(typedefs::header_name)),
        ),
        (
            "inject",
            Field::array(Field::string().one_of(INJECT_OR_PRESERVE)),
        ),
        (
            "default_format",
            Field::string().required().one_of(INJECTORS),
        ),
    ]))
    .default(json!({ "default_format": default_format }))
}

/// The record as configured.
#[derive(Debug, Clone, Deserialize)]
pub struct PropagationConfig {
    pub extract: Option<Vec<String>>,
    pub clear: Option<Vec<String>>,
    pub inject: Option<Vec<String>>,
    pub default_format: String,
}

/// One entry of `inject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injector {
    /// The format the context was extracted from (`default_format` when none).
    Preserve,
    Format(Format),
}

/// The compiled record, applied per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagation {
    pub extract: Vec<Format>,
    pub clear: Vec<HeaderName>,
    pub inject: Vec<Injector>,
    pub default_format: Format,
}

/// What extraction found: the context and its format.
#[derive(Debug, Default)]
pub struct Extracted {
    pub ctx: TraceContext,
    pub format: Option<Format>,
}

fn formats(names: &[String]) -> Vec<Format> {
    names.iter().filter_map(|n| Format::named(n)).collect()
}

impl Propagation {
    /// The record, or Kong's mapping of the legacy fields when none of `extract`, `clear`, `inject` is set.
    pub fn new(
        config: &PropagationConfig,
        header_type: Option<&str>,
        default_header_type: Option<&str>,
    ) -> Propagation {
        let default_format = Format::named(&config.default_format).unwrap_or(Format::W3c);
        let mut p = Propagation {
            extract: formats(config.extract.as_deref().unwrap_or_default()),
            clear: (config.clear.iter().flatten())
                .filter_map(|h| HeaderName::try_from(h.as_str()).ok())
                .collect(),
            inject: (config.inject.iter().flatten())
                .filter_map(|n| match n.as_str() {
                    "preserve" => Some(Injector::Preserve),
                    name => Format::named(name).map(Injector::Format),
                })
                .collect(),
            default_format,
        };
        // As in Kong, a field set to an empty list counts as set.
        if config.extract.is_some() || config.clear.is_some() || config.inject.is_some() {
            return p;
        }
        if let Some(f) = default_header_type.and_then(Format::named) {
            p.default_format = f;
        }
        match header_type {
            Some("preserve") => {
                p.extract = LEGACY_ORDER.to_vec();
                p.inject = vec![Injector::Preserve];
            }
            Some("ignore") => p.inject = vec![Injector::Format(p.default_format)],
            Some(name) => {
                p.extract = LEGACY_ORDER.to_vec();
                p.inject = vec![Injector::Preserve];
                p.inject.extend(Format::named(name).map(Injector::Format));
            }
            None => {}
        }
        p
    }

    /// The context of the first `extract` format present in `headers`.
    pub fn extract(&self, headers: &HeaderMap) -> Extracted {
        self.extract
            .iter()
            .find_map(|f| {
                f.extract(headers).map(|ctx| Extracted {
                    ctx,
                    format: Some(*f),
                })
            })
            .unwrap_or_default()
    }

    /// Clears the `clear` headers, then writes `out` in every `inject` format. `from` is where the context
    /// was extracted from (for `preserve`). Failures are logged, as in Kong; the request goes on.
    pub fn finish(&self, headers: &mut HeaderMap, from: Option<Format>, out: &TraceContext) {
        for name in &self.clear {
            headers.remove(name);
        }
        for injector in &self.inject {
            let format = match *injector {
                Injector::Format(f) => f,
                Injector::Preserve => match from.unwrap_or(self.default_format) {
                    Format::B3 if out.single_header => Format::B3Single,
                    f => f,
                },
            };
            if let Err(e) = format.inject(out, headers) {
                tracing::error!("{e}");
            }
        }
    }
}
