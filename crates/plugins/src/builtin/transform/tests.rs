//! Config entries, form codec and templates.

use super::{append_json, form, split_pair, template};
use http::HeaderMap;
use serde_json::{json, Map, Value};

#[test]
fn pairs_split_like_kong() {
    assert_eq!(split_pair("x-a:1"), ("x-a", Some("1")));
    assert_eq!(split_pair("x-a::1:2"), ("x-a", Some("1:2")));
    assert_eq!(split_pair("x-a:"), ("x-a", None));
    assert_eq!(split_pair("x-a"), ("x-a", None));
}

#[test]
fn append_makes_lists() {
    assert_eq!(append_json(None, json!("v")), json!(["v"]));
    assert_eq!(append_json(Some(json!("a")), json!("v")), json!(["a", "v"]));
    assert_eq!(
        append_json(Some(json!(["a"])), json!("v")),
        json!(["a", "v"])
    );
    assert_eq!(append_json(Some(json!(3)), json!("v")), json!(["v"]));
}

#[test]
fn form_round_trip() {
    let m = form::parse("a=1&b&a=2&c=x+y%21&&d=");
    assert_eq!(
        Value::Object(m.clone()),
        json!({"a": ["1", "2"], "b": true, "c": "x y!", "d": ""})
    );
    assert_eq!(form::encode(&m), "a=1&a=2&b&c=x%20y%21&d=");
    assert_eq!(form::encode(&Map::new()), "");
}

#[test]
fn templates_read_headers_query_and_captures() {
    let mut headers = HeaderMap::new();
    headers.insert("x-user-name", "ann".parse().unwrap());
    let query = form::parse("q=1&list=a&list=b");
    let captures = sluice_router::Captures {
        unnamed: vec![Some("/u/7".into()), Some("7".into())],
        named: vec![("id".into(), "7".into())],
    };
    let env = template::Env {
        headers: &headers,
        query: &query,
        captures: Some(&captures),
    };
    let cases = [
        ("plain", "plain"),
        ("$(headers.x_user_name)!", "ann!"),
        ("$(headers[\"X-User-Name\"])", "ann"),
        ("$(headers['missing'])", ""),
        ("q=$(query_params.q) l=$(query_params[\"list\"])", "q=1 l=a"),
        ("/users/$(uri_captures.id)/$(uri_captures[1])", "/users/7/7"),
        ("$(os.time())", "$(os.time())"),
        ("$(unclosed", "$(unclosed"),
    ];
    for (input, want) in cases {
        assert_eq!(template::render(input, &env), want, "{input}");
    }
}
