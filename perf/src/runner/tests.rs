use super::*;
use crate::driver::Usage;

#[test]
fn durations() {
    let table: &[(&str, Option<f64>)] = &[
        ("10s", Some(10.0)),
        ("500ms", Some(0.5)),
        ("2m", Some(120.0)),
        ("3", Some(3.0)),
        ("x", None),
        ("-1s", None),
    ];
    for &(s, want) in table {
        assert_eq!(parse_duration(s).ok().map(|d| d.as_secs_f64()), want, "{s}");
    }
}

#[test]
fn cpu_per_request_from_usage() {
    let case = Case::parse("no-plugins").unwrap();
    let load = LoadResult {
        requests: 1000,
        ..Default::default()
    };
    let at = |cpu: f64| Usage {
        cpu_s: Some(cpu),
        minor_faults: Some((cpu * 1000.0).round() as u64),
        peak_rss_kib: Some(10),
    };
    let s = sample(&case, "nginx", 50, 1, load, at(1.0), at(1.02));
    assert!((s.cpu_us_per_req.unwrap() - 20.0).abs() < 1e-6);
    assert_eq!(s.faults_per_req, Some(0.02));
    assert_eq!(s.peak_rss_kib, Some(10));
    let none = sample(
        &case,
        "nginx",
        50,
        1,
        LoadResult::default(),
        at(1.0),
        at(2.0),
    );
    assert_eq!(none.cpu_us_per_req, None);
    assert_eq!(none.faults_per_req, None);
}

#[test]
fn slugs_are_file_safe() {
    assert_eq!(slug("bin:/a/b/sluice"), "bin__a_b_sluice");
    assert_eq!(slug("nginx-lua"), "nginx-lua");
}

#[test]
fn writes_yaml_and_json_configs() {
    let dir = tempfile::tempdir().unwrap();
    let small = write_config(
        &Case::parse("rl-key-auth@2").unwrap(),
        "127.0.0.1:1",
        dir.path(),
    )
    .unwrap();
    assert!(small.to_string_lossy().ends_with("rl-key-auth_2.yml"));
    let v: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(small).unwrap()).unwrap();
    assert_eq!(v["services"][0]["url"].as_str(), Some("http://127.0.0.1:1"));
    let large = write_config(&Case::parse("large").unwrap(), "127.0.0.1:1", dir.path()).unwrap();
    assert!(large.to_string_lossy().ends_with(".json"));
}

#[test]
fn repeated_targets_get_distinct_labels() {
    let t = [
        Target::Nginx,
        Target::Bin("/s".into()),
        Target::Nginx,
        Target::Nginx,
    ];
    assert_eq!(labels(t.iter()), ["nginx", "bin:/s", "nginx#2", "nginx#3"]);
}

#[test]
fn mode_names_the_generators_that_ran() {
    let cases =
        |specs: &[&str]| -> Vec<Case> { specs.iter().map(|s| Case::parse(s).unwrap()).collect() };
    assert_eq!(
        mode(None, &cases(&["no-plugins", "rate-limiting"])),
        "max throughput (wrk, closed loop)"
    );
    assert_eq!(
        mode(None, &cases(&["ws-echo", "grpc-unary", "no-plugins"])),
        "max throughput (sluice-perf ws-load, h2load, wrk, closed loop)"
    );
    assert!(mode(Some(100), &cases(&["no-plugins"])).starts_with("constant rate 100/s"));
}
