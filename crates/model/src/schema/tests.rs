use super::*;
use serde_json::json;

fn sample() -> Schema {
    Schema::new(vec![
        ("name", Field::string().required()),
        ("port", Field::integer().default(80).between(0.0, 65535.0)),
        ("mode", Field::string().default("a").one_of(&["a", "b"])),
        ("paths", Field::array(Field::string().len_min(1))),
        ("tags", Field::set(Field::string())),
        (
            "opts",
            Field::record(Schema::new(vec![(
                "depth",
                Field::integer().default(1).gt(0.0),
            )])),
        ),
    ])
}

#[test]
fn fills_defaults_and_nulls_in_schema_order() {
    let out = sample().validate(&json!({"name": "x"})).unwrap();
    assert_eq!(
        out,
        json!({"name": "x", "port": 80, "mode": "a", "paths": null, "tags": null, "opts": {"depth": 1}})
    );
    let keys: Vec<_> = out.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["name", "port", "mode", "paths", "tags", "opts"]);
}

#[test]
fn collects_every_error_with_paths() {
    let errs = sample()
        .validate(&json!({"port": 70000, "mode": "c", "paths": ["/", ""], "extra": 1, "opts": {"depth": 0}}))
        .unwrap_err();
    let got: Vec<(String, String)> = errs.into_iter().map(|e| (e.field, e.message)).collect();
    let want = [
        ("extra", "unknown field"),
        ("name", "required field missing"),
        ("port", "value should be between 0 and 65535"),
        ("mode", "expected one of: a, b"),
        ("paths.2", "length must be at least 1"),
        ("opts.depth", "value must be greater than 0"),
    ];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
}

#[test]
fn type_errors_and_integral_floats() {
    let errs = sample()
        .validate(&json!({"name": 1, "port": 8.5, "paths": "x"}))
        .unwrap_err();
    let msgs: Vec<_> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    assert_eq!(
        msgs,
        [
            "name: expected a string",
            "port: expected an integer",
            "paths: expected an array"
        ]
    );
    let ok = sample()
        .validate(&json!({"name": "n", "port": 8080.0}))
        .unwrap();
    assert_eq!(ok["port"], json!(8080));
}

#[test]
fn sets_drop_duplicates_and_non_objects_are_rejected() {
    let out = sample()
        .validate(&json!({"name": "n", "tags": ["a", "b", "a"]}))
        .unwrap();
    assert_eq!(out["tags"], json!(["a", "b"]));
    let errs = sample().validate(&json!([1])).unwrap_err();
    assert_eq!(errs, vec![FieldError::new("@entity", "expected a record")]);
}

#[test]
fn record_checks_run_on_valid_records_and_nest() {
    fn need_b(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
        if m["mode"] == "b" {
            Ok(())
        } else {
            Err(vec![FieldError::entity("mode must be b")])
        }
    }
    let inner = Schema::new(vec![("mode", Field::string().default("a"))]).with_check(need_b);
    let outer = Schema::new(vec![("config", Field::record(inner.clone()).required())]);
    let errs = outer.validate(&json!({"config": {}})).unwrap_err();
    assert_eq!(errs, vec![FieldError::new("config", "mode must be b")]);
    assert!(outer.validate(&json!({"config": {"mode": "b"}})).is_ok());
}

#[test]
fn integer_one_of_and_required_map_values_as_kong_checks_them() {
    let schema = Schema::new(vec![
        ("bytes", Field::integer().default(16).one_of_int(&[8, 16])),
        ("attrs", Field::map(Field::string().required())),
    ]);
    let errs = schema
        .validate(&json!({"bytes": 12, "attrs": {"a": null, "b": "x"}}))
        .unwrap_err();
    let got: Vec<(String, String)> = errs.into_iter().map(|e| (e.field, e.message)).collect();
    let want = [
        ("bytes", "expected one of: 8, 16"),
        // Kong reports a map value's error on the map.
        ("attrs", "required field missing"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    assert_eq!(got, want);
    let json = schema.to_kong_json();
    assert_eq!(json["fields"][0]["bytes"]["one_of"], json!([8, 16]));
    assert_eq!(json["fields"][1]["attrs"]["values"]["required"], true);
}

#[test]
fn a_field_only_when_set_stays_out_until_given() {
    let schema = Schema::new(vec![
        ("old", Field::boolean().default(false)),
        ("new", Field::boolean().only_when_set()),
    ]);
    assert_eq!(schema.validate(&json!({})).unwrap(), json!({"old": false}));
    assert_eq!(
        schema.validate(&json!({"new": null})).unwrap(),
        json!({"old": false})
    );
    assert_eq!(
        schema.validate(&json!({"new": true})).unwrap(),
        json!({"old": false, "new": true})
    );
}
