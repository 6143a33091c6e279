//! Keeping a local PostgreSQL server off the measured node's CPUs, and behind the load generator, for the
//! length of a `sluice-perf db` run.
//!
//! The figures are about node B's own throughput. In a deployment the database (like node A) is another
//! host; on one machine an unpinned server runs wherever the scheduler puts it, often on node B's CPU, so a
//! write's SQL work (the transaction, the trigger, `NOTIFY`, B's reads) was charged to B's throughput.
//! [`Pinned::to`] moves every `postgres` process, the postmaster included (so the backends it forks later
//! inherit it), onto the load CPUs with `taskset`, and lowers their priority (`renice`, inherited the same
//! way): on the load CPUs it would otherwise take its share from the load generator and the upstream,
//! and node B, waiting for them, would serve less for a reason that is not its own (see `super`). Both
//! are put back (the postmaster's CPUs, nice 0) when the guard drops or the run is interrupted. Its CPU is
//! still measured and reported.

use crate::procfs;
use crate::progress;
use anyhow::{bail, Context, Result};
use std::process::Command;

/// The server's processes moved to other CPUs (and reniced) until this drops (or the run is interrupted).
pub struct Pinned {
    /// The CPUs the postmaster had before (restored on every server process at the end).
    before: String,
    /// Whether the processes were reniced (put back to nice 0 at the end).
    reniced: bool,
    _held: crate::interrupt::Held,
}

/// The pids of this machine's PostgreSQL server processes (`comm` = `postgres`).
pub fn server_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .collect()
}

/// Sets the CPUs of `pid` and all its threads; false when the process is gone or refused.
fn set_cpus(pid: u32, cpus: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Sets the nice value of every thread of `pid` (a running sluice node's threads do not inherit a new
/// nice value of its main thread); false when one is gone or refused.
pub fn set_nice_all(pid: u32, nice: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let tids: Vec<u32> = tasks
        .flatten()
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
        .collect();
    // Every thread is reniced, even after one is refused.
    let refused = tids.into_iter().filter(|&tid| !set_nice(tid, nice)).count();
    refused == 0
}

/// Sets the nice value of `pid` (a PostgreSQL process is one thread); false when gone or refused.
fn set_nice(pid: u32, nice: i32) -> bool {
    Command::new("renice")
        .args(["--priority", &nice.to_string(), "-p", &pid.to_string()])
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Pinned {
    /// Moves the server running on `host` onto `cpus` at nice `nice` (0: left as it is), when it runs on
    /// this machine; None when it does not (a remote server is already off node B's CPUs) or has no
    /// process here.
    pub fn to(host: &str, cpus: &str, nice: i32) -> Result<Option<Pinned>> {
        if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
            return Ok(None);
        }
        let pids = server_pids();
        // The postmaster is the server process whose parent is not one.
        let Some(&postmaster) = pids.iter().find(|&&p| {
            let parent = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| procfs::stat_field(&s, 4));
            parent.is_none_or(|pp| !pids.contains(&(pp as u32)))
        }) else {
            return Ok(None);
        };
        let before = procfs::cpus_allowed(postmaster).context("reading the postmaster's CPUs")?;
        if !set_cpus(postmaster, cpus) {
            bail!("could not move the PostgreSQL postmaster (pid {postmaster}) to CPUs {cpus} with taskset");
        }
        let moved = pids.iter().filter(|&&p| set_cpus(p, cpus)).count();
        let reniced = nice != 0;
        if reniced && !pids.iter().all(|&p| set_nice(p, nice)) {
            progress(format!(
                "warning: not every PostgreSQL process took nice {nice}"
            ));
        }
        progress(format!(
            "PostgreSQL ({moved} processes) moved from CPUs {before} to {cpus}, nice {nice}, for the run"
        ));
        // On Ctrl-C, the same restore as `drop` (nice 0 too: `renice` may lower it later), from the
        // interrupt handler.
        let restore = format!(
            "for p in $(pgrep -x postgres); do taskset -a -p -c {before} $p; renice --priority 0 -p $p; done"
        );
        let argv = ["sh", "-c", &restore].map(String::from);
        Ok(Some(Pinned {
            before,
            reniced,
            _held: crate::interrupt::hold_command(&argv),
        }))
    }
}

impl Pinned {
    /// Sets the nice value of every server process (and so of the backends the postmaster forks later),
    /// for a part of the run: `sluice-perf cluster` lowers a control plane's database with the control
    /// plane while the data plane's RPS is measured. Put back to 0 when the guard drops.
    pub fn renice(&mut self, nice: i32) {
        let refused = server_pids()
            .into_iter()
            .filter(|&p| !set_nice(p, nice))
            .count();
        if refused > 0 {
            progress(format!(
                "warning: {refused} PostgreSQL processes did not take nice {nice}"
            ));
        }
        self.reniced |= nice != 0;
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for pid in server_pids() {
            set_cpus(pid, &self.before);
            if self.reniced {
                set_nice(pid, 0);
            }
        }
        progress(format!("PostgreSQL back on CPUs {}", self.before));
    }
}
