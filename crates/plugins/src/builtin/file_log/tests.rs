//! file-log's schema, lines written off-thread, and `reopen`.

use crate::testing::{compile, request};
use crate::{LogRecord, Registry, RequestCtx};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn config(path: &Path, reopen: bool) -> String {
    format!(
        r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:9
  routes:
  - name: r
    paths: [/]
    plugins:
    - name: file-log
      config: {{path: "{}", reopen: {reopen}}}
"#,
        path.display()
    )
}

fn record() -> LogRecord {
    LogRecord {
        status: 200,
        response_headers: Default::default(),
        request_bytes: 0,
        response_bytes: 2,
        kong_latency_ms: 0,
        upstream_latency_ms: Some(1),
        request_latency_ms: 1,
        tries: Default::default(),
        upstream_uri: None,
        source: "upstream",
    }
}

fn lines(path: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn validates_the_path_like_kong() {
    let registry = Registry::builtin();
    for bad in ["a*b", "x&y", "50%", " lead", "trail ", "x", "`cmd`"] {
        let yaml = config(Path::new(bad), false);
        let err = sluice_model::declarative::parse(&yaml, &registry).expect_err(bad);
        assert!(format!("{err:?}").contains("not a valid filename"), "{bad}");
    }
    let yaml =
        config(Path::new("/tmp/x"), false).replace("path:", "custom_fields_by_lua: {a: x}, path:");
    let err = sluice_model::declarative::parse(&yaml, &registry).unwrap_err();
    assert!(format!("{err:?}").contains("does not run Lua"));
}

#[test]
fn appends_one_json_line_per_request_and_reopens_per_write_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log");
    let (config, compiled) = compile(&config(&path, true));
    let chain = compiled.route_chain(0);
    assert!(chain.has_log());
    let log = |uri: &str| {
        let mut ctx = RequestCtx::detached(request("GET", uri, &[]), compiled.credentials());
        ctx.route = config.routes.first();
        chain.log(&ctx, &record());
    };
    log("/one");
    log("/two");
    let written = lines(&path, 2);
    let uris: Vec<&str> = written
        .iter()
        .map(|v| v["request"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["/one", "/two"]);
    assert_eq!(written[0]["route"]["name"], "r");

    // reopen: true needs no signal: after a rename the next write creates the file again.
    std::fs::rename(&path, dir.path().join("access.log.1")).unwrap();
    log("/three");
    let written = lines(&path, 1);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["request"]["uri"], "/three");
}
