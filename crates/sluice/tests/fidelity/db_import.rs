//! The oauth2 plugin, which Sluice runs only with a database (docs/differences.md#oauth2-plugin), from a
//! Kong 3.9.1 `db_export`: `sluice config db_import` takes the file unchanged, the Admin API gives back
//! the plugin and credentials with every field and value of the export, and the imported clients (one
//! whose secret Kong stored hashed, `$pbkdf2-sha512$...` as `kong/plugins/oauth2/secret.lua` writes it)
//! get a token from the route, so the settings were applied and not only stored.

use super::{fixture, fixture_path, BIN};
use serde_json::Value;
use sluice_testkit::{https_client, send_json, TestDb};

const FILE: &str = "kong-3.9-oauth2-db-import.yaml";

/// The entity of kind `kind` with id `id` in the fixture.
fn exported(doc: &Value, kind: &str, id: &str) -> Value {
    doc[kind]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("{kind} {id} in {FILE}"))
}

/// Every field of `kong` that `ours` lacks or holds another value of, as `kind.field: kong → ours`.
fn differences(kind: &str, kong: &Value, ours: &Value, found: &mut Vec<String>) {
    for (key, value) in kong.as_object().expect("an entity") {
        let mine = &ours[key];
        let foreign = mine.get("id").filter(|_| !value.is_object());
        if mine != value && foreign != Some(value) {
            found.push(format!("{kind}.{key}: {value} → {mine}"));
        }
    }
}

/// A client-credentials token request for scope `email` on the fixture's `/oauth` route: status and body.
async fn token(gw: &sluice_testkit::Gateway, client: &str, secret: &str) -> (u16, Value) {
    let port = gw.proxy_tls_port();
    let resp = https_client("fidelity.test", port, true)
        .post(format!("https://fidelity.test:{port}/oauth/oauth2/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client),
            ("client_secret", secret),
            ("scope", "email"),
        ])
        .send()
        .await
        .expect("token request");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kong_export_with_oauth2_imports_into_the_database_unchanged() {
    let db = TestDb::bootstrapped(BIN, "fidoauth");
    let out = std::process::Command::new(BIN)
        .args(["config", "db_import"])
        .arg(fixture_path(FILE))
        .envs(db.env(None))
        .output()
        .expect("run sluice");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let gw = db.gateway(BIN, None).start();
    let doc = sluice_model::declarative::to_document(&fixture(FILE)).expect("YAML");
    let mut found = Vec::new();
    for (kind, path) in [("plugins", "plugins"), ("oauth2_credentials", "oauth2")] {
        for e in doc[kind].as_array().expect("a list") {
            let id = e["id"].as_str().unwrap();
            let (status, ours) =
                send_json("GET", &gw.admin_url(&format!("/{path}/{id}")), None).await;
            assert_eq!(status, 200, "{path}/{id}: {ours}");
            differences(kind, &exported(&doc, kind, id), &ours, &mut found);
        }
    }
    assert!(found.is_empty(), "{FILE}:\n{}", found.join("\n"));
    // The imported confidential clients get a token with the exported `token_expiration` on the
    // https-only route: one with a plain secret, one whose secret Kong stored hashed (`hash_secret`).
    for (client, secret) in [
        ("bob-client", "bob-client-secret"),
        ("bob-machine", "bob-machine-secret"),
    ] {
        let (status, body) = token(&gw, client, secret).await;
        assert_eq!(status, 200, "{client}: {body}");
        assert_eq!(body["expires_in"], 3600, "{client}: {body}");
    }
}
