//! Reading `/proc`: CPU time, page faults, peak RSS and allowed CPUs of a target's process tree.
//!
//! A target may be several processes (nginx's master and workers), so figures are taken over the
//! whole tree below the started pid.

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// The pid and every descendant, found through each process's parent pid.
pub fn tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Some(ppid) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| stat_field(&s, 4))
            {
                parents.push((pid, ppid as u32));
            }
        }
    }
    let mut found: BTreeSet<u32> = BTreeSet::from([root]);
    loop {
        let before = found.len();
        for &(pid, ppid) in &parents {
            if found.contains(&ppid) {
                found.insert(pid);
            }
        }
        if found.len() == before {
            return found.into_iter().collect();
        }
    }
}

/// Field `n` (1-based, as in `man proc`) of a `/proc/<pid>/stat` line, for numeric fields after
/// the command name.
pub fn stat_field(stat: &str, n: usize) -> Option<u64> {
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

/// User + system CPU seconds of one process (fields 14 and 15).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some((stat_field(&stat, 14)? + stat_field(&stat, 15)?) as f64 / TICKS_PER_SEC)
}

/// User + system CPU seconds of the threads of process `pid` whose name starts with `prefix` (a
/// gateway's `sluice-worker-N`: what its proxy workers spent, apart from its other threads). Threads
/// that have ended are not counted: take the rest as the process's total less these.
pub fn threads_cpu_seconds(pid: u32, prefix: &str) -> Option<f64> {
    let mut total = 0.0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let name = stat.split_once('(').and_then(|(_, r)| r.rsplit_once(')'));
        if name.is_some_and(|(name, _)| name.starts_with(prefix)) {
            total += (stat_field(&stat, 14)? + stat_field(&stat, 15)?) as f64 / TICKS_PER_SEC;
        }
    }
    Some(total)
}

/// Minor page faults of one process (field 10): pages the kernel mapped in without I/O. A gateway
/// whose allocator hands pages back and takes them again between requests shows it here first.
pub fn minor_faults(pid: u32) -> Option<u64> {
    stat_field(
        &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
        10,
    )
}

/// `per_process` summed over the process tree of `root`; None when `root` itself can't be read.
fn tree_sum<T: std::iter::Sum<T>>(root: u32, per_process: fn(u32) -> Option<T>) -> Option<T> {
    per_process(root)?;
    Some(tree(root).into_iter().filter_map(per_process).sum())
}

/// CPU seconds summed over the process tree of `root`.
pub fn tree_cpu_seconds(root: u32) -> Option<f64> {
    tree_sum(root, cpu_seconds)
}

/// Minor page faults summed over the process tree of `root`.
pub fn tree_minor_faults(root: u32) -> Option<u64> {
    tree_sum(root, minor_faults)
}

/// A `kB` field of `/proc/<pid>/status`, e.g. `VmHWM`.
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...) summed over the process tree of `root`; None
/// when no process of it could be read.
pub fn tree_status_kib(root: u32, field: &str) -> Option<u64> {
    let values: Vec<u64> = tree(root)
        .into_iter()
        .filter_map(|p| {
            status_kib(
                &std::fs::read_to_string(format!("/proc/{p}/status")).ok()?,
                field,
            )
        })
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// Peak RSS (VmHWM) summed over the process tree of `root`, KiB.
pub fn tree_peak_rss_kib(root: u32) -> Option<u64> {
    tree_status_kib(root, "VmHWM")
}

/// The `Cpus_allowed_list` of a process, e.g. `0` or `0-1`.
pub fn cpus_allowed(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Expands a CPU list (`0,2-3`) into CPU numbers; `None` if malformed.
pub fn parse_cpu_list(list: &str) -> Option<BTreeSet<u32>> {
    let mut out = BTreeSet::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => {
                out.insert(part.parse().ok()?);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Checks that `pid` may run only on `wanted`; returns a warning to print when it may not.
pub fn check_pinning(pid: u32, what: &str, wanted: &str) -> Option<String> {
    let allowed = cpus_allowed(pid)?;
    if parse_cpu_list(&allowed) == parse_cpu_list(wanted) {
        None
    } else {
        Some(format!("{what} (pid {pid}) asked for CPUs {wanted} but may run on {allowed}: pinning not granted"))
    }
}
