//! Background work that waits for idle CPU: a thread of its own at Linux's `SCHED_IDLE` policy, which the
//! kernel runs when nothing else on that CPU wants to run (against busy threads it gets a weight of 3 to
//! their 1,024: ~0.3% of the CPU).
//!
//! For work whose result nothing waits on, such as a data plane's check that the config it built from
//! deltas is the control plane's ([`crate::hybrid::dp_delta`]). A node whose workers keep its CPUs busy
//! then serves requests with that CPU and checks later (seconds later at full load), instead of
//! taking ~10 ms from the requests every second. Work that something waits on (applying a change) must
//! not go here: at full load it would starve.

use std::io;

/// Runs `work` on a new thread named `name` at the idle policy; its result when it is done. If the
/// policy cannot be set (a kernel or sandbox that refuses it), the work runs at normal priority.
pub async fn run<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            if let Err(e) = lower_to_idle() {
                tracing::debug!(error = %e, "idle scheduling policy refused; running at normal priority");
            }
            let _ = tx.send(work());
        })?;
    rx.await
        .map_err(|_| io::Error::other("the idle thread ended without a result"))
}

/// Puts the calling thread at `SCHED_IDLE`.
fn lower_to_idle() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    #[allow(unsafe_code)]
    // SAFETY: a plain system call on the calling thread (pid 0) with a parameter that lives across the
    // call; it reads `param` and touches no memory of ours.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    /// The scheduling policy of the calling thread, from `/proc/thread-self/stat` (field 41).
    fn policy() -> u32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command name, which is in parentheses and may hold spaces.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(41 - 3).unwrap().parse().unwrap()
    }

    #[tokio::test]
    async fn the_work_runs_at_the_idle_policy_and_its_caller_does_not() {
        let inside = super::run("sluice-test-idle", policy).await.unwrap();
        assert_eq!(inside, libc::SCHED_IDLE as u32);
        assert_eq!(policy(), libc::SCHED_OTHER as u32);
    }
}
