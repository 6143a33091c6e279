//! Unit tests of `kong`.
use super::*;

fn obs(status: u16, source: Source, request_ms: u64) -> Observation {
    Observation {
        status,
        source,
        kong_ms: Some(1),
        upstream_ms: Some(30),
        request_ms,
        bytes_in: 10,
        bytes_out: 100,
        consumer: None,
    }
}

#[test]
fn per_consumer_counts_carry_the_consumer_label() {
    let r = Registry::new(1);
    let s = r.series("svc", "route");
    s.enable_consumers();
    let alice = r.consumer_slot("alice");
    assert_eq!(r.consumer_slot("alice"), alice, "slots are stable");
    let flags = Flags {
        per_consumer: true,
        ..ALL
    };
    s.record(
        0,
        flags,
        &Observation {
            consumer: Some(alice),
            ..obs(200, Source::Service, 1)
        },
    );
    s.record(0, flags, &obs(401, Source::Exit, 1));
    let mut out = String::new();
    r.render(&mut out);
    assert!(
        out.contains("code=\"200\",source=\"service\",workspace=\"default\",consumer=\"alice\"} 1"),
        "{out}"
    );
    assert!(
        out.contains("code=\"401\",source=\"kong\",workspace=\"default\",consumer=\"\"} 1"),
        "{out}"
    );
    // Bandwidth too, as Kong labels it with the consumer (10 bytes in, 100 out per observation).
    for (direction, alices, others) in [("ingress", 10, 10), ("egress", 100, 100)] {
        for (consumer, n) in [("alice", alices), ("", others)] {
            let line = format!(
                "direction=\"{direction}\",workspace=\"default\",consumer=\"{consumer}\"}} {n}\n"
            );
            assert!(out.contains(&line), "{line} in {out}");
        }
    }
}

const ALL: Flags = Flags {
    status_code: true,
    latency: true,
    bandwidth: true,
    per_consumer: false,
};

#[test]
fn counts_merge_across_workers_and_reloads() {
    let r = Registry::new(2);
    let a = r.series("svc", "route");
    a.record(0, ALL, &obs(200, Source::Service, 3));
    a.record(1, ALL, &obs(200, Source::Service, 60));
    a.record(1, ALL, &obs(404, Source::Error, 1));
    // Kong labels exits and errors alike (`kong`): one series.
    a.record(0, ALL, &obs(404, Source::Exit, 1));
    // A reload finds the same series by name.
    let again = r.series("svc", "route");
    again.record(0, ALL, &obs(200, Source::Service, 3));
    let mut out = String::new();
    r.render(&mut out);
    assert!(out.contains("kong_http_requests_total{service=\"svc\",route=\"route\",code=\"200\",source=\"service\",workspace=\"default\",consumer=\"\"} 3"), "{out}");
    assert!(
        out.contains("code=\"404\",source=\"kong\",workspace=\"default\",consumer=\"\"} 2"),
        "{out}"
    );
    assert_eq!(out.matches("code=\"404\"").count(), 1, "{out}");
    assert!(out.contains("kong_request_latency_ms_bucket{service=\"svc\",route=\"route\",workspace=\"default\",le=\"25\"} 4"), "{out}");
    assert!(out.contains("kong_request_latency_ms_bucket{service=\"svc\",route=\"route\",workspace=\"default\",le=\"80\"} 5"), "{out}");
    assert!(out.contains("kong_request_latency_ms_count{service=\"svc\",route=\"route\",workspace=\"default\"} 5"), "{out}");
    assert!(out.contains("kong_bandwidth_bytes{service=\"svc\",route=\"route\",direction=\"egress\",workspace=\"default\",consumer=\"\"} 500"), "{out}");
}

#[test]
fn flags_leave_families_out_and_labels_are_escaped() {
    let r = Registry::new(1);
    let s = r.series("a\"b", "c\\d");
    s.record(
        0,
        Flags {
            status_code: true,
            ..Flags::default()
        },
        &obs(201, Source::Exit, 5),
    );
    let mut out = String::new();
    r.render(&mut out);
    assert!(
        out.contains("service=\"a\\\"b\",route=\"c\\\\d\",code=\"201\",source=\"kong\""),
        "{out}"
    );
    assert!(!out.contains("kong_request_latency_ms_bucket"), "{out}");
    assert!(!out.contains("kong_bandwidth_bytes{"), "{out}");
}

#[test]
fn more_distinct_codes_than_slots_are_still_counted() {
    let r = Registry::new(1);
    let s = r.series("s", "r");
    for code in 200..(200 + CODE_SLOTS as u16 + 3) {
        s.record(0, ALL, &obs(code, Source::Service, 1));
    }
    let total: u64 = s.counts().values().sum();
    assert_eq!(total, CODE_SLOTS as u64 + 3);
}

#[test]
fn stream_sessions_render_under_kongs_stream_names() {
    let r = Registry::new(2);
    let mut out = String::new();
    r.render(&mut out);
    assert!(
        !out.contains("kong_stream_sessions_total"),
        "no stream family before a stream route is metered"
    );
    let s = r.stream_series("svc", "tcp-route");
    let session = |status, proxied, session_ms| SessionObservation {
        status,
        proxied,
        kong_ms: 1,
        session_ms,
    };
    s.record(0, ALL, &session(200, true, 120));
    s.record(1, ALL, &session(200, true, 40));
    s.record(0, ALL, &session(403, false, 0));
    let mut out = String::new();
    r.render(&mut out);
    for line in [
        "# TYPE kong_stream_sessions_total counter",
        "kong_stream_sessions_total{service=\"svc\",route=\"tcp-route\",code=\"200\",source=\"service\",workspace=\"default\"} 2",
        "kong_stream_sessions_total{service=\"svc\",route=\"tcp-route\",code=\"403\",source=\"kong\",workspace=\"default\"} 1",
        "# TYPE kong_session_duration_ms histogram",
        "kong_session_duration_ms_bucket{service=\"svc\",route=\"tcp-route\",workspace=\"default\",le=\"50\"} 2",
        "kong_session_duration_ms_count{service=\"svc\",route=\"tcp-route\",workspace=\"default\"} 3",
        "kong_kong_latency_ms_count{service=\"svc\",route=\"tcp-route\",workspace=\"default\"} 3",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    assert_eq!(out.matches("# TYPE kong_kong_latency_ms ").count(), 1);
}
