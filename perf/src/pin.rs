//! Keeping a local server the gateway talks to (PostgreSQL, Redis) off the measured gateway's CPUs for the
//! length of a run.
//!
//! The figures are about one gateway's own throughput. In a deployment the database or Redis is another
//! host; on one machine an unpinned server runs wherever the scheduler puts it, often on the gateway's CPU,
//! so its work for the gateway (a write's SQL, the trigger, `NOTIFY`; a rate limit's script on Redis) was
//! charged to the gateway's throughput. [`Pinned::to`] moves every process of the server, the parent
//! included (so the children it forks later inherit it), onto the load CPUs with `taskset`, and may
//! lower their priority (`renice`, inherited the same way): `sluice-perf db` does for PostgreSQL, which
//! on the load CPUs would otherwise take its share from the load generator and the upstream, so that the
//! node, waiting for them, would serve less for a reason that is not its own. Redis is left at nice 0:
//! it answers on the request path of the `rl-redis` cases. Both are put back (the parent's CPUs, nice 0)
//! when the guard drops or the run is interrupted. Their CPU is still measured where a command reports it.

use crate::procfs;
use crate::progress;
use anyhow::{bail, Context, Result};
use std::process::Command;

/// A kind of server, known by its processes' name.
pub struct Server {
    /// The processes' `comm`.
    pub comm: &'static str,
    /// The name in progress lines.
    pub name: &'static str,
}

/// PostgreSQL: a postmaster and the backends it forks.
pub const POSTGRES: Server = Server {
    comm: "postgres",
    name: "PostgreSQL",
};

/// Redis: one `redis-server` process (its threads move with it).
pub const REDIS: Server = Server {
    comm: "redis-server",
    name: "Redis",
};

/// The server's processes moved to other CPUs (and reniced) until this drops (or the run is interrupted).
pub struct Pinned {
    server: &'static Server,
    /// The CPUs the parent process had before (restored on every server process at the end).
    before: String,
    /// Whether the processes were reniced (put back to nice 0 at the end).
    reniced: bool,
    _held: crate::interrupt::Held,
}

/// The pids of this machine's processes of `server` (by `comm`).
pub fn server_pids(server: &Server) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == server.comm)
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
    /// Moves `server` running on `host` onto `cpus` at nice `nice` (0: left as it is), when it runs on
    /// this machine; None when it does not (a remote server is already off the gateway's CPUs) or has no
    /// process here.
    pub fn to(
        server: &'static Server,
        host: &str,
        cpus: &str,
        nice: i32,
    ) -> Result<Option<Pinned>> {
        if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
            return Ok(None);
        }
        let name = server.name;
        let pids = server_pids(server);
        // The parent (PostgreSQL's postmaster) is the server process whose parent is not one.
        let Some(&parent) = pids.iter().find(|&&p| {
            let parent = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| procfs::stat_field(&s, 4));
            parent.is_none_or(|pp| !pids.contains(&(pp as u32)))
        }) else {
            return Ok(None);
        };
        let before =
            procfs::cpus_allowed(parent).with_context(|| format!("reading {name}'s CPUs"))?;
        if !set_cpus(parent, cpus) {
            bail!("could not move {name} (pid {parent}) to CPUs {cpus} with taskset");
        }
        let moved = pids.iter().filter(|&&p| set_cpus(p, cpus)).count();
        let reniced = nice != 0;
        if reniced && !pids.iter().all(|&p| set_nice(p, nice)) {
            progress(format!(
                "warning: not every {name} process took nice {nice}"
            ));
        }
        progress(format!(
            "{name} ({moved} processes) moved from CPUs {before} to {cpus}, nice {nice}, for the run"
        ));
        // On Ctrl-C, the same restore as `drop` (nice 0 too: `renice` may lower it later), from the
        // interrupt handler.
        let restore = format!(
            "for p in $(pgrep -x {}); do taskset -a -p -c {before} $p; renice --priority 0 -p $p; done",
            server.comm
        );
        let argv = ["sh", "-c", &restore].map(String::from);
        Ok(Some(Pinned {
            server,
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
        let refused = server_pids(self.server)
            .into_iter()
            .filter(|&p| !set_nice(p, nice))
            .count();
        if refused > 0 {
            progress(format!(
                "warning: {refused} {} processes did not take nice {nice}",
                self.server.name
            ));
        }
        self.reniced |= nice != 0;
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        for pid in server_pids(self.server) {
            set_cpus(pid, &self.before);
            if self.reniced {
                set_nice(pid, 0);
            }
        }
        progress(format!("{} back on CPUs {}", self.server.name, self.before));
    }
}
