//! Cleaning up when `sluice-perf` is interrupted (Ctrl-C, SIGTERM, SIGHUP): the processes it started (the
//! upstream, gateways, nginx) are stopped and the network namespaces it made are deleted before it exits
//! with status 130, as they are on a normal end, where dropping their owners does the same.
//!
//! Owners register what they hold with [`hold_process`] / [`hold_namespaces`] / [`hold_command`] and keep the returned
//! [`Held`] beside it; dropping it unregisters. [`install`] starts the thread that waits for the signals.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

enum Resource {
    Process(u32),
    /// Namespaces and the veth end in this namespace.
    Namespaces {
        names: Vec<String>,
        root_link: String,
    },
    /// A command that undoes something (e.g. drops a database), run after the processes stopped.
    Command(Vec<String>),
}

static HELD: Mutex<Vec<(u64, Resource)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// True once a signal arrived: the run is being torn down, and the signal thread will exit the process.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A registration; dropping it forgets the resource (its owner cleaned it up).
pub struct Held(u64);

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(id, _)| *id != self.0);
    }
}

fn hold(r: Resource) -> Held {
    if let (true, Resource::Process(pid)) = (interrupted(), &r) {
        // Started while the run is torn down: stop it at once.
        signal(&[*pid], "-KILL");
    }
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push((id, r));
    Held(id)
}

/// Registers a child process to stop on interruption.
pub fn hold_process(pid: u32) -> Held {
    hold(Resource::Process(pid))
}

/// Registers network namespaces (and the veth end `root_link` in this namespace) to delete on interruption.
pub fn hold_namespaces(names: &[&str], root_link: &str) -> Held {
    hold(Resource::Namespaces {
        names: names.iter().map(|n| n.to_string()).collect(),
        root_link: root_link.to_string(),
    })
}

/// Registers a clean-up command (program and arguments) to run on interruption, after the held
/// processes are stopped.
pub fn hold_command(argv: &[String]) -> Held {
    hold(Resource::Command(argv.to_vec()))
}

/// Stops every registered process (SIGTERM, SIGKILL after 3 s) and deletes every registered namespace;
/// returns how many resources there were.
pub fn clean_up() -> usize {
    let taken: Vec<(u64, Resource)> =
        std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
    let pids: Vec<u32> = taken
        .iter()
        .filter_map(|(_, r)| match r {
            Resource::Process(pid) => Some(*pid),
            Resource::Namespaces { .. } | Resource::Command(_) => None,
        })
        .collect();
    signal(&pids, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(3);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&pids, "-KILL");
    for (_, r) in &taken {
        match r {
            Resource::Namespaces { names, root_link } => {
                let _ = Command::new("ip").args(["link", "del", root_link]).output();
                for ns in names {
                    let _ = Command::new("ip").args(["netns", "del", ns]).output();
                }
            }
            Resource::Command(argv) => {
                if let Some((program, args)) = argv.split_first() {
                    let _ = Command::new(program).args(args).output();
                }
            }
            Resource::Process(_) => {}
        }
    }
    taken.len()
}

fn signal(pids: &[u32], sig: &str) {
    let live: Vec<String> = pids
        .iter()
        .filter(|p| alive(**p))
        .map(u32::to_string)
        .collect();
    if !live.is_empty() {
        let _ = Command::new("kill").arg(sig).args(&live).output();
    }
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Starts the thread that waits for SIGINT, SIGTERM or SIGHUP, cleans up and exits with 130.
pub fn install() {
    let waiting = std::thread::Builder::new()
        .name("sluice-perf-signals".into())
        .spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                    signal(SignalKind::hangup()),
                ) else {
                    return;
                };
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
                INTERRUPTED.store(true, Ordering::SeqCst);
                eprintln!("[sluice-perf] interrupted: stopping what this run started");
                let n = clean_up();
                eprintln!("[sluice-perf] cleaned up {n} process(es)/namespace set(s)");
                std::process::exit(130);
            });
        });
    if let Err(e) = waiting {
        eprintln!("sluice-perf: cannot watch for Ctrl-C ({e}); an interrupted run may leave processes behind");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_up_stops_held_processes_and_forgets_dropped_ones() {
        let mut kept = Command::new("sleep").arg("30").spawn().unwrap();
        let mut released = Command::new("sleep").arg("30").spawn().unwrap();
        let _kept_held = hold_process(kept.id());
        drop(hold_process(released.id()));
        assert_eq!(clean_up(), 1, "only the process still held");
        let status = kept.wait().unwrap();
        assert!(!status.success(), "stopped by a signal: {status:?}");
        assert!(
            released.try_wait().unwrap().is_none(),
            "a released process is left alone"
        );
        released.kill().unwrap();
        released.wait().unwrap();
    }
}
