use super::*;

fn redirect(location: &str, keep: bool) -> Redirect {
    let uri: Uri = location.parse().unwrap();
    Redirect {
        status: StatusCode::MOVED_PERMANENTLY,
        fixed: HeaderValue::from_str(location).unwrap(),
        origin: keep.then(|| {
            format!(
                "{}://{}",
                uri.scheme_str().unwrap(),
                uri.authority().unwrap()
            )
        }),
    }
}

#[test]
fn the_location_as_configured_or_with_the_incoming_path() {
    let request: Uri = "/a/b?x=1".parse().unwrap();
    assert_eq!(
        redirect("https://new.test/landing", false).location(&request),
        "https://new.test/landing"
    );
    assert_eq!(
        redirect("https://new.test:8443/landing?q=2", true).location(&request),
        "https://new.test:8443/a/b?x=1"
    );
}

#[test]
fn locations_must_be_absolute_urls() {
    assert!(check_url(&Value::from("https://a.test/x")).is_ok());
    assert!(check_url(&Value::from("/relative")).is_err());
    assert!(check_url(&Value::from("not a url")).is_err());
}
