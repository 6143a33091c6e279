//! An interrupted `sluice-perf run` (SIGTERM here; Ctrl-C is SIGINT to the whole process group) stops
//! the upstream, the target and the load generator it started, and exits with status 130.

use sluice_perf::interrupt::alive;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Pids whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn an_interrupted_run_stops_everything_it_started() {
    let have =
        |p: &str| Path::new("/usr/sbin").join(p).exists() || Path::new("/usr/bin").join(p).exists();
    if !have("nginx") || !have("wrk") {
        eprintln!("skipped: needs nginx and wrk (scripts/test.sh installs them)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_sluice-perf"))
        .args([
            "run",
            "--case",
            "no-plugins",
            "--target",
            "nginx",
            "--reps",
            "1",
            "--http",
        ])
        .args([
            "--duration",
            "60s",
            "--warmup",
            "1s",
            "--connections",
            "2",
            "--out",
        ])
        .arg(out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the upstream, nginx and wrk all run (three children at once).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut started = Vec::new();
    while Instant::now() < deadline {
        for pid in children(run.id()) {
            if !started.contains(&pid) {
                started.push(pid);
            }
        }
        if started.iter().filter(|p| alive(**p)).count() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        started.iter().filter(|p| alive(**p)).count() >= 3,
        "upstream, nginx and wrk never ran together: {started:?}"
    );
    Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status()
        .unwrap();
    let status = run.wait().unwrap();
    let stderr = std::io::read_to_string(run.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let left: Vec<u32> = started.into_iter().filter(|p| alive(*p)).collect();
    assert!(
        left.is_empty(),
        "still running after the interrupt: {left:?}"
    );
}
