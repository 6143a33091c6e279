//! Parse and write tests for every header format, and the `propagation` record's rules (Kong's
//! `spec/01-unit/26-observability/02-propagation_strategies_spec.lua` cases, in our words).

use super::context::{sample, TraceContext};
use super::formats::Format;
use super::hex::{from_dec, from_hex, to_dec, to_hex};
use super::propagation::{Injector, Propagation, PropagationConfig};
use http::HeaderMap;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const SPAN: &str = "b7ad6b7169203331";
const PARENT: &str = "00f067aa0ba902b7";

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            http::HeaderName::try_from(*k).unwrap(),
            http::HeaderValue::try_from(*v).unwrap(),
        );
    }
    h
}

fn extract(format: Format, pairs: &[(&str, &str)]) -> Option<TraceContext> {
    format.extract(&headers(pairs))
}

fn hex(ctx: &TraceContext) -> (String, String, String) {
    (
        ctx.trace_id.map(|t| to_hex(&t)).unwrap_or_default(),
        ctx.span_id.map(|s| to_hex(&s)).unwrap_or_default(),
        ctx.parent_id.map(|s| to_hex(&s)).unwrap_or_default(),
    )
}

fn written(format: Format, ctx: &TraceContext) -> Vec<(String, String)> {
    let mut h = HeaderMap::new();
    format.inject(ctx, &mut h).unwrap();
    let mut out: Vec<_> = h
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    out.sort();
    out
}

fn ctx(trace: &str, span: &str, parent: Option<&str>, sampled: Option<bool>) -> TraceContext {
    let mut c = TraceContext {
        span_id: Some(super::context::fit(&from_hex(span).unwrap())),
        parent_id: parent.map(|p| super::context::fit(&from_hex(p).unwrap())),
        should_sample: sampled,
        ..TraceContext::default()
    };
    c.set_trace_id(&from_hex(trace).unwrap());
    c
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = list
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn hex_and_decimal_forms() {
    assert_eq!(
        from_hex("abc"),
        Some(vec![0x0a, 0xbc]),
        "odd length gets a leading 0"
    );
    assert_eq!(from_hex("zz"), None);
    assert_eq!(to_hex(&[0, 0xff]), "00ff");
    assert_eq!(from_dec("256"), Some(vec![1, 0]));
    assert_eq!(from_dec("1a"), None);
    assert_eq!(to_dec(&[1, 0]), "256");
}

#[test]
fn w3c_reads_and_writes_traceparent() {
    let got = extract(
        Format::W3c,
        &[("traceparent", &format!("00-{TRACE}-{SPAN}-01"))],
    )
    .unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), String::new()));
    assert_eq!((got.should_sample, got.w3c_flags), (Some(true), Some(1)));
    for bad in [
        format!("01-{TRACE}-{SPAN}-01"),
        format!("00-{}-{SPAN}-01", "0".repeat(32)),
        format!("00-{TRACE}-{}-01", "0".repeat(16)),
        format!("00-{TRACE}-{SPAN}-1"),
        format!("00-{TRACE}x-{SPAN}-01"),
        format!("00-{TRACE}-{SPAN}"),
    ] {
        assert_eq!(
            extract(Format::W3c, &[("traceparent", &bad)]),
            None,
            "{bad}"
        );
    }
    let out = ctx(TRACE, SPAN, Some(PARENT), Some(false));
    let want = format!("00-{TRACE}-{SPAN}-00");
    assert_eq!(written(Format::W3c, &out), pairs(&[("traceparent", &want)]));
    let mut h = HeaderMap::new();
    let err = Format::W3c
        .inject(&TraceContext::default(), &mut h)
        .unwrap_err();
    assert_eq!(
        err,
        "w3c injector context is invalid: field trace_id not found in context"
    );
}

#[test]
fn b3_multi_headers() {
    let got = extract(
        Format::B3,
        &[
            ("x-b3-traceid", TRACE),
            ("x-b3-spanid", SPAN),
            ("x-b3-parentspanid", PARENT),
            ("x-b3-sampled", "1"),
        ],
    )
    .unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), PARENT.into()));
    assert!(got.reuse_span_id && !got.single_header);
    assert_eq!(got.should_sample, Some(true));
    // A 64-bit trace id is padded and remembered as 8 bytes, then written back at 8 bytes.
    let short = extract(Format::B3, &[("x-b3-traceid", SPAN), ("x-b3-spanid", SPAN)]).unwrap();
    assert_eq!(hex(&short).0, format!("{}{SPAN}", "0".repeat(16)));
    assert_eq!(short.trace_id_size, 8);
    let w = written(Format::B3, &short);
    assert_eq!(
        w,
        pairs(&[
            ("x-b3-sampled", "0"),
            ("x-b3-spanid", SPAN),
            ("x-b3-traceid", SPAN)
        ])
    );
    // An invalid id drops the ids, the debug flag samples and is written back.
    let bad = extract(Format::B3, &[("x-b3-traceid", "123"), ("x-b3-flags", "1")]).unwrap();
    assert_eq!(
        (bad.trace_id, bad.should_sample, bad.flags.as_deref()),
        (None, Some(true), Some("1"))
    );
    assert_eq!(written(Format::B3, &bad), pairs(&[("x-b3-flags", "1")]));
    assert_eq!(extract(Format::B3, &[("x-other", "1")]), None);
}

#[test]
fn b3_single_header() {
    let value = format!("{TRACE}-{SPAN}-1-{PARENT}");
    let got = extract(Format::B3, &[("b3", &value)]).unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), PARENT.into()));
    assert!(got.single_header);
    assert_eq!(got.should_sample, Some(true));
    assert_eq!(written(Format::B3Single, &got), pairs(&[("b3", &value)]));
    let debug = extract(Format::B3, &[("b3", &format!("{TRACE}-{SPAN}-d"))]).unwrap();
    assert_eq!(
        (debug.should_sample, debug.flags.as_deref()),
        (Some(true), Some("1"))
    );
    assert_eq!(
        written(Format::B3Single, &debug),
        pairs(&[("b3", &format!("{TRACE}-{SPAN}-d"))])
    );
    let no_flag = extract(Format::B3, &[("b3", &format!("{TRACE}-{SPAN}"))]).unwrap();
    assert_eq!(no_flag.should_sample, None);
    assert_eq!(
        written(Format::B3Single, &no_flag),
        pairs(&[("b3", &format!("{TRACE}-{SPAN}"))])
    );
    let only = extract(Format::B3, &[("b3", "0")]).unwrap();
    assert_eq!((only.trace_id, only.should_sample), (None, Some(false)));
    assert_eq!(written(Format::B3Single, &only), pairs(&[("b3", "0")]));
    // From tracestate, and the multi headers fill what the single one lacks.
    let ts = extract(Format::B3, &[("tracestate", &format!("b3={TRACE}-{SPAN}"))]).unwrap();
    assert_eq!(hex(&ts).0, TRACE);
    let mixed = extract(
        Format::B3,
        &[("b3", "1"), ("x-b3-traceid", TRACE), ("x-b3-spanid", SPAN)],
    )
    .unwrap();
    assert_eq!(
        (hex(&mixed).1.as_str(), mixed.should_sample),
        (SPAN, Some(true))
    );
    // Kong's pattern reads a parent starting with 0/1/d as the flag: `<15 hex>` is then no parent.
    let quirk = extract(Format::B3, &[("b3", &format!("{TRACE}-{SPAN}-{PARENT}"))]).unwrap();
    assert_eq!(quirk.trace_id, None);
}

#[test]
fn jaeger_uber_trace_id() {
    let value = format!("{TRACE}:{SPAN}:{PARENT}:1");
    let got = extract(
        Format::Jaeger,
        &[("uber-trace-id", &value), ("uberctx-user", "a%20b")],
    )
    .unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), PARENT.into()));
    assert_eq!(got.should_sample, Some(true));
    assert_eq!(got.baggage, vec![("user".to_string(), "a b".to_string())]);
    let w = written(Format::Jaeger, &got);
    let want = format!("{TRACE}:{SPAN}:{PARENT}:01");
    assert_eq!(
        w,
        pairs(&[("uber-trace-id", &want), ("uberctx-user", "a%20b")])
    );
    let root = extract(
        Format::Jaeger,
        &[("uber-trace-id", &format!("{TRACE}:{SPAN}:0:0"))],
    )
    .unwrap();
    assert_eq!(
        (hex(&root).2, root.should_sample),
        ("0".repeat(16), Some(false))
    );
    for bad in [
        format!("{TRACE}:{SPAN}:0"),
        format!("0:{SPAN}:0:1"),
        format!("{TRACE}:{SPAN}:0:123"),
    ] {
        assert_eq!(
            extract(Format::Jaeger, &[("uber-trace-id", &bad)]),
            None,
            "{bad}"
        );
    }
    let mut no_parent = ctx(TRACE, SPAN, None, Some(true));
    no_parent.trace_id_size = 0;
    assert_eq!(
        written(Format::Jaeger, &no_parent),
        pairs(&[("uber-trace-id", &format!("{TRACE}:{SPAN}:0:01"))])
    );
}

#[test]
fn ot_headers() {
    let got = extract(
        Format::Ot,
        &[
            ("ot-tracer-traceid", TRACE),
            ("ot-tracer-spanid", SPAN),
            ("ot-tracer-sampled", "true"),
            ("ot-baggage-k", "v"),
        ],
    )
    .unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), String::new()));
    assert_eq!(got.should_sample, Some(true));
    let w = written(Format::Ot, &got);
    let want = [
        ("ot-baggage-k", "v"),
        ("ot-tracer-sampled", "1"),
        ("ot-tracer-spanid", SPAN),
        ("ot-tracer-traceid", TRACE),
    ];
    assert_eq!(w, pairs(&want));
    // OT's default trace id size is 8 bytes.
    let mut fresh = ctx(TRACE, SPAN, None, None);
    fresh.trace_id_size = 0;
    let w = written(Format::Ot, &fresh);
    assert_eq!(
        w,
        pairs(&[
            ("ot-tracer-spanid", SPAN),
            ("ot-tracer-traceid", &TRACE[16..])
        ])
    );
    let bad = extract(
        Format::Ot,
        &[("ot-tracer-traceid", "xyz"), ("ot-tracer-sampled", "0")],
    )
    .unwrap();
    assert_eq!((bad.trace_id, bad.should_sample), (None, Some(false)));
}

#[test]
fn datadog_decimal_ids() {
    let got = extract(
        Format::Datadog,
        &[
            ("x-datadog-trace-id", "1234567890"),
            ("x-datadog-parent-id", "987654321"),
            ("x-datadog-sampling-priority", "2"),
        ],
    )
    .unwrap();
    assert_eq!(to_dec(&got.trace_id.unwrap()), "1234567890");
    assert_eq!(to_dec(&got.span_id.unwrap()), "987654321");
    assert_eq!(got.should_sample, Some(true));
    let want = [
        ("x-datadog-parent-id", "987654321"),
        ("x-datadog-sampling-priority", "1"),
        ("x-datadog-trace-id", "1234567890"),
    ];
    assert_eq!(written(Format::Datadog, &got), pairs(&want));
    // A 128-bit trace id is written as its last 64 bits.
    let long = ctx(TRACE, SPAN, None, Some(false));
    let low = u64::from_str_radix(&TRACE[16..], 16).unwrap().to_string();
    let span = u64::from_str_radix(SPAN, 16).unwrap().to_string();
    let want = [
        ("x-datadog-parent-id", span.as_str()),
        ("x-datadog-sampling-priority", "0"),
        ("x-datadog-trace-id", &low),
    ];
    assert_eq!(written(Format::Datadog, &long), pairs(&want));
    assert_eq!(
        extract(
            Format::Datadog,
            &[
                ("x-datadog-trace-id", "1"),
                ("x-datadog-sampling-priority", "5")
            ]
        ),
        None
    );
    let no_trace = extract(
        Format::Datadog,
        &[
            ("x-datadog-parent-id", "5"),
            ("x-datadog-sampling-priority", "0"),
        ],
    )
    .unwrap();
    assert_eq!(
        (no_trace.span_id, no_trace.should_sample),
        (None, Some(false))
    );
}

#[test]
fn aws_xray_header() {
    let value = format!(
        "Root=1-{}-{};Parent={SPAN};Sampled=1",
        &TRACE[..8],
        &TRACE[8..]
    );
    let got = extract(Format::Aws, &[("x-amzn-trace-id", &value)]).unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), String::new()));
    assert_eq!(got.should_sample, Some(true));
    assert_eq!(
        written(Format::Aws, &got),
        pairs(&[("x-amzn-trace-id", &value)])
    );
    let spaced = format!(
        " Sampled = 0 ; Self=1-abc ; Root = 1-{}-{}",
        &TRACE[..8],
        &TRACE[8..]
    );
    let got = extract(Format::Aws, &[("x-amzn-trace-id", &spaced)]).unwrap();
    assert_eq!(
        (hex(&got).0.as_str(), got.should_sample),
        (TRACE, Some(false))
    );
    for bad in [
        "Root=2-5759e988-bd862e3fe1be46a994272793",
        "Root=1-5759e988-bd862e3f",
        "Parent=123",
        "Sampled=yes",
    ] {
        assert_eq!(
            extract(Format::Aws, &[("x-amzn-trace-id", bad)]),
            None,
            "{bad}"
        );
    }
}

#[test]
fn gcp_cloud_trace_context() {
    let got = extract(
        Format::Gcp,
        &[("x-cloud-trace-context", &format!("{TRACE}/12345;o=1"))],
    )
    .unwrap();
    assert_eq!(hex(&got).0, TRACE);
    assert_eq!(to_dec(&got.span_id.unwrap()), "12345");
    assert_eq!(got.should_sample, Some(true));
    assert_eq!(
        written(Format::Gcp, &got),
        pairs(&[("x-cloud-trace-context", &format!("{TRACE}/12345;o=1"))])
    );
    let plain = extract(
        Format::Gcp,
        &[("x-cloud-trace-context", &format!("{TRACE}/7"))],
    )
    .unwrap();
    assert_eq!(plain.should_sample, Some(false));
    for bad in [
        format!("{}/1", TRACE.to_uppercase()),
        format!("{TRACE}/"),
        format!("{TRACE}/1;o=x"),
        format!("{TRACE}/{}", "1".repeat(21)),
    ] {
        assert_eq!(
            extract(Format::Gcp, &[("x-cloud-trace-context", &bad)]),
            None,
            "{bad}"
        );
    }
}

#[test]
fn instana_headers() {
    let got = extract(
        Format::Instana,
        &[
            ("x-instana-t", TRACE),
            ("x-instana-s", &format!("{SPAN};x")),
            ("x-instana-l", "1,correlationType=web"),
        ],
    )
    .unwrap();
    assert_eq!(hex(&got), (TRACE.into(), SPAN.into(), String::new()));
    assert_eq!(got.should_sample, Some(true));
    let want = [
        ("x-instana-l", "1"),
        ("x-instana-s", SPAN),
        ("x-instana-t", TRACE),
    ];
    assert_eq!(written(Format::Instana, &got), pairs(&want));
    let unsampled = extract(
        Format::Instana,
        &[("x-instana-t", SPAN), ("x-instana-s", SPAN)],
    )
    .unwrap();
    assert_eq!(
        (unsampled.trace_id_size, unsampled.should_sample),
        (8, Some(false))
    );
    let w = written(Format::Instana, &unsampled);
    assert_eq!(
        w,
        pairs(&[
            ("x-instana-l", "0"),
            ("x-instana-s", SPAN),
            ("x-instana-t", SPAN)
        ])
    );
    assert_eq!(
        extract(Format::Instana, &[("x-instana-t", TRACE)]),
        None,
        "needs a span id"
    );
}

#[test]
fn repeated_headers_are_not_read_as_one() {
    let tp = format!("00-{TRACE}-{SPAN}-01");
    assert_eq!(
        extract(Format::W3c, &[("traceparent", &tp), ("traceparent", &tp)]),
        None
    );
}

fn config(extract: Option<&[&str]>, inject: Option<&[&str]>, default: &str) -> PropagationConfig {
    let list = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| s.to_string()).collect());
    PropagationConfig {
        extract: list(extract),
        clear: None,
        inject: list(inject),
        default_format: default.into(),
    }
}

#[test]
fn legacy_header_type_maps_onto_the_record() {
    let p = Propagation::new(&config(None, None, "w3c"), Some("preserve"), None);
    assert_eq!(p.extract[..2], [Format::B3, Format::W3c]);
    assert_eq!(p.inject, vec![Injector::Preserve]);
    let p = Propagation::new(&config(None, None, "b3"), Some("ignore"), Some("jaeger"));
    assert_eq!(
        (p.extract.len(), p.inject.clone()),
        (0, vec![Injector::Format(Format::Jaeger)])
    );
    let p = Propagation::new(&config(None, None, "w3c"), Some("datadog"), None);
    assert_eq!(
        p.inject,
        vec![Injector::Preserve, Injector::Format(Format::Datadog)]
    );
    // Any record field set (even an empty list) wins over the legacy fields.
    let p = Propagation::new(
        &config(Some(&[]), None, "w3c"),
        Some("preserve"),
        Some("b3"),
    );
    assert_eq!(
        (p.extract.len(), p.inject.len(), p.default_format),
        (0, 0, Format::W3c)
    );
}

#[test]
fn extract_clear_and_inject_in_order() {
    let mut cfg = config(Some(&["w3c", "b3"]), Some(&["preserve", "jaeger"]), "w3c");
    cfg.clear = Some(vec!["x-b3-traceid".into()]);
    let p = Propagation::new(&cfg, None, None);
    let mut h = headers(&[
        ("x-b3-traceid", TRACE),
        ("x-b3-spanid", SPAN),
        ("x-b3-sampled", "1"),
    ]);
    let found = p.extract(&h);
    assert_eq!(found.format, Some(Format::B3));
    p.finish(&mut h, found.format, &found.ctx);
    assert_eq!(
        h.get("x-b3-traceid").unwrap(),
        TRACE,
        "cleared, then written again by preserve"
    );
    assert_eq!(
        h.get("uber-trace-id").unwrap().to_str().unwrap(),
        format!("{TRACE}:{SPAN}:0:01")
    );
    // Nothing found: preserve writes default_format.
    let mut h = HeaderMap::new();
    let none = p.extract(&h);
    assert_eq!(none.format, None);
    p.finish(&mut h, None, &ctx(TRACE, SPAN, None, Some(true)));
    assert_eq!(
        h.get("traceparent").unwrap().to_str().unwrap(),
        format!("00-{TRACE}-{SPAN}-01")
    );
}

#[test]
fn sampler_reads_the_trace_ids_first_eight_bytes() {
    let mut id = [0u8; 16];
    assert!(sample(&id, 0.01), "0 is below any positive bound");
    id[7] = 0x80; // little-endian: the top bit of the 64-bit number
    assert!(!sample(&id, 0.5) && sample(&id, 0.51));
    assert!(sample(&[0xff; 16], 1.0) && !sample(&[0; 16], 0.0));
}
