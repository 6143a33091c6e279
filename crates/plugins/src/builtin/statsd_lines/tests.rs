//! The shared pieces of statsd and datadog: the packed sample, the line writer (rates printed as Lua
//! prints numbers), Kong's cutting of lines into UDP datagrams, and allow_status_codes' ranges.

use super::sample::{ConsumerRef, RouteRef, ServiceRef};
use super::sink::packets;
use super::*;
use uuid::Uuid;

pub(crate) fn sample() -> Sample<'static> {
    Sample {
        stream: false,
        status: 200,
        request_size: 120,
        response_size: 310,
        latency: 7,
        upstream_latency: 5,
        kong_latency: 1,
        service: Some(ServiceRef {
            id: Uuid::from_u128(0x1111),
            name: Some("billing.v1"),
            host: "billing.internal",
        }),
        route: Some(RouteRef {
            id: Uuid::from_u128(0x2222),
            name: Some("invoices"),
        }),
        consumer: Some(ConsumerRef {
            id: Uuid::from_u128(0x3333),
            custom_id: Some("robert"),
            username: Some("bob"),
        }),
    }
}

#[test]
fn a_sample_survives_packing() {
    let full = sample();
    assert_eq!(Sample::unpack(&full.pack()), Some(full.clone()));
    let bare = Sample {
        stream: false,
        upstream_latency: -1,
        service: None,
        route: Some(RouteRef {
            id: Uuid::from_u128(9),
            name: None,
        }),
        consumer: Some(ConsumerRef {
            id: Uuid::from_u128(8),
            custom_id: None,
            username: Some(""),
        }),
        ..full.clone()
    };
    assert_eq!(Sample::unpack(&bare.pack()), Some(bare.clone()));
    for s in [&full, &bare] {
        assert_eq!(
            s.pack().len(),
            s.packed_len(),
            "packed into a vector of its size"
        );
    }
    let packed = full.pack();
    for cut in [0, 1, 10, packed.len() - 1] {
        assert_eq!(Sample::unpack(&packed[..cut]), None, "cut at {cut}");
    }
}

fn line(value: Value<'_>, kind: &str, rate: Option<f64>) -> String {
    let mut lines = Lines::default();
    lines.metric("kong", &["service.a", "latency"], value, kind, rate);
    lines.to_vec().remove(0)
}

#[test]
fn rates_other_than_one_are_printed_as_lua_prints_them() {
    assert_eq!(
        line(Value::Int(3), "ms", None),
        "kong.service.a.latency:3|ms"
    );
    assert_eq!(
        line(Value::Int(1), "c", Some(1.0)),
        "kong.service.a.latency:1|c"
    );
    assert_eq!(
        line(Value::Int(-1), "c", Some(0.5)),
        "kong.service.a.latency:-1|c|@0.5"
    );
    assert_eq!(
        line(Value::Int(1), "c", Some(0.1)),
        "kong.service.a.latency:1|c|@0.1"
    );
    assert_eq!(
        line(Value::Int(1), "c", Some(2.0)),
        "kong.service.a.latency:1|c|@2"
    );
    assert_eq!(
        line(Value::Int(1), "c", Some(0.00001)),
        "kong.service.a.latency:1|c|@1e-05"
    );
    assert_eq!(
        line(Value::Text("robert"), "s", None),
        "kong.service.a.latency:robert|s"
    );
}

fn lines_of(lens: &[usize]) -> Lines {
    let mut lines = Lines::default();
    for (i, len) in lens.iter().enumerate() {
        lines.push(|out| out.extend(std::iter::repeat_n(b'a' + i as u8, *len)));
    }
    lines
}

fn cut(lines: &Lines, size: f64) -> (Vec<String>, bool) {
    let mut sent = Vec::new();
    let oversized = packets(lines, size, |d| {
        sent.push(String::from_utf8_lossy(d).into_owned())
    });
    (sent, oversized)
}

#[test]
fn lines_are_cut_into_datagrams_as_kong_cuts_them() {
    // The three lines of Kong's spec (39, 42 and 38 bytes).
    let lines = lines_of(&[39, 42, 38]);
    let (a, b, c) = ("a".repeat(39), "b".repeat(42), "c".repeat(38));
    assert_eq!(
        cut(&lines, 0.0).0,
        [a.clone(), b.clone(), c.clone()],
        "one line per datagram"
    );
    assert_eq!(cut(&lines, 500.0).0, [format!("{a}\n{b}\n{c}")]);
    assert_eq!(cut(&lines, 100.0).0, [format!("{a}\n{b}"), c.clone()]);
    assert_eq!(
        cut(&lines, 1.0),
        (vec![a.clone(), b.clone(), c.clone()], true)
    );
    // 39 + 1 + 42 = 82 fits exactly; one byte less does not.
    assert_eq!(cut(&lines, 82.0).0, [format!("{a}\n{b}"), c.clone()]);
    assert_eq!(cut(&lines, 81.0).0, [a.clone(), format!("{b}\n{c}")]);
    // After a cut Kong counts the datagram's first line without its separator: 42 + 38 = 80 passes a
    // limit of 80 though the datagram is 81 bytes; at 79 it does not.
    assert_eq!(cut(&lines, 80.0).0, [a.clone(), format!("{b}\n{c}")]);
    assert_eq!(cut(&lines, 79.0).0, [a, b, c]);
    assert_eq!(cut(&Lines::default(), 100.0).0, Vec::<String>::new());
}

#[test]
fn tcp_sends_every_line_with_a_newline() {
    let lines = lines_of(&[2, 1]);
    assert_eq!(lines.all(), b"aa\nb\n");
    assert_eq!(lines.span(0, 1), b"aa\nb");
}

#[test]
fn status_ranges_let_through_what_the_first_matching_range_holds() {
    assert!(StatusFilter::all().allows(599));
    let filter = StatusFilter::ranges(vec![Some((200, 299)), Some((400, 404))]);
    assert!(filter.allows(200) && filter.allows(299) && filter.allows(404));
    assert!(!filter.allows(300) && !filter.allows(405) && !filter.allows(199));
    // Kong's handler fails at a range it cannot read: statuses an earlier range holds still pass.
    let broken = StatusFilter::ranges(vec![Some((200, 299)), None, Some((500, 599))]);
    assert!(broken.allows(250));
    assert!(!broken.allows(503));
    assert!(!StatusFilter::ranges(vec![]).allows(200));
}
