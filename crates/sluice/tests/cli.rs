//! `sluice config check` and `sluice version`, run as a user would.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn version_prints_the_crate_version() {
    let out = sluice().arg("version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("sluice {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn config_check_accepts_a_valid_file_with_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "ok.yml",
        "_format_version: \"3.0\"\nservices:\n- name: a\n  url: http://127.0.0.1:9/x\n  routes:\n  - name: r\n    paths: [/a]\n",
    );
    let out = sluice()
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 1, "one-line summary: {stdout}");
    assert!(stdout.contains("1 service"), "{stdout}");
    assert!(stdout.contains("1 route"), "{stdout}");
}

#[test]
fn config_check_lists_every_error_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "bad.yml",
        "_format_version: \"3.0\"\nservices:\n- name: a\n  routes:\n  - name: r1\n    paths: [nope]\n- name: b\n  host: x\n  port: 99999\n  bogus: 1\nplugins:\n- name: no-such-plugin\n",
    );
    let out = sluice()
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for needle in ["host", "paths.1", "port", "bogus", "no-such-plugin"] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
}

#[test]
fn config_check_rejects_unparsable_and_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "garbage.yml", "services: [unclosed\n");
    let out = sluice()
        .args(["config", "check"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = sluice()
        .args(["config", "check", "/nonexistent/kong.yml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/kong.yml"));
}

#[test]
fn every_example_config_checks() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yml" | "yaml" | "json")
        ) {
            continue;
        }
        let out = sluice()
            .args(["config", "check"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 2, "expected example configs in {dir}");
}

/// The README's first command serves `examples/kong.yml`; its `/hello` route answers 200 through the proxy
/// with nothing else running (the node's own status listener is its upstream; here on the test's port).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_answers_200_on_the_first_request() {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/kong.yml"
    ))
    .unwrap();
    assert!(
        example.contains("http://127.0.0.1:8007/status"),
        "the example's hello upstream moved"
    );
    let gw = sluice_testkit::Gateway::builder(BIN)
        .config_yaml(&example)
        .start();
    let status = gw.status_url("");
    let local = example.replace("http://127.0.0.1:8007", status.trim_end_matches('/'));
    let loaded = sluice_testkit::client()
        .post(gw.admin_url("/config"))
        .header("content-type", "application/x-yaml")
        .body(local)
        .send()
        .await
        .unwrap();
    assert_eq!(loaded.status(), 201);
    let resp = sluice_testkit::client()
        .get(gw.proxy_url("/hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// Deep YAML flow nesting is refused at once with its line (issue 17 defect 7): libyaml took 6.6 s on
/// 80 KB of it and never finished 400 KB, and `config check` hung.
#[test]
fn config_check_refuses_deep_yaml_nesting_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.yml");
    std::fs::write(
        &file,
        format!("_format_version: \"3.0\"\nx: {}", "{a: ".repeat(100_000)),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["config", "check"])
        .arg(&file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("config check still running after 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("line 2: flow collections nested deeper than 100"),
        "{err}"
    );
}

/// `config check` refuses what would take unbounded depth or memory, with the reason (issue 17 defect 7):
/// deep JSON, deep block YAML, aliases that expand a small file into gigabytes, and a long run of tiny
/// values.
#[test]
fn config_check_refuses_deep_and_expanding_documents() {
    let dir = tempfile::tempdir().unwrap();
    let mut laughs = String::from(
        "_format_version: \"3.0\"\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..10 {
        let aliases = format!("*l{}, ", i - 1).repeat(9);
        laughs.push_str(&format!(
            "l{i}: &l{i} [{}]\n",
            aliases.trim_end_matches(", ")
        ));
    }
    let cases = [
        (
            "deep.json",
            format!(
                "{{\"_format_version\": \"3.0\", \"x\": {}{}}}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
            "nested deeper than 100",
        ),
        (
            "deep.yml",
            (0..150).map(|i| format!("{}a:\n", " ".repeat(i))).collect(),
            "nested deeper than 100",
        ),
        ("laughs.yml", laughs, "too much memory"),
        (
            "zeros.json",
            format!(
                "{{\"_format_version\": \"3.0\", \"x\": [{}0]}}",
                "0,".repeat(2_000_000)
            ),
            "too much memory",
        ),
    ];
    for (name, text, reason) in cases {
        let file = write(&dir, name, &text);
        let out = sluice()
            .args(["config", "check"])
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains("failed parsing declarative configuration") && stderr.contains(reason),
            "{name}: {stderr}"
        );
    }
}
