//! The tracing header formats Kong propagates: W3C `traceparent`, B3 (multi and single header), Jaeger
//! `uber-trace-id`, OT `ot-tracer-*`, Datadog `x-datadog-*`, AWS X-Ray `x-amzn-trace-id` and GCP
//! `x-cloud-trace-context`, Instana `x-instana-*`. Each reads a [`TraceContext`] from request headers ([`Format::extract`]) and
//! writes one ([`Format::inject`]) with Kong's rules, quirks included: an invalid header is ignored (the
//! next extractor is tried), ids are resized to what the format allows.

mod extract;
mod inject;

use super::context::TraceContext;
use http::HeaderMap;

/// A header format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    W3c,
    B3,
    B3Single,
    Jaeger,
    Ot,
    Datadog,
    Aws,
    Gcp,
    Instana,
}

impl Format {
    /// Every format with its name in Kong's configuration.
    pub const ALL: [(Format, &'static str); 9] = [
        (Format::W3c, "w3c"),
        (Format::B3, "b3"),
        (Format::B3Single, "b3-single"),
        (Format::Jaeger, "jaeger"),
        (Format::Ot, "ot"),
        (Format::Datadog, "datadog"),
        (Format::Aws, "aws"),
        (Format::Gcp, "gcp"),
        (Format::Instana, "instana"),
    ];

    pub fn named(name: &str) -> Option<Format> {
        Format::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }

    pub fn name(self) -> &'static str {
        Format::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("", |(_, n)| n)
    }

    /// The context this format finds in `headers`; None when its headers are absent or invalid (B3 reads
    /// both its single and multi headers, so `b3-single` extracts as `b3`).
    pub fn extract(self, headers: &HeaderMap) -> Option<TraceContext> {
        let found = match self {
            Format::W3c => extract::w3c(headers),
            Format::B3 | Format::B3Single => extract::b3(headers),
            Format::Jaeger => extract::jaeger(headers),
            Format::Ot => extract::ot(headers),
            Format::Datadog => extract::datadog(headers),
            Format::Aws => extract::aws(headers),
            Format::Gcp => extract::gcp(headers),
            Format::Instana => extract::instana(headers),
        }?;
        (!found.is_empty()).then_some(found)
    }

    /// Writes `ctx` into `headers` (replacing earlier values); an error names what the context lacks.
    pub fn inject(self, ctx: &TraceContext, headers: &mut HeaderMap) -> Result<(), String> {
        inject::inject(self, ctx, headers)
    }
}

/// The value of a header sent exactly once (Kong sees a repeated header as a list, which the formats that
/// read a single value ignore).
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}
