//! Reading each format's headers (Kong's extractors).

use super::single;
use crate::tracing::context::{fit, TraceContext};
use crate::tracing::hex::{from_dec, from_hex};
use http::HeaderMap;

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_zero(s: &str) -> bool {
    s.bytes().all(|b| b == b'0')
}

/// A hex id of exactly one of `sizes` characters.
fn hex_of(s: &str, sizes: &[usize]) -> Option<Vec<u8>> {
    (sizes.contains(&s.len()) && is_hex(s))
        .then(|| from_hex(s))
        .flatten()
}

fn span(bytes: &[u8]) -> [u8; 8] {
    fit(bytes)
}

/// `1`/`true` and `0`/`false`; anything else is ignored.
fn flag(value: Option<&str>) -> Option<bool> {
    match value? {
        "1" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    }
}

/// `prefix*` headers as baggage, values percent-decoded.
fn baggage(headers: &HeaderMap, prefix: &str) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let key = name.as_str().strip_prefix(prefix)?;
            let value = percent_encoding::percent_decode(value.as_bytes()).decode_utf8_lossy();
            Some((key.to_string(), value.into_owned()))
        })
        .collect()
}

/// `traceparent: 00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero.
pub fn w3c(headers: &HeaderMap) -> Option<TraceContext> {
    let value = single(headers, "traceparent")?;
    let parts: Vec<&str> = value.split('-').collect();
    let [version, trace, parent, flags] = parts[..] else {
        return None;
    };
    if !parts.iter().all(|p| is_hex(p)) || version != "00" || flags.len() != 2 {
        return None;
    }
    if trace.len() != 32 || is_zero(trace) || parent.len() != 16 || is_zero(parent) {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let mut ctx = TraceContext {
        span_id: Some(span(&from_hex(parent)?)),
        should_sample: Some(flags & 1 == 1),
        w3c_flags: Some(flags),
        ..TraceContext::default()
    };
    ctx.set_trace_id(&from_hex(trace)?);
    Some(ctx)
}

/// One B3 reading: ids (None when invalid), sampling and the debug flag.
#[derive(Default)]
struct B3Part {
    ids: Option<(Option<String>, Option<String>, Option<String>)>,
    should_sample: Option<bool>,
    flags: Option<String>,
}

/// Kong's optional `%-?`: the text after a leading dash if there is one, then the text as it is.
fn dash(s: &str) -> [Option<&str>; 2] {
    [s.strip_prefix('-'), Some(s)]
}

/// The single `b3` header (or a `b3=` entry of `tracestate`): `1`, `0`, `d`, or
/// `<trace>-<span>[-<sampled>][-<parent>]`. Matched the way Kong's Lua pattern matches, so
/// `<trace>-<span>-<parent>` whose parent starts with `0`, `1` or `d` reads that digit as the flag.
fn b3_single(headers: &HeaderMap) -> Option<B3Part> {
    let value = headers
        .get("b3")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get_all("tracestate")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(|v| v.strip_prefix("b3=").filter(|rest| !rest.is_empty()))
        })?;
    let sampled = |s: &str| match s {
        "1" => (Some(true), None),
        "d" => (Some(true), Some("1".to_string())),
        "0" => (Some(false), None),
        _ => (None, None),
    };
    if matches!(value, "1" | "0" | "d") {
        let (should_sample, flags) = sampled(value);
        let ids = Some((None, None, None));
        return Some(B3Part {
            ids,
            should_sample,
            flags,
        });
    }
    let invalid = Some(B3Part::default());
    let Some((trace, rest)) = value.split_once('-') else {
        return invalid;
    };
    if !is_hex(trace) || rest.len() < 16 || !is_hex(&rest[..16]) {
        return invalid;
    }
    let (span_id, rest) = rest.split_at(16);
    // Kong's pattern `%-?([01d]?)%-?(%x*)$`, trying each optional part first present, then absent.
    let found = dash(rest).into_iter().flatten().find_map(|r| {
        let first = r.chars().next().filter(|c| matches!(c, '0' | '1' | 'd'));
        let with_flag = first.map(|c| (&r[1..], c.to_string()));
        [with_flag, Some((r, String::new()))]
            .into_iter()
            .flatten()
            .find_map(|(r, flag)| {
                dash(r)
                    .into_iter()
                    .flatten()
                    .find(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
                    .map(|parent| (flag, parent.to_string()))
            })
    });
    let Some((flag, parent)) = found else {
        return invalid;
    };
    if !matches!(trace.len(), 16 | 32) || !(parent.is_empty() || parent.len() == 16) {
        return invalid;
    }
    let (should_sample, flags) = sampled(&flag);
    let parent = (!parent.is_empty()).then_some(parent);
    let ids = Some((Some(trace.to_string()), Some(span_id.to_string()), parent));
    Some(B3Part {
        ids,
        should_sample,
        flags,
    })
}

/// `x-b3-traceid` (16 or 32 hex), `x-b3-spanid`, `x-b3-parentspanid` (16 hex), `x-b3-sampled`, `x-b3-flags`.
fn b3_multi(headers: &HeaderMap) -> B3Part {
    let debug = single(headers, "x-b3-flags").map(str::to_string);
    let mut should_sample = flag(single(headers, "x-b3-sampled"));
    if debug.as_deref() == Some("1") {
        should_sample = Some(true);
    }
    let id = |name: &str, sizes: &[usize]| match single(headers, name) {
        None => Ok(None),
        Some(v) if sizes.contains(&v.len()) && is_hex(v) => Ok(Some(v.to_string())),
        Some(_) => Err(()),
    };
    let ids = (|| {
        Some((
            id("x-b3-traceid", &[16, 32]).ok()?,
            id("x-b3-spanid", &[16]).ok()?,
            id("x-b3-parentspanid", &[16]).ok()?,
        ))
    })();
    B3Part {
        ids,
        should_sample,
        flags: debug,
    }
}

/// B3: the single header first, the multi headers fill in what it lacks.
pub fn b3(headers: &HeaderMap) -> Option<TraceContext> {
    const NAMES: [&str; 7] = [
        "b3",
        "tracestate",
        "x-b3-traceid",
        "x-b3-spanid",
        "x-b3-parentspanid",
        "x-b3-sampled",
        "x-b3-flags",
    ];
    if !NAMES.iter().any(|n| headers.contains_key(*n)) {
        return None;
    }
    let single_part = b3_single(headers);
    let multi = b3_multi(headers);
    let mut ctx = TraceContext {
        reuse_span_id: true,
        single_header: single_part.is_some(),
        ..TraceContext::default()
    };
    let single_part = single_part.unwrap_or_default();
    ctx.should_sample = single_part.should_sample.or(multi.should_sample);
    ctx.flags = single_part.flags.or(multi.flags);
    let (mut trace, mut span_id, mut parent) = single_part.ids.unwrap_or_default();
    if let Some((t, s, p)) = multi.ids {
        trace = trace.or(t);
        span_id = span_id.or(s);
        parent = parent.or(p);
    }
    if let Some(trace) = trace {
        ctx.set_trace_id(&from_hex(&trace)?);
        ctx.span_id = span_id.and_then(|s| from_hex(&s)).map(|b| span(&b));
        ctx.parent_id = parent.and_then(|p| from_hex(&p)).map(|b| span(&b));
    }
    Some(ctx)
}

/// `uber-trace-id: <trace>:<span>:<parent>:<flags>` (hex; trace up to 32 digits, span up to 16, flags 1
/// or 2 digits) and `uberctx-*` baggage.
pub fn jaeger(headers: &HeaderMap) -> Option<TraceContext> {
    let value = single(headers, "uber-trace-id")?;
    let parts: Vec<&str> = value.split(':').collect();
    let [trace, span_id, parent, flags] = parts[..] else {
        return None;
    };
    if !parts.iter().all(|p| is_hex(p)) || trace.len() > 32 || is_zero(trace) {
        return None;
    }
    if span_id.len() > 16 || is_zero(span_id) || !matches!(flags.len(), 1 | 2) {
        return None;
    }
    let mut ctx = TraceContext {
        span_id: Some(span(&from_hex(span_id)?)),
        parent_id: Some(span(&from_hex(parent)?)),
        reuse_span_id: true,
        should_sample: Some(u8::from_str_radix(flags, 16).ok()? % 2 == 1),
        baggage: baggage(headers, "uberctx-"),
        ..TraceContext::default()
    };
    ctx.set_trace_id(&from_hex(trace)?);
    Some(ctx)
}

/// `ot-tracer-traceid` (16 or 32 hex), `ot-tracer-spanid` (16 hex), `ot-tracer-sampled`, `ot-baggage-*`.
pub fn ot(headers: &HeaderMap) -> Option<TraceContext> {
    const NAMES: [&str; 3] = ["ot-tracer-sampled", "ot-tracer-traceid", "ot-tracer-spanid"];
    if !NAMES.iter().any(|n| headers.contains_key(*n)) {
        return None;
    }
    let mut ctx = TraceContext {
        should_sample: flag(single(headers, "ot-tracer-sampled")),
        baggage: baggage(headers, "ot-baggage-"),
        ..TraceContext::default()
    };
    let trace = single(headers, "ot-tracer-traceid");
    let span_id = single(headers, "ot-tracer-spanid");
    let trace = trace.map(|t| hex_of(t, &[16, 32]));
    let span_id = span_id.map(|s| hex_of(s, &[16]));
    let invalid = trace.as_ref().is_some_and(Option::is_none)
        || span_id.as_ref().is_some_and(Option::is_none);
    if let (Some(Some(trace)), false) = (trace, invalid) {
        ctx.set_trace_id(&trace);
        ctx.span_id = span_id.flatten().map(|s| span(&s));
    }
    Some(ctx)
}

/// `x-datadog-trace-id`, `x-datadog-parent-id` (decimal), `x-datadog-sampling-priority` (1, 2: sampled;
/// 0, -1: not; anything else ignores the whole context).
pub fn datadog(headers: &HeaderMap) -> Option<TraceContext> {
    let should_sample = match single(headers, "x-datadog-sampling-priority") {
        None => None,
        Some("1" | "2") => Some(true),
        Some("0" | "-1") => Some(false),
        Some(_) => return None,
    };
    let decimal = |name: &str| single(headers, name).and_then(|v| from_dec(v.trim()));
    let mut ctx = TraceContext {
        should_sample,
        ..TraceContext::default()
    };
    if let Some(trace) = decimal("x-datadog-trace-id") {
        ctx.set_trace_id(&trace);
        ctx.span_id = decimal("x-datadog-parent-id").map(|p| span(&p));
    }
    Some(ctx)
}

/// `x-amzn-trace-id: Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=0|1` (any order, other keys
/// ignored; an invalid known key ignores the whole context).
pub fn aws(headers: &HeaderMap) -> Option<TraceContext> {
    let value = single(headers, "x-amzn-trace-id")?;
    let mut ctx = TraceContext::default();
    for pair in value.split(';') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = value.trim();
        match key.trim() {
            "Root" => {
                let parts: Vec<&str> = value.split('-').collect();
                let ["1", time, unique] = parts[..] else {
                    return None;
                };
                if value.len() != 35 || time.len() != 8 || unique.len() != 24 {
                    return None;
                }
                ctx.set_trace_id(&from_hex(&format!("{time}{unique}"))?);
            }
            "Parent" => ctx.span_id = Some(span(&hex_of(value, &[16])?)),
            "Sampled" => match value {
                "0" | "1" => ctx.should_sample = Some(value == "1"),
                _ => return None,
            },
            _ => {}
        }
    }
    Some(ctx)
}

/// `x-cloud-trace-context: <32 lower-case hex>/<decimal span id>[;o=<digit>]` (sampled when `o=1`).
pub fn gcp(headers: &HeaderMap) -> Option<TraceContext> {
    let value = single(headers, "x-cloud-trace-context")?;
    let (trace, rest) = value.split_once('/')?;
    let (span_id, option) = match rest.split_once(";o=") {
        Some((s, o)) if o.len() == 1 && o.as_bytes()[0].is_ascii_digit() => (s, Some(o)),
        Some(_) => return None,
        None => (rest, None),
    };
    let lower_hex = trace
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if trace.len() != 32 || !lower_hex || !(1..=20).contains(&span_id.len()) {
        return None;
    }
    let mut ctx = TraceContext {
        span_id: Some(span(&from_dec(span_id)?)),
        should_sample: Some(option == Some("1")),
        ..TraceContext::default()
    };
    ctx.set_trace_id(&from_hex(trace)?);
    Some(ctx)
}

/// `x-instana-t` (trace id) and `x-instana-s` (span id), both required, each read up to its first
/// non-hex character; `x-instana-l` samples when its first character is `1`.
pub fn instana(headers: &HeaderMap) -> Option<TraceContext> {
    let leading_hex = |name: &str| -> Option<Option<Vec<u8>>> {
        let value = single(headers, name)?;
        let end = value
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(value.len());
        Some((end > 0).then(|| from_hex(&value[..end])).flatten())
    };
    let trace = leading_hex("x-instana-t")?;
    let span_id = leading_hex("x-instana-s")?;
    let level = single(headers, "x-instana-l").and_then(|l| l.chars().next());
    let mut ctx = TraceContext {
        span_id: span_id.map(|s| span(&s)),
        should_sample: Some(level == Some('1')),
        ..TraceContext::default()
    };
    if let Some(trace) = trace {
        ctx.set_trace_id(&trace);
    }
    Some(ctx)
}
