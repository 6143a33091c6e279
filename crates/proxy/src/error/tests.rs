//! Unit tests of `error`.

use super::*;

fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap()
}

#[test]
fn statuses_and_messages_follow_kong() {
    let table = [
        (
            ProxyError::NoRoute,
            404,
            "no Route matched with those values",
        ),
        (
            ProxyError::NoService,
            503,
            "no Service found with those values",
        ),
        (ProxyError::HttpsRequired, 426, "Please use HTTPS protocol"),
        (
            ProxyError::BadGateway,
            502,
            "An invalid response was received from the upstream server",
        ),
        (
            ProxyError::NoPeer,
            503,
            "failure to get a peer from the ring-balancer",
        ),
        (ProxyError::NameResolution, 503, "name resolution failed"),
        (
            ProxyError::Timeout,
            504,
            "The upstream server is timing out",
        ),
        (ProxyError::Internal, 500, "An unexpected error occurred"),
    ];
    for (err, status, message) in table {
        let resp = err.into_response(None, None, "rid");
        assert_eq!(resp.status().as_u16(), status);
        let body: serde_json::Value = serde_json::from_slice(resp.body()).unwrap();
        assert_eq!(body["message"], message);
        assert_eq!(body["request_id"], "rid");
    }
}

#[test]
fn upgrade_and_redirect_headers() {
    let resp = ProxyError::HttpsRequired.into_response(None, None, "x");
    assert_eq!(resp.headers()["connection"], "Upgrade");
    assert_eq!(resp.headers()["upgrade"], "TLS/1.2, HTTP/1.1");
    let resp = ProxyError::HttpsRedirect {
        status: 308,
        location: "https://a.test/p?q".into(),
    }
    .into_response(None, None, "x");
    assert_eq!(resp.status(), 308);
    assert_eq!(resp.headers()["location"], "https://a.test/p?q");
    assert!(resp.body().is_empty());
}

#[test]
fn nginx_errors_fall_back_to_content_type() {
    let html = hv("text/html");
    let resp = ProxyError::BadGateway.into_response(None, Some(&html), "x");
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let resp = ProxyError::NoRoute.into_response(None, Some(&html), "x");
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let resp = ProxyError::NoRoute.into_response(Some(&hv("text/plain")), None, "x");
    assert_eq!(
        &resp.body()[..],
        b"no Route matched with those values\nrequest_id: x\n"
    );
}
