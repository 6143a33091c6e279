use super::super::{route, service};
use serde_json::{json, Value};

fn errors(schema: crate::schema::Schema, input: Value) -> Vec<(String, String)> {
    match schema.validate(&input) {
        Ok(_) => Vec::new(),
        Err(e) => e.into_iter().map(|e| (e.field, e.message)).collect(),
    }
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_string(), message.to_string())]
}

#[test]
fn grpc_routes_default_to_keeping_the_path() {
    let r = route()
        .validate(&json!({"protocols": ["grpc"], "paths": ["/hello.Greeter/"]}))
        .unwrap();
    assert_eq!(r["strip_path"], json!(false));
    let r = route().validate(&json!({"paths": ["/a"]})).unwrap();
    assert_eq!(
        r["strip_path"],
        json!(true),
        "http routes keep Kong's default"
    );
}

#[test]
fn grpc_routes_refuse_what_kong_refuses() {
    let msg = |f: &str| format!("cannot set '{f}' when 'protocols' is 'grpc' or 'grpcs'");
    for p in ["grpc", "grpcs"] {
        let e = errors(
            route(),
            json!({"protocols": [p], "paths": ["/foo"], "methods": ["GET"]}),
        );
        assert_eq!(e, one("methods", &msg("methods")));
        let e = errors(
            route(),
            json!({"protocols": [p], "hosts": ["foo.grpc.test"], "strip_path": true}),
        );
        assert_eq!(e, one("strip_path", &msg("strip_path")));
        let e = errors(
            route(),
            json!({"protocols": [p], "hosts": ["a.test"], "sources": [{"ip": "1.2.3.4"}]}),
        );
        assert_eq!(e, one("sources", &msg("sources")));
    }
}

#[test]
fn grpc_routes_need_a_matcher() {
    let e = errors(route(), json!({"protocols": ["grpc"]}));
    let m = "must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'grpc'";
    assert_eq!(e, one("@entity", m));
    let e = errors(route(), json!({"protocols": ["grpc", "grpcs"]}));
    let m = "must set one of 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'grpcs'";
    assert_eq!(e, one("@entity", m));
    assert!(errors(route(), json!({"protocols": ["grpcs"], "snis": ["a.test"]})).is_empty());
}

#[test]
fn grpc_services_have_no_path() {
    let e = errors(
        service(),
        json!({"protocol": "grpc", "host": "a.test", "path": "/x"}),
    );
    let mut want = one("path", "value must be null");
    want.extend(one(
        "@entity",
        "failed conditional validation given value of field 'protocol'",
    ));
    assert_eq!(e, want);
    assert!(errors(service(), json!({"protocol": "grpcs", "host": "a.test"})).is_empty());
}
