use super::*;
use crate::cases::Case;

#[test]
fn parses_the_done_line() {
    let out = "Running 2s test\nSLUICE_PERF_RESULT {\"requests\":20000,\"duration_us\":2000000,\"connect\":1,\"read\":2,\"write\":0,\"status\":5,\"timeout\":3,\"p50\":800,\"p95\":1500,\"p99\":2500,\"max\":9000}\n";
    let r = parse(out).unwrap();
    assert_eq!(r.requests, 20000);
    assert_eq!(r.rps, 10000.0);
    assert_eq!(r.errors, 6);
    assert_eq!(r.non_2xx, 5);
    assert_eq!(
        r.latency,
        Latency {
            p50: 0.8,
            p95: 1.5,
            p99: 2.5,
            max: 9.0
        }
    );
}

#[test]
fn missing_or_bad_line_is_an_error() {
    assert!(parse("Running 2s test\n").is_err());
    assert!(parse("SLUICE_PERF_RESULT {\"requests\":").is_err());
}

#[test]
fn script_carries_routes_and_credentials() {
    let s = script(&Case::parse("rl-basic-auth@100/3").unwrap());
    assert!(s.contains("local routes = 100"));
    assert!(s.contains("local consumers = 3"));
    assert!(s.contains("\"Basic YzI6cHctMg==\""), "{s}");
    assert!(s.contains("local header_name = \"Authorization\""));
    let hmac = script(&Case::parse("rl-hmac-auth@2").unwrap());
    assert!(hmac.contains("local headers = { [\"Date\"] = \""), "{hmac}");
    assert!(
        hmac.contains("hmac username=\\\"c1\\\", algorithm=\\\"hmac-sha256\\\""),
        "{hmac}"
    );
    let plain = script(&Case::parse("no-plugins").unwrap());
    assert!(plain.contains("local consumers = 0"));
}
