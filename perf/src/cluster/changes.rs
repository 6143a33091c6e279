//! The one-route changes of `sluice-perf cluster`, streamed to the control plane while one or more data
//! planes follow: route i gets a new path ([`Writes::change`]: the whole document posted, or one Admin
//! write); from the reply (the CP has committed it) until every DP routes the new path. The CP's, the
//! first DP's (and PostgreSQL's) CPU over the stream give the CPU per change; run with 1 and then 3 DPs, the CP's figures
//! separate its fixed cost per change from its cost per DP. And the DP's proxy RPS while a change comes
//! every 100 ms, against its steady RPS.

use super::cp::Writes;
use super::{cpu, Relay};
use crate::db::http;
use crate::db::measure::{load_while, per_cpu_ratio, postgres_cpu, workers_cpu};
use crate::driver::{local::Local, Driver};
use crate::loadgen::LoadSpec;
use crate::results::LoadResult;
use crate::target::process::Running;
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often a DP is asked whether it routes a change yet.
const PROBE_EVERY: Duration = Duration::from_millis(1);

/// What a stream of changes measured.
pub struct Streamed {
    /// CP commit → every DP routes the change, ms, per change.
    pub latencies: Vec<f64>,
    /// Bytes the relay passed CP → DPs, per change.
    pub bytes: Vec<f64>,
    /// CPU per change, ms: the CP's, and the first DP's.
    pub cp_ms: f64,
    pub dp_ms: f64,
    /// `dp_ms` less its proxy workers' CPU: the apply (the delta read, patch, compile, store) and the
    /// hash check. The workers' part is mostly this tool's probes, a connection each every 1 ms until
    /// the DP routes the change (`probes_per_change`), and on a VM each one wakes an idle CPU.
    pub dp_off_workers_ms: f64,
    pub probes_per_change: f64,
    /// The CPU of every PostgreSQL process on the machine per change, ms (a CP's database; other users'
    /// work too).
    pub pg_ms: f64,
}

/// Makes the changes numbered `numbers` on the CP at `admin` (pid `cp`) and waits for each to reach
/// every DP in `dps`, which connect through `relay`.
pub fn stream(
    writes: &mut Writes,
    admin: SocketAddr,
    cp: u32,
    dps: &[&Running],
    relay: &Relay,
    numbers: Range<usize>,
) -> Result<Streamed> {
    let count = numbers.len().max(1) as f64;
    let (mut latencies, mut bytes) = (Vec::new(), Vec::new());
    let (cp_cpu, dp_cpu, pg_cpu) = (cpu(cp), cpu(dps[0].pid()), postgres_cpu());
    let (dp_workers, mut probes) = (workers_cpu(dps[0].pid()), 0);
    for n in numbers {
        let before = relay.to_dp.load(Ordering::Relaxed);
        let path = writes.change(admin, n)?;
        let committed = Instant::now();
        for (k, dp) in dps.iter().enumerate() {
            let routed = http::until_routed(
                dp.proxy,
                &path,
                committed,
                PROBE_EVERY,
                Duration::from_secs(10),
            )
            .with_context(|| {
                format!(
                    "a data plane did not route {path} within 10 s; see {}",
                    dp.log.display()
                )
            })?;
            if k == 0 {
                probes += routed.probes;
            }
        }
        latencies.push(committed.elapsed().as_secs_f64() * 1e3);
        // The DPs' pings after applying get their pongs: wait for them, so each change is counted whole.
        std::thread::sleep(Duration::from_millis(50));
        bytes.push((relay.to_dp.load(Ordering::Relaxed) - before) as f64);
    }
    let dp_spent = cpu(dps[0].pid()) - dp_cpu;
    let dp_workers = workers_cpu(dps[0].pid()) - dp_workers;
    Ok(Streamed {
        latencies,
        bytes,
        cp_ms: (cpu(cp) - cp_cpu) / count * 1e3,
        dp_ms: dp_spent / count * 1e3,
        dp_off_workers_ms: (dp_spent - dp_workers).max(0.0) / count * 1e3,
        probes_per_change: probes as f64 / count,
        pg_ms: (postgres_cpu() - pg_cpu).max(0.0) / count * 1e3,
    })
}

/// The DP's proxy load, steady and then with a change made on the CP every 100 ms (changes numbered
/// from `first`), in `reps` interleaved pairs so that drift on a shared machine hits both sides.
pub struct Loaded {
    /// Each pair's steady and changing runs.
    pub steady: Vec<LoadResult>,
    pub changing: Vec<LoadResult>,
    /// Changes posted over all pairs.
    pub posted: usize,
    /// The DP's requests per CPU-second with changes ÷ steady, over all pairs
    /// ([`crate::db::measure::per_cpu_ratio`]).
    pub per_cpu: f64,
}

impl Loaded {
    /// Each pair's RPS with changes ÷ steady.
    pub fn ratios(&self) -> Vec<f64> {
        self.steady
            .iter()
            .zip(&self.changing)
            .map(|(s, c)| c.rps / s.rps.max(1.0))
            .collect()
    }
}

/// Runs `reps` pairs (see [`Loaded`]): the changing halves make changes through `writes` on the CP at
/// its admin address; the steady halves make the same through `decoy`, when given (a CP the DP does not
/// follow), so that both halves share the machine with the same CP work.
pub fn load_while_changing(
    driver: &mut Local,
    dp: &Running,
    spec: &LoadSpec,
    (writes, admin): (&mut Writes, SocketAddr),
    mut decoy: Option<(&mut Writes, SocketAddr)>,
    first: usize,
    reps: usize,
) -> Result<Loaded> {
    let (mut steady, mut changing, mut posted) = (vec![], vec![], 0);
    let (mut steady_cpu, mut changing_cpu) = (0.0, 0.0);
    let every = Duration::from_millis(100);
    for rep in 1..=reps.max(1) {
        let c0 = cpu(dp.pid());
        let next = first + posted;
        let still = match decoy.as_mut() {
            Some((decoy, at)) => {
                load_while(driver, dp, spec, every, |k| decoy.change(*at, next + k))?.0
            }
            None => driver.run_load(dp, spec)?,
        };
        let c1 = cpu(dp.pid());
        let (moving, sent) =
            load_while(driver, dp, spec, every, |k| writes.change(admin, next + k))?;
        steady_cpu += c1 - c0;
        changing_cpu += cpu(dp.pid()) - c1;
        crate::progress(format!(
            "rep {rep}: steady {:.0} RPS, with a change every 100 ms {:.0} RPS ({:.3})",
            still.rps,
            moving.rps,
            moving.rps / still.rps.max(1.0)
        ));
        posted += sent.len();
        steady.push(still);
        changing.push(moving);
    }
    Ok(Loaded {
        per_cpu: per_cpu_ratio((&steady, steady_cpu), (&changing, changing_cpu)),
        steady,
        changing,
        posted,
    })
}

/// The CP's CPU per change split into a fixed part and a part per DP, from streams with 1 and 3 DPs,
/// and projected to `dps` data planes, as a sentence for the report.
pub fn projection(one: &Streamed, three: &Streamed, dps: f64) -> String {
    split_per_dp(one.cp_ms, three.cp_ms, dps).map_or_else(
        || {
            format!(
                "no cost per DP above the noise (1 DP {:.1} ms, 3 DPs {:.1} ms): not projected",
                one.cp_ms, three.cp_ms
            )
        },
        |(fixed, per_dp, at)| {
            format!("fixed {fixed:.1} ms + {per_dp:.2} ms per DP; projected to {dps:.0} DPs: {at:.1} ms")
        },
    )
}

/// (fixed, per DP, at `dps`) from the CPU per change with 1 and with 3 DPs; None when 3 DPs did not cost
/// more than 1: the difference is noise, and a line through it would project a negative cost.
fn split_per_dp(one_ms: f64, three_ms: f64, dps: f64) -> Option<(f64, f64, f64)> {
    let per_dp = (three_ms - one_ms) / 2.0;
    if per_dp <= 0.0 {
        return None;
    }
    let fixed = one_ms - per_dp;
    Some((fixed, per_dp, fixed + dps * per_dp))
}

#[cfg(test)]
mod tests {
    use super::split_per_dp;

    #[test]
    fn a_cost_per_dp_is_projected_and_noise_is_not() {
        assert_eq!(split_per_dp(10.0, 14.0, 100.0), Some((8.0, 2.0, 208.0)));
        assert_eq!(split_per_dp(130.0, 116.0, 100.0), None);
        assert_eq!(split_per_dp(12.0, 12.0, 100.0), None);
    }
}
