//! Unit tests of `mime`.

use super::*;

#[test]
fn negotiates_like_kong() {
    let cases: &[(Option<&str>, Mime)] = &[
        (None, Mime::Json),
        (Some(""), Mime::Json),
        (Some("text/html"), Mime::Html),
        (Some("text/html, application/xml"), Mime::Html),
        (Some("text/html;q=0.5, application/xml"), Mime::Xml),
        (Some("application/xml;q=0.2, text/plain;q=0.9"), Mime::Plain),
        (Some("text/*"), Mime::Plain),
        (Some("*/*"), Mime::Json),
        (Some("image/png"), Mime::Json),
        (Some("text/html;q=0"), Mime::Json),
        (Some("text/html; charset=utf-8"), Mime::Html),
        (Some("garbage"), Mime::Json),
    ];
    for (accept, want) in cases {
        assert_eq!(negotiate(accept.map(str::as_bytes)), *want, "{accept:?}");
    }
}

#[test]
fn renders_kongs_templates() {
    let json: serde_json::Value =
        serde_json::from_str(&Mime::Json.error_body("no \"Route\"", "abc")).unwrap();
    assert_eq!(json["message"], "no \"Route\"");
    assert_eq!(json["request_id"], "abc");
    assert_eq!(Mime::Plain.error_body("m", "id"), "m\nrequest_id: id\n");
    assert!(Mime::Html.error_body("m", "id").contains("<p>m.</p>"));
    assert!(Mime::Xml
        .error_body("m", "id")
        .contains("<requestid>id</requestid>"));
}
