//! `sluice-perf gen-config` writes configs with the expected shape and entity counts, for every
//! case, in YAML and JSON.

use serde_yaml::Value;
use std::process::Command;

fn gen(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-perf"))
        .arg("gen-config")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // JSON is YAML too, so one parser reads both formats.
    serde_yaml::from_slice(&out.stdout).unwrap()
}

fn len(v: &Value) -> usize {
    v.as_sequence().map_or(0, |s| s.len())
}

fn plugin_names(v: &Value) -> Vec<String> {
    v["plugins"].as_sequence().map_or(vec![], |s| {
        s.iter()
            .filter_map(|p| p["name"].as_str().map(String::from))
            .collect()
    })
}

#[test]
fn every_case_has_the_expected_counts() {
    // (args, routes, consumers, global plugins)
    let table: &[(&[&str], usize, usize, &[&str])] = &[
        (&["--case", "no-plugins"], 1, 0, &[]),
        (&["--case", "no-plugins", "--routes", "100"], 100, 0, &[]),
        (
            &["--case", "rate-limiting", "--routes", "3"],
            3,
            0,
            &["rate-limiting"],
        ),
        (
            &["--case", "rl-key-auth"],
            1,
            1,
            &["rate-limiting", "key-auth"],
        ),
        (
            &[
                "--case",
                "rl-key-auth",
                "--routes",
                "100",
                "--consumers",
                "100",
            ],
            100,
            100,
            &["rate-limiting", "key-auth"],
        ),
        (
            &["--case", "rl-basic-auth@100"],
            100,
            100,
            &["rate-limiting", "basic-auth"],
        ),
        (
            &[
                "--case",
                "rl-basic-auth",
                "--routes",
                "10",
                "--consumers",
                "4",
            ],
            10,
            4,
            &["rate-limiting", "basic-auth"],
        ),
    ];
    for (args, routes, consumers, plugins) in table {
        let v = gen(args);
        assert_eq!(v["_format_version"].as_str(), Some("3.0"), "{args:?}");
        let svc = &v["services"][0];
        assert_eq!(svc["url"].as_str(), Some("http://127.0.0.1:9001"));
        assert_eq!(len(&svc["routes"]), *routes, "{args:?}");
        assert_eq!(
            svc["routes"][routes - 1]["paths"][0].as_str(),
            Some(format!("/r{}", routes - 1).as_str())
        );
        assert_eq!(len(&v["consumers"]), *consumers, "{args:?}");
        assert_eq!(plugin_names(&v), *plugins, "{args:?}");
    }
}

#[test]
fn credentials_follow_the_naming_scheme() {
    let ka = gen(&["--case", "rl-key-auth@100"]);
    assert_eq!(ka["consumers"][99]["username"].as_str(), Some("c99"));
    assert_eq!(
        ka["consumers"][99]["keyauth_credentials"][0]["key"].as_str(),
        Some("key-99")
    );
    let ba = gen(&["--case", "rl-basic-auth"]);
    let cred = &ba["consumers"][0]["basicauth_credentials"][0];
    assert_eq!(
        (cred["username"].as_str(), cred["password"].as_str()),
        (Some("c0"), Some("pw-0"))
    );
    let rl = gen(&["--case", "rate-limiting", "--upstream", "10.0.0.1:80"]);
    assert!(rl["plugins"][0]["config"]["second"].as_u64().unwrap() >= 1_000_000_000);
    assert_eq!(
        rl["services"][0]["url"].as_str(),
        Some("http://10.0.0.1:80")
    );
}

#[test]
fn large_case_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.json");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-perf"))
        .args(["gen-config", "--case", "large", "--format", "json", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.len() > 1_000_000,
        "the large config is megabytes, got {} bytes",
        text.len()
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let routes = v["services"][0]["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 10_000);
    let names: Vec<&str> = routes[42]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["key-auth", "request-termination"]);
    let consumers = v["consumers"].as_array().unwrap();
    assert_eq!(consumers.len(), 10_000);
    assert_eq!(
        consumers[9_999]["keyauth_credentials"][0]["key"],
        "key-9999"
    );
}

#[test]
fn bad_cases_fail() {
    for case in ["bogus", "no-plugins@x"] {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice-perf"))
            .args(["gen-config", "--case", case])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{case}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error"),
            "{case}"
        );
    }
}
