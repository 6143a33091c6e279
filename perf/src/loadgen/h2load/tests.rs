use super::*;
use crate::cases::Case;
use std::time::Duration;

const OUTPUT: &str = "\
starting benchmark...
Main benchmark duration is over for thread #0. Stopping all clients.

finished in 10.01s, 17310.00 req/s, 676.41KB/s
requests: 173100 total, 173140 started, 173100 done, 173090 succeeded, 10 failed, 4 errored, 0 timeout
status codes: 173080 2xx, 0 3xx, 7 4xx, 3 5xx
traffic: 676.41KB (692648) total, 50.83KB (52046) headers (space savings 95.77%), 152.14KB (155790) data
";

#[test]
fn parses_the_summary() {
    let s = parse(OUTPUT).unwrap();
    assert_eq!(
        s,
        Summary {
            seconds: 10.01,
            done: 173_100,
            failed: 10,
            ok: 173_080,
            not_ok: 10,
        }
    );
    assert!(parse("error: connect failed\n").is_err());
    assert_eq!(parse_seconds("250ms"), Some(0.25));
    assert_eq!(parse_seconds("7"), None);
}

#[test]
fn uncounted_answers_are_failures() {
    let s = parse(OUTPUT).unwrap();
    let r = result(&s, Latency::default(), Some(173_070));
    assert_eq!((r.requests, r.errors, r.non_2xx), (173_100, 10, 20));
    assert!((r.rps - 173_080.0 / 10.01).abs() < 1e-6);
    // More counted than answered (calls cut off at the end): nothing uncounted.
    assert_eq!(result(&s, Latency::default(), Some(173_140)).non_2xx, 10);
    assert_eq!(result(&s, Latency::default(), None).non_2xx, 10);
}

#[test]
fn latency_from_the_log_skips_failed_calls() {
    let log = "1\t200\t1000\n2\t200\t3000\n3\t-1\t900000\n4\t200\t2000\n";
    let l = latency(log);
    assert_eq!((l.p50, l.max), (2.0, 3.0));
    assert_eq!(latency("").p99, 0.0);
}

#[test]
fn calls_every_route_with_grpc_framing_headers() {
    let spec = LoadSpec {
        base_url: "http://127.0.0.1:8000".into(),
        case: Case::parse("grpc-unary@2").unwrap(),
        connections: 50,
        threads: 1,
        duration: Duration::from_millis(2500),
        rate: None,
        cpus: None,
        work_dir: "/w".into(),
        streams: 10,
        upstream: None,
    };
    assert_eq!(
        uris(&spec),
        "http://127.0.0.1:8000/perf.R0/Unary\nhttp://127.0.0.1:8000/perf.R1/Unary\n"
    );
    let a = args(&spec, Path::new("/b"), Path::new("/u"), Path::new("/l"));
    let line = a.join(" ");
    assert!(line.starts_with("-t 1 -c 50 -m 10 -D 3 -d /b"), "{line}");
    assert!(
        line.contains("-H content-type: application/grpc -H te: trailers"),
        "{line}"
    );
    assert!(line.ends_with("--log-file=/l -i /u"), "{line}");
    assert_eq!(&grpc::frame(grpc::REQUEST)[..5], &[0, 0, 0, 0, 6]);
}
