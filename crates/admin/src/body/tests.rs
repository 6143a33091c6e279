//! Unit tests of `body`.

use super::*;

const YAML: &str = "_format_version: '3.0'\nconsumers:\n- username: bob\n";

fn version(doc: Result<Value, ApiError>) -> String {
    match doc {
        Ok(doc) => doc["_format_version"]
            .as_str()
            .unwrap_or("missing")
            .to_string(),
        Err(e) => format!("error {e:?}"),
    }
}

#[test]
fn raw_yaml_and_json_whatever_the_content_type() {
    assert_eq!(
        version(declarative_doc("application/x-yaml", YAML.as_bytes())),
        "3.0"
    );
    assert_eq!(
        version(declarative_doc("application/json", YAML.as_bytes())),
        "3.0"
    );
    let json = br#"{"_format_version":"3.0","services":[]}"#;
    assert_eq!(version(declarative_doc("", json)), "3.0");
}

#[test]
fn form_fields_and_config_key() {
    let form = format!("config={}", query::escape(YAML));
    assert_eq!(
        version(declarative_doc(
            "application/x-www-form-urlencoded",
            form.as_bytes()
        )),
        "3.0"
    );
    let mp = format!(
        "--XX\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n\
         --XX\r\nContent-Disposition: form-data; name=\"config\"; filename=\"kong.yml\"\r\n\
         Content-Type: application/x-yaml\r\n\r\n{YAML}\r\n--XX--\r\n"
    );
    assert_eq!(
        version(declarative_doc(
            "multipart/form-data; boundary=XX",
            mp.as_bytes()
        )),
        "3.0"
    );
    let wrapped = serde_json::json!({ "config": YAML }).to_string();
    assert_eq!(
        version(declarative_doc("application/json", wrapped.as_bytes())),
        "3.0"
    );
}

#[test]
fn multipart_matches_the_name_parameter_not_the_filename() {
    let mp = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"config\"\r\n\r\nnope\r\n--B--\r\n";
    assert_eq!(
        declarative_doc("multipart/form-data; boundary=\"B\"", mp.as_bytes()),
        Err(ApiError::BadRequest(
            "expected a declarative configuration".into()
        ))
    );
}

#[test]
fn empty_and_unparsable_bodies_get_kongs_errors() {
    let empty = Err(ApiError::BadRequest(
        "expected a declarative configuration".into(),
    ));
    assert_eq!(declarative_doc("application/json", b""), empty);
    assert_eq!(declarative_doc("application/json", b"  \n"), empty);
    assert_eq!(
        declarative_doc("application/x-www-form-urlencoded", b"other=1"),
        empty
    );
    let bobby = serde_json::json!({ "config": "bobby tables" }).to_string();
    assert_eq!(
        declarative_doc("application/json", bobby.as_bytes()),
        Err(ApiError::unparsable(
            "failed parsing declarative configuration: expected an object"
        ))
    );
    match declarative_doc("application/json", b"{\"_format_version\": ") {
        Err(ApiError::Declarative(invalid)) => {
            let msg = invalid.fields["error"].as_str().unwrap_or_default();
            assert!(
                msg.starts_with("failed parsing declarative configuration: "),
                "{msg}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        declarative_doc("text/plain", &[0xff, 0xfe]),
        Err(ApiError::Declarative(_))
    ));
}
