//! Keeping a local PostgreSQL server off the measured node's CPUs for the length of a `sluice-perf db` run.
//!
//! The figures are about node B's own throughput. In a deployment the database (like node A) is another
//! host; on one machine an unpinned server runs wherever the scheduler puts it, often on node B's CPU, so a
//! write's SQL work (the transaction, the trigger, `NOTIFY`, B's reads) was charged to B's throughput.
//! [`Pinned::to`] moves every `postgres` process, the postmaster included (so the backends it forks later
//! inherit it), onto the load CPUs with `taskset`, and puts them back on the postmaster's CPUs when the
//! guard drops (or the run is interrupted). Its CPU is still measured and reported (it now competes with
//! the load generator instead).

use crate::procfs;
use crate::progress;
use anyhow::{bail, Context, Result};
use std::process::Command;

/// The server's processes moved to other CPUs until this drops (or the run is interrupted).
pub struct Pinned {
    /// The CPUs the postmaster had before (restored on every server process at the end).
    before: String,
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

impl Pinned {
    /// Moves the server running on `host` onto `cpus`, when it runs on this machine; None when it does
    /// not (a remote server is already off node B's CPUs) or has no process here.
    pub fn to(host: &str, cpus: &str) -> Result<Option<Pinned>> {
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
        progress(format!(
            "PostgreSQL ({moved} processes) moved from CPUs {before} to {cpus} for the run"
        ));
        // On Ctrl-C, the same restore as `drop`, from the interrupt handler.
        let restore =
            format!("for p in $(pgrep -x postgres); do taskset -a -p -c {before} $p; done");
        let argv = ["sh", "-c", &restore].map(String::from);
        Ok(Some(Pinned {
            before,
            _held: crate::interrupt::hold_command(&argv),
        }))
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for pid in server_pids() {
            set_cpus(pid, &self.before);
        }
        progress(format!("PostgreSQL back on CPUs {}", self.before));
    }
}
