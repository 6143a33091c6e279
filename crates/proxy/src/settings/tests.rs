//! Unit tests of `settings`.

use super::*;

#[test]
fn parses_kongs_headers_setting() {
    let d = HeaderSettings::default();
    assert!(d.via && d.server && d.upstream_latency && d.proxy_latency && d.response_latency);
    assert!(d.request_id && !d.upstream_status);
    assert_eq!(
        HeaderSettings::parse("server_tokens, latency_tokens, X-Kong-Request-Id").unwrap(),
        d
    );
    assert_eq!(HeaderSettings::parse("off").unwrap(), HeaderSettings::OFF);
    assert_eq!(HeaderSettings::parse("").unwrap(), HeaderSettings::OFF);
    let h = HeaderSettings::parse("Via, X-Kong-Upstream-Status").unwrap();
    assert!(h.via && h.upstream_status && !h.server && !h.request_id);
    assert!(HeaderSettings::parse("x-nope")
        .unwrap_err()
        .contains("x-nope"));
}
