//! `sluice-perf gen-config` writes configs the gateway accepts, with the expected entity counts.

use std::process::Command;

fn gen(case: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-perf"))
        .args(["gen-config", "--case", case])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn count(v: &serde_json::Value, key: &str) -> usize {
    v[key].as_array().map_or(0, |a| a.len())
}

#[test]
fn every_case_has_the_expected_shape() {
    let plain = gen("no-plugins@100");
    assert_eq!(
        plain["services"][0]["routes"].as_array().unwrap().len(),
        100
    );
    assert_eq!(
        (count(&plain, "plugins"), count(&plain, "consumers")),
        (0, 0)
    );
    let rl = gen("rate-limiting");
    assert_eq!(rl["plugins"][0]["name"], "rate-limiting");
    let ka = gen("rl-key-auth@100");
    assert_eq!(count(&ka, "consumers"), 100);
    assert_eq!(
        ka["consumers"][99]["keyauth_credentials"][0]["key"],
        "key-99"
    );
    let ba = gen("rl-basic-auth@1");
    assert_eq!(
        ba["consumers"][0]["basicauth_credentials"][0]["password"],
        "pw-0"
    );
    let large = gen("large");
    assert_eq!(
        large["services"][0]["routes"].as_array().unwrap().len(),
        10_000
    );
    assert_eq!(
        large["services"][0]["routes"][0]["plugins"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(count(&large, "consumers"), 10_000);
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-perf"))
        .args(["gen-config", "--case", "bogus"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
