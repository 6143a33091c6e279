use super::*;
use crate::schema::{Field, Schema};
use crate::PluginDef;

/// A registry of fake plugins: `limits` (config: `second` integer > 0, `policy` default "local") and
/// `guard` (no config, its own default `protocols`: `http, tcp`).
struct TestRegistry(Vec<PluginDef>);

impl TestRegistry {
    fn new() -> Self {
        let limits = PluginDef {
            name: "limits",
            priority: 1,
            config: Schema::new(vec![
                ("second", Field::integer().gt(0.0)),
                ("policy", Field::string().default("local")),
            ]),
            no_consumer: false,
            no_route: false,
            no_service: false,
            protocols: None,
        };
        let guard = PluginDef {
            name: "guard",
            config: Schema::new(vec![]),
            protocols: Some(&["http", "tcp"]),
            ..limits.clone()
        };
        TestRegistry(vec![limits, guard])
    }
}

impl PluginRegistry for TestRegistry {
    fn plugin(&self, name: &str) -> Option<&PluginDef> {
        self.0.iter().find(|d| d.name == name)
    }
    fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|d| d.name).collect()
    }
}

fn ok(text: &str) -> Config {
    parse(text, &TestRegistry::new()).unwrap_or_else(|e| panic!("unexpected errors:\n{e}"))
}

fn errs(text: &str) -> Vec<String> {
    let e = parse(text, &TestRegistry::new()).expect_err("expected errors");
    let mut out: Vec<String> = e
        .document
        .iter()
        .map(|f| format!("{}: {}", f.field, f.message))
        .collect();
    for ent in &e.entities {
        out.extend(
            ent.errors
                .iter()
                .map(|f| format!("{} {}: {}", ent.path, f.field, f.message)),
        );
    }
    out
}

const BASIC: &str = r#"
_format_version: "3.0"
services:
- name: svc
  url: https://example.com:8443/base
  routes:
  - name: r1
    paths: [/a, "~/users/(?<id>\\d+)"]
    plugins:
    - name: limits
      config: {second: 5}
upstreams:
- name: up.internal
  targets:
  - target: 10.0.0.1
  - target: "[::1]:81"
    weight: 0
consumers:
- username: alice
  basicauth_credentials:
  - username: alice
    password: secret
  keyauth_credentials:
  - {}
"#;

#[test]
fn nested_entities_get_parents_defaults_and_url_parts() {
    let c = ok(BASIC);
    let svc = &c.services[0];
    assert_eq!(
        (svc.protocol.as_str(), svc.host.as_str(), svc.port),
        ("https", "example.com", 8443)
    );
    assert_eq!(svc.path.as_deref(), Some("/base"));
    assert_eq!((svc.retries, svc.connect_timeout), (5, 60000));
    let r = &c.routes[0];
    assert_eq!(r.service.unwrap().id, svc.id);
    assert_eq!(r.protocols, ["http", "https"]);
    assert!(r.strip_path && !r.preserve_host);
    assert_eq!(c.plugins[0].route.unwrap().id, r.id);
    assert_eq!(
        c.plugins[0].config,
        serde_json::json!({"second": 5, "policy": "local"})
    );
    assert_eq!(c.targets[0].target, "10.0.0.1:8000");
    assert_eq!(c.targets[1].target, "[::1]:81");
    assert_eq!(
        c.upstreams[0].healthchecks.active.healthy.http_statuses,
        [200, 302]
    );
    assert_eq!(c.keyauth_credentials[0].key.len(), 32);
    // sha1("secret" .. consumer id), never the plain password
    assert_ne!(c.basicauth_credentials[0].password, "secret");
    assert_eq!(c.basicauth_credentials[0].password.len(), 40);
    assert_eq!(c.hash().len(), 32);
}

#[test]
fn same_file_same_ids_and_hash_and_given_ids_are_kept() {
    let a = ok(BASIC);
    let b = ok(BASIC);
    assert_eq!(a.services[0].id, b.services[0].id);
    assert_eq!(a.hash(), b.hash());
    let changed = ok(&BASIC.replace("second: 5", "second: 6"));
    assert_ne!(a.hash(), changed.hash());
    let given = ok("_format_version: '3.0'\nconsumers:\n- id: 9748f662-7711-4a90-8186-dc02f10eb0f5\n  username: x\n");
    assert_eq!(
        given.consumers[0].id.to_string(),
        "9748f662-7711-4a90-8186-dc02f10eb0f5"
    );
}

/// hmac-auth credentials nest under consumers or name one; a missing secret is random per load but leaves the
/// hash alone (it is filled after hashing), a given one is kept; usernames are unique.
#[test]
fn hmac_credentials_get_a_random_secret_outside_the_hash() {
    let file = r#"
_format_version: "3.0"
consumers:
- username: alice
  hmacauth_credentials: [{username: alice-hmac}]
hmacauth_credentials: [{consumer: alice, username: bob-hmac, secret: s3cret}]
"#;
    let (a, b) = (ok(file), ok(file));
    let alice = a.consumers[0].id;
    let creds = &a.hmacauth_credentials;
    assert_eq!(creds.len(), 2);
    assert!(creds.iter().all(|c| c.consumer.id == alice));
    let generated = &creds[0].secret;
    assert_eq!(generated.len(), 32);
    assert!(generated.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(generated, &b.hmacauth_credentials[0].secret);
    assert_eq!(creds[1].secret, "s3cret");
    assert_eq!(a.hash(), b.hash());
    let twice = file.replace("bob-hmac", "alice-hmac");
    assert!(errs(&twice).iter().any(|e| e.contains(
        "uniqueness violation: 'hmacauth_credentials' entity with username set to 'alice-hmac' already declared"
    )));
}

#[test]
fn top_level_references_by_name_equal_nesting() {
    let flat = ok(r#"
_format_version: "3.0"
services: [{name: svc, url: "https://example.com:8443/base"}]
routes: [{name: r1, service: svc, paths: [/a, "~/users/(?<id>\\d+)"]}]
plugins: [{name: limits, route: r1, config: {second: 5}}]
"#);
    let nested = ok(BASIC);
    assert_eq!(flat.routes[0].service, nested.routes[0].service);
    assert_eq!(flat.plugins[0].route.unwrap().id, flat.routes[0].id);
}

#[test]
fn a_nested_entitys_own_reference_must_exist_and_its_parent_wins() {
    // Kong #7696: a route under a service that names a service of its own.
    let missing = errs(
        r#"
_format_version: "2.1"
services:
- name: my-service-1
  url: http://localhost:8001/status
  routes:
  - name: my-route-1
    service: {id: "769bdf51-16df-5476-9830-ef26800b5448"}
    paths: [/status]
"#,
    );
    assert!(
        missing
            .iter()
            .any(|e| e.contains("could not find service '769bdf51-16df-5476-9830-ef26800b5448'")),
        "{missing:?}"
    );
    // An existing other entity is accepted, and the parent is the reference, as in Kong.
    let config = ok(r#"
_format_version: "3.0"
services:
- name: a
  url: http://a.example
  routes: [{name: r1, service: b, paths: [/x]}]
- name: b
  url: http://b.example
consumers:
- username: u1
  keyauth_credentials: [{key: k1, consumer: {username: u2}}]
- username: u2
"#);
    let a = config
        .services
        .iter()
        .find(|s| s.name.as_deref() == Some("a"))
        .unwrap();
    assert_eq!(config.routes[0].service.unwrap().id, a.id);
    let u1 = config
        .consumers
        .iter()
        .find(|c| c.username.as_deref() == Some("u1"))
        .unwrap();
    assert_eq!(config.keyauth_credentials[0].consumer.id, u1.id);
    let bad_consumer = errs(
        r#"
_format_version: "3.0"
consumers:
- username: u1
  keyauth_credentials: [{key: k1, consumer: nobody}]
"#,
    );
    assert!(
        bad_consumer
            .iter()
            .any(|e| e.contains("could not find consumer 'nobody'")),
        "{bad_consumer:?}"
    );
}

#[test]
fn protocols_are_kong_osss_and_ws_is_refused_as_kong_oss_refuses_it() {
    let e = errs(
        r#"
_format_version: "3.0"
services:
- {name: s, host: a.test, protocol: wss}
routes:
- {name: r, service: s, protocols: [ws], paths: [/x]}
"#,
    );
    let expected = "expected one of: grpc, grpcs, http, https, tcp, tls, tls_passthrough, udp";
    assert_eq!(
        e.iter().filter(|m| m.contains(expected)).count(),
        2,
        "{e:?}"
    );
}

#[test]
fn export_then_parse_round_trips() {
    let a = ok(BASIC);
    let b = parse_value(export(&a), &TestRegistry::new()).unwrap_or_else(|e| panic!("{e}"));
    let strip = |mut c: Config| {
        c.hash.clear();
        c
    };
    assert_eq!(strip(a), strip(b));
    let yaml = export_yaml(&ok(BASIC));
    assert!(yaml.contains("_transform: false"));
}

#[test]
fn a_filtered_export_is_the_whole_exports_entries_it_keeps() {
    let config = ok(BASIC);
    let Value::Object(all) = export(&config) else {
        panic!("not an object")
    };
    for keep in [&["routes"][..], &["_format_version", "consumers"], &[]] {
        let part = export_of(&config, |k| keep.contains(&k));
        let want: serde_json::Map<String, Value> = all
            .iter()
            .filter(|(k, _)| keep.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(part, want, "{keep:?}");
    }
}

#[test]
fn records_read_back_from_a_store_equal_the_config() {
    let a = ok(BASIC);
    let mut kinds: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let mut keys = Vec::new();
    crate::records::for_each_record(&a, |r| {
        keys.push((r.kind, r.unique.len(), r.foreign.len()));
        match kinds.last_mut() {
            Some((k, bodies)) if k == r.kind => bodies.push(r.body),
            _ => kinds.push((r.kind.to_string(), vec![r.body])),
        }
    });
    let b = from_store(a.format_version.clone(), a.hash.clone(), kinds.clone()).unwrap();
    assert_eq!(a, b);
    // A route is indexed by its name and its service; a credential by its key and its consumer.
    assert!(keys.contains(&("routes", 1, 1)));
    assert!(keys.contains(&("keyauth_credentials", 1, 1)));
    kinds[0].0 = "bogus".into();
    let err = from_store(a.format_version.clone(), a.hash.clone(), kinds).unwrap_err();
    assert!(err.contains("unknown entity kind 'bogus'"), "{err}");
}

#[test]
fn every_error_is_collected_with_kong_messages() {
    let got = errs(
        r#"
_format_version: "3.0"
bogus: 1
services:
- name: a
  routes:
  - name: r1
    paths: [nope]
  - name: r2
- name: b
  host: x
  port: 99999
  extra: true
- name: b
  host: y
routes:
- name: r3
  service: nowhere
  paths: [/x]
plugins:
- name: no-such-plugin
- name: limits
  config: {second: 0, junk: 1}
consumers:
- tags: [t]
"#,
    );
    let want = [
        "bogus: unknown field",
        "services[0] host: required field missing",
        "services[0].routes[0] paths.1: should start with: / (fixed path) or ~/ (regex path)",
        "services[0].routes[1] @entity: must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'",
        "services[1] extra: unknown field",
        "services[1] port: value should be between 0 and 65535",
        "services[2] @entity: uniqueness violation: 'services' entity with name set to 'b' already declared",
        "routes[0] service: could not find service 'nowhere'",
        "plugins[0] name: plugin 'no-such-plugin' not enabled; add it to the 'plugins' configuration property",
        "plugins[1] config.junk: unknown field",
        "plugins[1] config.second: value must be greater than 0",
        "consumers[0] @entity: at least one of these fields must be non-empty: 'custom_id', 'username'",
    ];
    for w in want {
        assert!(got.iter().any(|g| g == w), "missing {w:?} in {got:#?}");
    }
    assert_eq!(got.len(), want.len(), "{got:#?}");
}

#[test]
fn error_shapes_for_the_admin_api() {
    let e = parse(
        "_format_version: '3.0'\nservices:\n- name: ok\n  host: h\n- name: bad\n",
        &TestRegistry::new(),
    )
    .unwrap_err();
    assert_eq!(
        e.kong_fields(),
        serde_json::json!({"services": [null, {"host": "required field missing"}]})
    );
    let flat = e.flattened();
    assert_eq!(flat[0]["entity_type"], "service");
    assert_eq!(flat[0]["entity_name"], "bad");
    assert_eq!(
        flat[0]["errors"][0],
        serde_json::json!({"type": "field", "field": "host", "message": "required field missing"})
    );
    assert!(e.message().starts_with("declarative config is invalid: "));
    assert!(e
        .to_string()
        .contains("service 'bad' (services[1]): host: required field missing"));
}

#[test]
fn format_version_and_syntax_errors() {
    assert_eq!(
        errs("services: []"),
        ["_format_version: required field missing"]
    );
    assert_eq!(
        errs("_format_version: '9'"),
        ["_format_version: expected one of: 1.1, 2.1, 3.0"]
    );
    assert!(errs("services: [unclosed")[0]
        .starts_with("@document: failed parsing declarative configuration"));
    assert_eq!(errs("[1, 2]"), ["@document: expected an object"]);
}

#[test]
fn garbage_never_panics() {
    let seeds = [
        BASIC,
        "_format_version: '3.0'\nservices: [{routes: [{plugins: [1, null, {config: []}]}]}]",
    ];
    let junk = [
        "",
        "null",
        "[",
        "{",
        "- -",
        ": :",
        "1",
        "~",
        "\"",
        "{a: [}",
        "services: {a: 1}",
        "plugins: 7",
    ];
    for seed in seeds {
        for cut in (0..seed.len()).step_by(7) {
            let _ = parse(&seed[..cut], &TestRegistry::new());
            for j in junk {
                let _ = parse(&format!("{}{j}", &seed[..cut]), &TestRegistry::new());
            }
        }
    }
}

#[test]
fn references_show_in_error_reports_and_generated_keys_are_random() {
    let text = "_format_version: '3.0'\nconsumers:\n- username: u\n  keyauth_credentials:\n  - ttl: -1\n  - {}\n";
    let e = parse(text, &TestRegistry::new()).unwrap_err();
    let flat = e.flattened();
    assert_eq!(flat.as_array().map(Vec::len), Some(1), "{flat}");
    let entity = flat[0]["entity"].as_object().unwrap();
    let keys: Vec<&str> = entity.keys().map(String::as_str).collect();
    assert_eq!(keys, ["ttl", "consumer"]);
    // A valid credential without a key gets a random one (not computable from its public id), a new
    // one on each load, as Kong's `random_string`.
    let ok_text =
        "_format_version: '3.0'\nconsumers:\n- username: u\n  keyauth_credentials:\n  - {}\n";
    let (a, b) = (ok(ok_text), ok(ok_text));
    let key = &a.keyauth_credentials[0].key;
    assert_eq!(key.len(), 32);
    assert!(key.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(key, &b.keyauth_credentials[0].key);
    assert_eq!(a.hash(), b.hash(), "the file's hash is stable");
}

/// Kong exports load unchanged (issue 22): an upstream's `client_certificate` (even null), the `hash_on`
/// shorthand that switches the algorithm to consistent hashing, and Kong 2.x targets' fractional timestamps.
#[test]
fn kong_exports_with_upstreams_load() {
    let c = ok(r#"
_format_version: "3.0"
upstreams:
- name: hashed
  hash_on: header
  hash_on_header: x-user
  client_certificate: null
  targets:
  - target: 10.0.0.1:80
    created_at: 1650000000.123
- name: fewest
  algorithm: least-connections
  hash_on: ip
"#);
    let hashed = &c.upstreams[0];
    assert_eq!(
        (hashed.algorithm.as_str(), hashed.hash_on.as_str()),
        ("consistent-hashing", "header")
    );
    assert!(hashed.client_certificate.is_none());
    assert_eq!(c.targets[0].created_at, 1650000000.123);
    let fewest = &c.upstreams[1];
    assert_eq!(
        (fewest.algorithm.as_str(), fewest.hash_on.as_str()),
        ("least-connections", "none")
    );
}

/// Kong's upstream shorthands, in its order and in place: `latency` hashes on nothing, and an explicit
/// `hash_on: none` makes the algorithm round-robin.
#[test]
fn upstream_shorthands_apply_in_kongs_order() {
    let c = ok(r#"
_format_version: "3.0"
upstreams:
- {name: fast, algorithm: latency, hash_on: header, hash_on_header: x-user}
- {name: plain, algorithm: consistent-hashing, hash_on: none}
- {name: hashed, algorithm: round-robin, hash_on: ip}
"#);
    let got: Vec<(&str, &str)> = (c.upstreams.iter())
        .map(|u| (u.algorithm.as_str(), u.hash_on.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("latency", "none"),
            ("round-robin", "none"),
            ("consistent-hashing", "ip")
        ]
    );
}

/// A key-auth credential's `ttl` in a Kong 3.x export is the Unix time it expires (Kong's DB-less node
/// compares it with the clock), far above the Admin API's relative `ttl` bound; it loads as written.
#[test]
fn a_key_ttl_as_kong_exports_it_loads() {
    let c = ok("_format_version: '3.0'\nconsumers:\n- username: u\n  keyauth_credentials:\n  - {key: k, ttl: 4102444800}\n");
    assert_eq!(c.keyauth_credentials[0].ttl, Some(4102444800));
}

/// `_comment` must be a string and `_ignore` an array, at the top and on entities, as in Kong.
#[test]
fn meta_keys_have_kong_types() {
    let e = errs("_format_version: \"3.0\"\n_comment: [1]\nservices:\n- name: a\n  host: x\n  _ignore: nope\n  _comment: ok\n");
    assert!(
        e.iter()
            .any(|m| m.contains("_comment") && m.contains("expected a string")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|m| m.contains("services[0]._ignore") && m.contains("expected an array")),
        "{e:?}"
    );
    ok("_format_version: \"3.0\"\n_comment: fine\n_ignore: [1, x]\nservices:\n- name: a\n  host: x\n  _comment: ok\n");
}

mod jwt;
mod oauth2;
mod reuse;
mod stream_routes;

#[test]
fn a_ca_certificate_must_be_a_ca_as_kong_checks_it() {
    // The testkit's v1 certificate has no extensions, so no `CA` basic constraint.
    let v1 = include_str!("../../../testkit/fixtures/x509-v1.crt");
    let indented = v1.trim_end().replace('\n', "\n    ");
    let doc = format!("_format_version: \"3.0\"\nca_certificates:\n- cert: |\n    {indented}\n");
    let found = errs(&doc);
    assert!(
        found
            .iter()
            .any(|e| e.contains("certificate does not appear to be a CA because it is missing the \"CA\" basic constraint")),
        "{found:?}"
    );
}
