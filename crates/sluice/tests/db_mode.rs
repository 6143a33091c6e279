//! DB mode against the real PostgreSQL on 127.0.0.1:5432 (each test makes its own database and drops it):
//! `sluice migrations`, the refusal to start on an unmigrated database, and the Admin API's writes with
//! Kong's methods, status codes, error bodies, nesting and delete rules, checked through the proxy too.

use serde_json::{json, Value};
use sluice_testkit::{send_json, EchoUpstream, Gateway, TestDb};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

#[test]
fn migrations_commands_and_startup_refusal() {
    let db = TestDb::create("migr");
    let (code, text) = db.migrations(BIN, &["status"]);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("sluice migrations bootstrap"), "{text}");

    // A node refuses an unbootstrapped database and names the command.
    let mut cmd = Command::new(BIN);
    cmd.args(["start", "-p"])
        .arg(tempfile::tempdir().unwrap().path());
    let out = cmd
        .envs(db.env(None))
        .env("SLUICE_PROXY_LISTEN", "127.0.0.1:0")
        .env("SLUICE_ADMIN_LISTEN", "127.0.0.1:0")
        .env("SLUICE_STATUS_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("sluice migrations bootstrap"), "{err}");

    assert_eq!(db.migrations(BIN, &["bootstrap"]).0, 0);
    let (code, text) = db.migrations(BIN, &["list"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("000_base: executed"), "{text}");
    let (code, text) = db.migrations(BIN, &["bootstrap"]);
    assert_ne!(code, 0);
    assert!(text.contains("already bootstrapped"), "{text}");
    assert_eq!(db.migrations(BIN, &["up"]).0, 0);
    assert_eq!(db.migrations(BIN, &["finish"]).0, 0);

    // A database of the previous release (before 001_rate_limiting): status says new (5), a node refuses
    // it naming `up`, and `up` brings it level.
    db.sql(
        "DROP TABLE ratelimiting_metrics; DROP FUNCTION sluice_rl_check_and_count; \
         DELETE FROM sluice_migrations WHERE name = '001_rate_limiting'",
    );
    let (code, text) = db.migrations(BIN, &["status"]);
    assert_eq!(code, 5, "{text}");
    let out = Command::new(BIN)
        .args(["start", "-p"])
        .arg(tempfile::tempdir().unwrap().path())
        .envs(db.env(None))
        .env("SLUICE_PROXY_LISTEN", "127.0.0.1:0")
        .env("SLUICE_ADMIN_LISTEN", "127.0.0.1:0")
        .env("SLUICE_STATUS_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("sluice migrations up"),
        "{err}"
    );
    let (code, text) = db.migrations(BIN, &["up"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("ran 001_rate_limiting"), "{text}");
    assert_eq!(db.migrations(BIN, &["status"]).0, 0);

    // The schema enforces the kind table's rules: every kind has its table, every unique field its UNIQUE
    // constraint, every foreign key its reference with Kong's delete rule.
    let constraints = db.sql(
        "SELECT string_agg(conrelid::regclass::text || '.' || conname || '=' || confdeltype::text, ' ') \
         FROM pg_constraint",
    );
    let constraints: Vec<&str> = constraints.split(' ').collect();
    for kind in sluice_model::declarative::kinds::TABLE {
        let table = kind.key();
        assert!(
            constraints.contains(&format!("{table}.{table}_pkey= ").trim_end()),
            "{table} has no table"
        );
        for field in kind.unique_fields() {
            let want = format!("{table}.{table}_{field}_key=");
            assert!(
                constraints.iter().any(|c| c.starts_with(&want)),
                "{want} missing"
            );
        }
        for fk in kind.references() {
            let rule = match fk.on_delete {
                sluice_model::declarative::kinds::OnDelete::Cascade => "c",
                sluice_model::declarative::kinds::OnDelete::Restrict => "r",
            };
            let want = format!("{table}.{table}_{}_fkey={rule}", fk.field);
            assert!(
                constraints.contains(&want.as_str()),
                "{want} missing from {constraints:?}"
            );
        }
    }

    // Another node migrating holds the lock (the key is "sluice" in ASCII): a second `up` waits for it,
    // then gives up.
    let (host, port, user) = sluice_testkit::pg_server();
    let mut holder = Command::new("psql")
        .args([
            "-h",
            &host,
            "-p",
            &port.to_string(),
            "-U",
            &user,
            "-d",
            &db.name,
            "-tAq",
        ])
        .args([
            "-c",
            "SELECT pg_advisory_lock(126909663503205)",
            "-c",
            "SELECT pg_sleep(4)",
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (code, text) = db.migrations(BIN, &["up", "--lock-timeout", "1"]);
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("could not take the migrations lock"),
        "{text}"
    );
    let _ = holder.kill();
    let _ = holder.wait();

    let (code, text) = db.migrations(BIN, &["reset"]);
    assert_ne!(code, 0, "reset without --yes must refuse: {text}");
    assert_eq!(db.migrations(BIN, &["reset", "--yes"]).0, 0);
    assert_eq!(db.migrations(BIN, &["status"]).0, 3);
    // Reset leaves nothing of Sluice's behind: no table, no function.
    let left = db.sql(
        "SELECT string_agg(name, ',') FROM (SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' \
         UNION ALL SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE n.nspname = 'public') t",
    );
    assert_eq!(left.trim(), "", "left after reset: {left}");
    let (code, text) = db.migrations(BIN, &["bootstrap"]);
    assert_eq!(code, 0, "bootstrap after reset: {text}");
}

async fn call(gw: &Gateway, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    send_json(method, &gw.admin_url(path), body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_writes_with_kongs_semantics() {
    let db = TestDb::create("writes");
    assert_eq!(db.migrations(BIN, &["bootstrap"]).0, 0);
    let gw = db.gateway(BIN, None).start();
    let echo = EchoUpstream::start();
    let url = format!("http://{}", echo.addr());

    // POST 201, then the proxy serves the new route at once.
    let (s, svc) = call(
        &gw,
        "POST",
        "/services",
        Some(json!({"name": "echo", "url": url})),
    )
    .await;
    assert_eq!(s, 201, "{svc}");
    assert_eq!(svc["port"], echo.addr().port());
    let (s, route) = call(
        &gw,
        "POST",
        "/services/echo/routes",
        Some(json!({"name": "r1", "paths": ["/r1"]})),
    )
    .await;
    assert_eq!(s, 201, "{route}");
    assert_eq!(route["service"]["id"], svc["id"]);
    let served = sluice_testkit::client()
        .get(gw.proxy_url("/r1"))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);

    // Schema violation (code 2) with every field, unique violation (5, 409), bad reference (4).
    let (s, e) = call(
        &gw,
        "POST",
        "/services",
        Some(json!({"name": "x", "port": "no"})),
    )
    .await;
    assert_eq!((s, e["code"].clone()), (400, json!(2)), "{e}");
    assert_eq!(e["name"], "schema violation");
    assert!(
        e["fields"]["host"].is_string() && e["fields"]["port"].is_string(),
        "{e}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("2 schema violations ("),
        "{e}"
    );
    let (s, e) = call(
        &gw,
        "POST",
        "/services",
        Some(json!({"name": "echo", "url": url})),
    )
    .await;
    assert_eq!((s, e["code"].clone()), (409, json!(5)), "{e}");
    assert_eq!(
        e["message"],
        "UNIQUE violation detected on '{name=\"echo\"}'"
    );
    assert_eq!(e["fields"], json!({"name": "echo"}));
    let ghost = "6f0c0c0c-0000-4000-8000-000000000000";
    let (s, e) = call(
        &gw,
        "POST",
        "/routes",
        Some(json!({"paths": ["/g"], "service": {"id": ghost}})),
    )
    .await;
    assert_eq!((s, e["code"].clone()), (400, json!(4)), "{e}");
    assert_eq!(
        e["message"],
        format!("the foreign key '{{id=\"{ghost}\"}}' does not reference an existing 'services' entity.")
    );

    // A service with routes cannot be deleted (RESTRICT): code 4 with @referenced_by.
    let (s, e) = call(&gw, "DELETE", "/services/echo", None).await;
    assert_eq!((s, e["code"].clone()), (400, json!(4)), "{e}");
    assert_eq!(e["fields"], json!({"@referenced_by": "routes"}));

    // PUT by name creates (200), and replaces whole: unset fields return to their defaults.
    let body = json!({"url": "http://127.0.0.1:1/a", "retries": 9});
    let (s, put) = call(&gw, "PUT", "/services/other", Some(body)).await;
    assert_eq!(
        (s, put["name"].clone(), put["retries"].clone()),
        (200, json!("other"), json!(9))
    );
    let (s, put2) = call(&gw, "PUT", "/services/other", Some(json!({"host": "h"}))).await;
    assert_eq!(
        (s, put2["retries"].clone(), put2["id"].clone()),
        (200, json!(5), put["id"].clone())
    );
    // PATCH merges; missing → 404 code 6; DELETE of a missing entity → 204.
    let (s, p) = call(&gw, "PATCH", "/services/other", Some(json!({"retries": 2}))).await;
    assert_eq!(
        (s, p["retries"].clone(), p["host"].clone()),
        (200, json!(2), json!("h"))
    );
    let (s, e) = call(&gw, "PATCH", "/services/nope", Some(json!({"retries": 2}))).await;
    assert_eq!((s, e["code"].clone()), (404, json!(6)), "{e}");
    assert_eq!(call(&gw, "DELETE", "/services/nope", None).await.0, 204);
    assert_eq!(call(&gw, "DELETE", "/services/other", None).await.0, 204);
    assert_eq!(call(&gw, "GET", "/services/other", None).await.0, 404);

    // key-auth on the route, a consumer with a credential nested under it: the proxy enforces it.
    let (s, plugin) = call(
        &gw,
        "POST",
        "/routes/r1/plugins",
        Some(json!({"name": "key-auth"})),
    )
    .await;
    assert_eq!(s, 201, "{plugin}");
    let (s, e) = call(
        &gw,
        "POST",
        "/routes/r1/plugins",
        Some(json!({"name": "key-auth"})),
    )
    .await;
    assert_eq!(
        (s, e["code"].clone()),
        (409, json!(5)),
        "a plugin is unique per route: {e}"
    );
    assert_eq!(
        call(&gw, "POST", "/consumers", Some(json!({"username": "ann"})))
            .await
            .0,
        201
    );
    let (s, cred) = call(
        &gw,
        "POST",
        "/consumers/ann/key-auth",
        Some(json!({"key": "k-1"})),
    )
    .await;
    assert_eq!(s, 201, "{cred}");
    let proxied = |key: &'static str| {
        let url = gw.proxy_url("/r1");
        async move {
            sluice_testkit::client()
                .get(url)
                .header("apikey", key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(proxied("k-1").await, 200);
    assert_eq!(proxied("k-2").await, 401);
    // Nested lookups: a credential under another consumer is not found.
    assert_eq!(
        call(&gw, "POST", "/consumers", Some(json!({"username": "bob"})))
            .await
            .0,
        201
    );
    assert_eq!(
        call(&gw, "GET", "/consumers/bob/key-auth/k-1", None)
            .await
            .0,
        404
    );
    assert_eq!(
        call(&gw, "PATCH", "/consumers/bob/key-auth/k-1", Some(json!({})))
            .await
            .0,
        404
    );

    // Cascades: deleting the consumer deletes its credential; the route's plugin goes with the route.
    assert_eq!(call(&gw, "DELETE", "/consumers/ann", None).await.0, 204);
    let (_, creds) = call(&gw, "GET", "/key-auths", None).await;
    assert_eq!(creds["data"], json!([]));
    assert_eq!(proxied("k-1").await, 401);
    assert_eq!(call(&gw, "DELETE", "/routes/r1", None).await.0, 204);
    let (_, plugins) = call(&gw, "GET", "/plugins", None).await;
    assert_eq!(plugins["data"], json!([]));
    assert_eq!(call(&gw, "DELETE", "/services/echo", None).await.0, 204);

    // Upstreams and targets, with the target's delete cascading from its upstream.
    assert_eq!(
        call(&gw, "PUT", "/upstreams/up", Some(json!({}))).await.0,
        200
    );
    let (s, t) = call(
        &gw,
        "POST",
        "/upstreams/up/targets",
        Some(json!({"target": "127.0.0.1:9"})),
    )
    .await;
    assert_eq!(s, 201, "{t}");
    let (s, e) = call(
        &gw,
        "POST",
        "/upstreams/up/targets",
        Some(json!({"target": "127.0.0.1:9"})),
    )
    .await;
    assert_eq!(s, 409, "{e}");
    let (s, e) = call(
        &gw,
        "PUT",
        "/upstreams/up/targets/127.0.0.1:9/unhealthy",
        None,
    )
    .await;
    assert_eq!(s, 204, "Kong 3's PUT .../unhealthy: {e}");
    assert_eq!(call(&gw, "DELETE", "/upstreams/up", None).await.0, 204);
    assert_eq!(db.sql("SELECT count(*) FROM targets"), "0");

    // Form bodies, as `curl -d` sends them: strings become the fields' types.
    let form = |path: &str, body: &'static str| {
        let url = gw.admin_url(path);
        async move {
            let r = sluice_testkit::client()
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (s, f) = form(
        "/services",
        "name=f&url=http%3A%2F%2F127.0.0.1%3A1%2Fx&retries=3",
    )
    .await;
    assert_eq!(
        (s, f["retries"].clone(), f["path"].clone()),
        (201, json!(3), json!("/x")),
        "{f}"
    );
    let (s, r) = form(
        "/services/f/routes",
        "paths[]=/f1&paths[]=/f2&strip_path=false&hosts=h.test",
    )
    .await;
    assert_eq!(s, 201, "{r}");
    assert_eq!(
        (
            r["paths"].clone(),
            r["strip_path"].clone(),
            r["hosts"].clone()
        ),
        (json!(["/f1", "/f2"]), json!(false), json!(["h.test"]))
    );
    let (s, p) = form(
        "/services/f/plugins",
        "name=rate-limiting&config.minute=5&config.policy=local",
    )
    .await;
    assert_eq!((s, p["config"]["minute"].clone()), (201, json!(5)), "{p}");
    let (s, e) = form("/services", "name=g&host=h&port=eighty").await;
    assert_eq!((s, e["code"].clone()), (400, json!(2)), "{e}");

    // A certificate with inline SNIs owns them: created with it, replaced by a PATCH, deleted with it.
    let tc = sluice_testkit::self_signed(&["a.test", "b.test"]);
    let cert = json!({"cert": tc.cert_pem, "key": tc.key_pem, "snis": ["a.test", "b.test"]});
    let (s, c) = call(&gw, "POST", "/certificates", Some(cert)).await;
    assert_eq!(
        (s, c["snis"].clone()),
        (201, json!(["a.test", "b.test"])),
        "{c}"
    );
    let cid = c["id"].as_str().unwrap().to_string();
    let (_, snis) = call(&gw, "GET", "/snis", None).await;
    assert_eq!(snis["data"].as_array().unwrap().len(), 2);
    let (s, c) = call(
        &gw,
        "PATCH",
        &format!("/certificates/{cid}"),
        Some(json!({"snis": ["b.test"]})),
    )
    .await;
    assert_eq!((s, c["snis"].clone()), (200, json!(["b.test"])), "{c}");
    let (_, c) = call(&gw, "GET", &format!("/certificates/{cid}"), None).await;
    assert_eq!(c["snis"], json!(["b.test"]));
    assert_eq!(
        call(&gw, "DELETE", &format!("/certificates/{cid}"), None)
            .await
            .0,
        204
    );
    assert_eq!(db.sql("SELECT count(*) FROM snis"), "0");

    // What Kong Manager reads from GET /.
    let (_, root) = call(&gw, "GET", "/", None).await;
    let conf = &root["configuration"];
    assert_eq!(
        (conf["database"].clone(), conf["role"].clone()),
        (json!("postgres"), json!("traditional"))
    );
    assert_eq!(conf["proxy_listeners"][0]["port"], gw.proxy_port());
    assert_eq!(conf["pg_user"], "postgres");

    // POST /config is DB-less only.
    let (s, _) = call(
        &gw,
        "POST",
        "/config",
        Some(json!({"_format_version": "3.0"})),
    )
    .await;
    assert_eq!(s, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_postgres() {
    let db = TestDb::create("tls");
    assert_eq!(db.migrations(BIN, &["bootstrap"]).0, 0);
    let start = |verify: &str| {
        let mut b = Gateway::builder(BIN).no_config();
        for (k, v) in db.env(None) {
            b = b.env(&k, &v);
        }
        if verify == "on" {
            b = b.expect_not_ready(); // it never reads a config: it has none stored
        }
        b.env("SLUICE_PG_SSL", "on")
            .env("SLUICE_PG_SSL_VERIFY", verify)
            .start()
    };
    let gw = start("off");
    let (s, e) = call(&gw, "POST", "/consumers", Some(json!({"username": "t"}))).await;
    assert_eq!(s, 201, "{e}");
    let encrypted = db.sql(&format!(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE ssl AND application_name = 'sluice' AND datname = '{}'",
        db.name
    ));
    assert_ne!(encrypted, "0", "the node's connections are not encrypted");
    drop(gw);
    // The local server's certificate is self-signed: with verification on, nothing is written.
    let gw = start("on");
    let (s, e) = call(&gw, "POST", "/consumers", Some(json!({"username": "u"}))).await;
    assert_eq!(s, 503, "{e}");
    assert!(e["message"].as_str().unwrap().contains("TLS"), "{e}");
    assert_eq!(
        db.sql("SELECT count(*) FROM consumers WHERE entity->>'username' = 'u'"),
        "0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_log_is_pruned_and_a_node_behind_it_reads_everything() {
    let db = TestDb::bootstrapped(BIN, "prune");
    let gw = db.gateway(BIN, None).start();
    assert_eq!(
        call(&gw, "POST", "/consumers", Some(json!({"username": "a"})))
            .await
            .0,
        201
    );
    // Jump to just before a pruning version, as after 10,000 writes; the old entries are then dropped, and
    // the node's version falls behind the log, so it reads everything.
    db.sql("UPDATE sluice_config SET version = 10099");
    assert_eq!(
        call(&gw, "POST", "/consumers", Some(json!({"username": "b"})))
            .await
            .0,
        201
    );
    assert_eq!(
        db.sql("SELECT count(*) FROM sluice_changes WHERE version <= 100"),
        "0"
    );
    let (_, consumers) = call(&gw, "GET", "/consumers", None).await;
    assert_eq!(
        consumers["data"].as_array().unwrap().len(),
        2,
        "{consumers}"
    );
}
