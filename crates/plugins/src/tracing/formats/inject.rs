//! Writing each format's headers (Kong's injectors). Ids are resized first: the trace id keeps the size it
//! arrived with when the format allows that size, else takes the format's default size (its last bytes).

use super::Format;
use crate::tracing::context::TraceContext;
use crate::tracing::hex::{to_dec, to_hex};
use http::{HeaderMap, HeaderName, HeaderValue};

/// Trace id sizes a format allows; the first is its default.
fn trace_sizes(format: Format) -> &'static [usize] {
    match format {
        Format::B3 | Format::B3Single | Format::Jaeger | Format::Instana => &[16, 8],
        Format::Ot => &[8, 16],
        Format::Datadog => &[8],
        Format::W3c | Format::Aws | Format::Gcp => &[16],
    }
}

/// Whether a format refuses to write without both a trace id and a span id.
fn needs_ids(format: Format) -> bool {
    !matches!(
        format,
        Format::B3 | Format::B3Single | Format::Datadog | Format::Instana
    )
}

/// Baggage values are written escaped as nginx's `ngx.escape_uri` does (all but `A-Za-z0-9-._~`).
const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub fn inject(format: Format, ctx: &TraceContext, headers: &mut HeaderMap) -> Result<(), String> {
    if needs_ids(format) {
        let missing = match (ctx.trace_id, ctx.span_id) {
            (None, _) => Some("trace_id"),
            (_, None) => Some("span_id"),
            _ => None,
        };
        if let Some(field) = missing {
            return Err(format!(
                "{} injector context is invalid: field {field} not found in context",
                format.name()
            ));
        }
    }
    let sizes = trace_sizes(format);
    let size = match sizes.contains(&ctx.trace_id_size) {
        true => ctx.trace_id_size,
        false => sizes[0],
    };
    let trace = ctx.trace_id.map(|t| t[16 - size..].to_vec());
    let trace_hex = trace.as_deref().map(to_hex);
    let span_hex = ctx.span_id.map(|s| to_hex(&s));
    let parent_hex = ctx.parent_id.map(|p| to_hex(&p));
    let bit = |sampled: bool| if sampled { "1" } else { "0" };
    let sampled = ctx.should_sample.unwrap_or(false);
    let mut set = |name: &str, value: String| {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            headers.insert(name, value);
        }
    };
    let (trace_hex, span_hex) = (trace_hex.unwrap_or_default(), span_hex.unwrap_or_default());
    match format {
        Format::W3c => set(
            "traceparent",
            format!("00-{trace_hex}-{span_hex}-0{}", bit(sampled)),
        ),
        Format::B3 => {
            if ctx.trace_id.is_some() && ctx.span_id.is_some() {
                set("x-b3-traceid", trace_hex);
                set("x-b3-spanid", span_hex);
                if let Some(parent) = parent_hex {
                    set("x-b3-parentspanid", parent);
                }
            }
            match &ctx.flags {
                Some(flags) => set("x-b3-flags", flags.clone()),
                None => set("x-b3-sampled", bit(sampled).into()),
            }
        }
        Format::B3Single => {
            let flag = match (ctx.flags.as_deref(), ctx.should_sample) {
                (Some("1"), _) => Some("d"),
                (_, Some(s)) => Some(bit(s)),
                _ => None,
            };
            let value = match ctx.trace_id.is_some() && ctx.span_id.is_some() {
                false => flag.unwrap_or("0").to_string(),
                true => {
                    let flag = flag.map(|f| format!("-{f}")).unwrap_or_default();
                    let parent = parent_hex.map(|p| format!("-{p}")).unwrap_or_default();
                    format!("{trace_hex}-{span_hex}{flag}{parent}")
                }
            };
            set("b3", value);
        }
        Format::Jaeger => {
            let parent = parent_hex.unwrap_or_else(|| "0".into());
            set(
                "uber-trace-id",
                format!("{trace_hex}:{span_hex}:{parent}:0{}", bit(sampled)),
            );
            baggage(&mut set, "uberctx-", &ctx.baggage);
        }
        Format::Ot => {
            set("ot-tracer-traceid", trace_hex);
            set("ot-tracer-spanid", span_hex);
            if let Some(s) = ctx.should_sample {
                set("ot-tracer-sampled", bit(s).into());
            }
            baggage(&mut set, "ot-baggage-", &ctx.baggage);
        }
        Format::Datadog => {
            if let Some(trace) = &trace {
                set("x-datadog-trace-id", to_dec(trace));
            }
            if let Some(span_id) = ctx.span_id {
                set("x-datadog-parent-id", to_dec(&span_id));
            }
            if let Some(s) = ctx.should_sample {
                set("x-datadog-sampling-priority", bit(s).into());
            }
        }
        Format::Aws => set(
            "x-amzn-trace-id",
            format!(
                "Root=1-{}-{};Parent={span_hex};Sampled={}",
                &trace_hex[..8],
                &trace_hex[8..],
                bit(sampled)
            ),
        ),
        Format::Instana => {
            if ctx.trace_id.is_some() {
                set("x-instana-t", trace_hex);
            }
            if ctx.span_id.is_some() {
                set("x-instana-s", span_hex);
            }
            if let Some(s) = ctx.should_sample {
                set("x-instana-l", bit(s).into());
            }
        }
        Format::Gcp => {
            let span_dec = ctx.span_id.map(|s| to_dec(&s)).unwrap_or_default();
            set(
                "x-cloud-trace-context",
                format!("{trace_hex}/{span_dec};o={}", bit(sampled)),
            );
        }
    }
    Ok(())
}

fn baggage(set: &mut impl FnMut(&str, String), prefix: &str, items: &[(String, String)]) {
    for (key, value) in items {
        let escaped = percent_encoding::utf8_percent_encode(value, ESCAPED).to_string();
        set(&format!("{prefix}{key}"), escaped);
    }
}
