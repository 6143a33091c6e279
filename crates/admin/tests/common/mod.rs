//! Shared test harness: a real [`Control`] over the model's declarative parser and the built-in plugins,
//! the admin and status servers on ephemeral ports, and small HTTP helpers.

#![allow(dead_code)] // each test binary uses a different part of the harness

use serde_json::Value;
use sluice_admin::{
    serve_admin, serve_status, BoxFuture, ConfigBody, Control, LoadError, LoadOptions, LoadOutcome,
    NodeInfo, ServeLimits,
};
use sluice_model::declarative::parse_value;
use sluice_model::writes::{EntityWrite, WriteError, Written};
use sluice_model::{Config, PluginRegistry};
use sluice_plugins::Registry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Kong's 413 message when a config does not fit.
pub const TOO_LARGE: &str =
    "Configuration does not fit in LMDB database, consider raising the \"lmdb_map_size\" config for Kong";

/// A node: the live config (None before any load), a load gate (held = a load is running), a size limit.
pub struct TestNode {
    live: Mutex<Option<Arc<Config>>>,
    registry: Registry,
    /// Held while a load runs; a second load finding it held is refused as busy (429).
    pub gate: Arc<tokio::sync::Mutex<()>>,
    /// Loads with more services than this are refused as too large (413).
    max_services: usize,
    loads: AtomicUsize,
    /// DB mode: entity writes reach [`Control::write`], which takes a database's time and counts them.
    db: bool,
    pub writes: Arc<Writes>,
}

/// Entity writes a DB-mode [`TestNode`] ran: how many run now, the most that ran at once, how many ended.
#[derive(Default)]
pub struct Writes {
    running: AtomicUsize,
    pub peak: AtomicUsize,
    pub done: AtomicUsize,
}

impl TestNode {
    pub fn new() -> Arc<TestNode> {
        TestNode::with_limit(usize::MAX)
    }

    pub fn with_limit(max_services: usize) -> Arc<TestNode> {
        Arc::new(TestNode {
            live: Mutex::new(None),
            registry: Registry::builtin(),
            gate: Arc::new(tokio::sync::Mutex::new(())),
            max_services,
            loads: AtomicUsize::new(0),
            db: false,
            writes: Arc::default(),
        })
    }

    /// A node in DB mode whose writes each take 20 ms (a database round trip) and succeed.
    pub fn database() -> Arc<TestNode> {
        let mut node = Arc::try_unwrap(TestNode::new()).ok().expect("fresh node");
        node.db = true;
        Arc::new(node)
    }

    /// A node with `yaml` already loaded.
    pub fn loaded(yaml: &str) -> Arc<TestNode> {
        let node = TestNode::new();
        let doc = sluice_model::declarative::to_document(yaml).expect("test yaml parses");
        let config = parse_value(doc, &node.registry).expect("test config is valid");
        *node.live.lock().expect("lock") = Some(Arc::new(config));
        node
    }
}

impl Control for TestNode {
    fn config(&self) -> Arc<Config> {
        self.live.lock().expect("lock").clone().unwrap_or_default()
    }

    fn config_hash(&self) -> Option<String> {
        self.live
            .lock()
            .expect("lock")
            .as_ref()
            .map(|c| c.hash().to_string())
    }

    fn is_ready(&self) -> bool {
        self.live.lock().expect("lock").is_some()
    }

    fn load(
        &self,
        body: ConfigBody,
        opts: LoadOptions,
    ) -> BoxFuture<Result<LoadOutcome, LoadError>> {
        let doc = match body.document() {
            Ok(doc) => doc,
            Err(e) => return Box::pin(async { Err(e) }),
        };
        let Ok(_running) = self.gate.clone().try_lock_owned() else {
            return Box::pin(async { Err(LoadError::Busy) });
        };
        let result = match parse_value(doc, &self.registry as &dyn PluginRegistry) {
            Err(errors) => Err(LoadError::Invalid(errors)),
            Ok(config) if config.services.len() > self.max_services => {
                Err(LoadError::TooLarge(TOO_LARGE.to_string()))
            }
            Ok(config) => {
                let mut live = self.live.lock().expect("lock");
                let same = live.as_ref().is_some_and(|l| l.hash() == config.hash());
                if opts.check_hash && same {
                    Ok(LoadOutcome::Unchanged)
                } else {
                    let config = Arc::new(config);
                    *live = Some(config.clone());
                    self.loads.fetch_add(1, Ordering::SeqCst);
                    Ok(LoadOutcome::Loaded(config, None))
                }
            }
        };
        Box::pin(async move { result })
    }

    fn registry(&self) -> Option<&dyn PluginRegistry> {
        Some(&self.registry)
    }

    fn db_mode(&self) -> bool {
        self.db
    }

    fn write(&self, write: EntityWrite) -> BoxFuture<Result<Written, WriteError>> {
        let writes = self.writes.clone();
        let now = writes.running.fetch_add(1, Ordering::SeqCst) + 1;
        writes.peak.fetch_max(now, Ordering::SeqCst);
        Box::pin(async move {
            // A database round trip.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            writes.running.fetch_sub(1, Ordering::SeqCst);
            writes.done.fetch_add(1, Ordering::SeqCst);
            Ok(Written {
                status: 201,
                entity: Some(Value::Object(write.body)),
            })
        })
    }

    fn node_info(&self) -> NodeInfo {
        NodeInfo {
            version: "3.9.0".into(),
            sluice_version: "0.1.0".into(),
            hostname: "test-host".into(),
            node_id: uuid::Uuid::from_u128(7),
            plugins_available: self
                .registry
                .names()
                .into_iter()
                .filter_map(|n| self.registry.plugin(n).map(|d| (n.to_string(), d.priority)))
                .collect(),
            configuration: serde_json::json!({ "database": "off", "pg_password": "******" }),
        }
    }

    fn server_status(&self) -> Value {
        serde_json::json!({ "connections_active": 1, "total_requests": 1 })
    }

    fn metrics(&self) -> Option<String> {
        Some(format!(
            "# TYPE test_config_loads counter\ntest_config_loads {}\n",
            self.loads.load(Ordering::SeqCst)
        ))
    }
}

/// Running admin and status servers over one node; dropped → both shut down.
pub struct Servers {
    pub admin: String,
    pub status: String,
    _stop: tokio::sync::watch::Sender<()>,
}

impl Servers {
    pub fn admin_url(&self, path: &str) -> String {
        format!("{}{path}", self.admin)
    }
    pub fn status_url(&self, path: &str) -> String {
        format!("{}{path}", self.status)
    }
}

/// Starts both listeners on 127.0.0.1:0.
pub async fn start(node: Arc<TestNode>) -> Servers {
    start_with(node, ServeLimits::default()).await
}

/// Starts both listeners on 127.0.0.1:0 with `limits`.
pub async fn start_with(node: Arc<TestNode>, limits: ServeLimits) -> Servers {
    let (stop, rx) = tokio::sync::watch::channel(());
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let status = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let urls = (
        format!("http://{}", admin.local_addr().expect("addr")),
        format!("http://{}", status.local_addr().expect("addr")),
    );
    let control: Arc<dyn Control> = node;
    for (listener, is_admin) in [(admin, true), (status, false)] {
        let mut rx = rx.clone();
        let control = control.clone();
        tokio::spawn(async move {
            let shutdown = async move {
                let _ = rx.changed().await;
            };
            if is_admin {
                serve_admin(listener, None, control, limits, shutdown).await
            } else {
                serve_status(listener, None, control, limits, shutdown).await
            }
        });
    }
    Servers {
        admin: urls.0,
        status: urls.1,
        _stop: stop,
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// GET `url` → (status, JSON body or Null), checking the headers every admin response carries.
pub async fn get(url: &str) -> (u16, Value) {
    send(client().get(url)).await
}

/// Sends a request → (status, JSON body or Null), checking the common headers.
pub async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let latency = resp
        .headers()
        .get("x-kong-admin-latency")
        .and_then(|v| v.to_str().ok());
    assert!(
        latency.is_some_and(|v| v.parse::<u64>().is_ok()),
        "X-Kong-Admin-Latency: {latency:?}"
    );
    let body = resp.bytes().await.expect("body");
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// The part of [`sample`] after the services: a plugin on the last service, then everything else.
const SAMPLE_TAIL: &str = r#"  plugins:
  - name: request-termination
    config: {status_code: 418}
consumers:
- username: alice
  custom_id: a-1
  tags: [people]
  keyauth_credentials:
  - key: alice-key
  basicauth_credentials:
  - username: alice-basic
    password: pw
  acls:
  - group: admins
- username: bob
upstreams:
- name: backend
  targets:
  - target: 10.0.0.1:80
  - target: 10.0.0.2:80
    weight: 50
plugins:
- name: key-auth
  instance_name: global-auth
certificates:
- cert: |
    -----BEGIN CERTIFICATE-----
    MIIBhDCCASugAwIBAgIUDg2KDNOH4uoMImf6+wmsbe6u+OEwCgYIKoZIzj0EAwIw
    FzEVMBMGA1UEAwwMZXhhbXBsZS50ZXN0MCAXDTI2MTEyMzA4NDEwNVoYDzIxMjYx
    MDMwMDg0MTA1WjAXMRUwEwYDVQQDDAxleGFtcGxlLnRlc3QwWTATBgcqhkjOPQIB
    BggqhkjOPQMBBwNCAAS32HAUdUV2n5oOURB5KFpZiqkVhKaXDapW0DpNLqT/ZhAK
    wMsfgpbUzVEQ9K8+7QtWdIKT6Cs59kbM6uIraMZBo1MwUTAdBgNVHQ4EFgQUIXRi
    w+K7iIq29d9w4RMulGqPJhIwHwYDVR0jBBgwFoAUIXRiw+K7iIq29d9w4RMulGqP
    JhIwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAn4Y2EWfOkZT92
    wQsPWTzRU4+TmWGaZTHorWbEen487QIgSkyGKdBf+nrwRzpyxteFDHlgnGEzDRAF
    iONiPSwTj7E=
    -----END CERTIFICATE-----
  key: |
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgGFrfHMEbYIknCGte
    1UMzByX171cr24+3Y5Kove+A5UahRANCAAS32HAUdUV2n5oOURB5KFpZiqkVhKaX
    DapW0DpNLqT/ZhAKwMsfgpbUzVEQ9K8+7QtWdIKT6Cs59kbM6uIraMZB
    -----END PRIVATE KEY-----
  snis:
  - name: example.test
"#;

/// A config with `n` services (`s0`.., route `r{i}` each, tags `even`/`odd` and `all`), consumers with
/// credentials, an upstream with targets, plugins and a certificate.
pub fn sample(n: usize) -> String {
    let mut y = String::from("_format_version: \"3.0\"\nservices:\n");
    for i in 0..n {
        let parity = if i % 2 == 0 { "even" } else { "odd" };
        y.push_str(&format!(
            "- name: s{i}\n  url: http://127.0.0.1:9/{i}\n  tags: [{parity}, all]\n  routes:\n  - name: r{i}\n    paths: [/p{i}]\n"
        ));
    }
    y.push_str(SAMPLE_TAIL);
    y
}
