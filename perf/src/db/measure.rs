//! The four measurements of `sluice-perf db`, on two running nodes: A takes the writes, B is measured.

use super::{http, report::percentile, report::spread_ms, report::Row, DbArgs};
use crate::cases::Case;
use crate::driver::{local::Local, Driver};
use crate::loadgen::LoadSpec;
use crate::results::LoadResult;
use crate::target::process::Running;
use crate::{procfs, progress, reload};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often B's proxy is polled for a new path.
const POLL: Duration = Duration::from_millis(1);
/// How long a change may take to reach B before the run fails.
const REACH_LIMIT: Duration = Duration::from_secs(10);
/// The idle window B's background CPU is read over before the per-change measurement.
const IDLE: Duration = Duration::from_secs(2);

fn admin(node: &Running) -> Result<SocketAddr> {
    node.admin.context("sluice has an admin address")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A node's CPU seconds (user + system, all threads).
fn cpu(node: &Running) -> Result<f64> {
    procfs::tree_cpu_seconds(node.pid()).context("reading a node's /proc/<pid>/stat")
}

/// The CPU seconds of the proxy workers of the node `pid` (0 when they cannot be read).
pub(crate) fn workers_cpu(pid: u32) -> f64 {
    procfs::threads_cpu_seconds(pid, "sluice-worker").unwrap_or(0.0)
}

/// CPU seconds of every PostgreSQL server process on this machine: where the database's share of the
/// CPUs went (backends that ended meanwhile are not counted).
pub(crate) fn postgres_cpu() -> f64 {
    crate::pin::server_pids(&crate::pin::POSTGRES)
        .into_iter()
        .filter_map(procfs::cpu_seconds)
        .sum()
}

/// Waits until B's proxy routes `path`; the time since `since`, and the probes sent.
fn reach_b(b: &Running, path: &str, since: Instant) -> Result<(Duration, usize)> {
    http::until_routed(b.proxy, path, since, POLL, REACH_LIMIT)
        .map(|r| (r.took, r.probes))
        .with_context(|| {
            format!(
                "{path} never reached node B in {REACH_LIMIT:?}; log {}",
                b.log.display()
            )
        })
}

/// Sends one Admin write to `to` (node A's Admin API) and checks its status; its round trip in ms.
fn write(
    to: SocketAddr,
    method: &str,
    path: &str,
    body: serde_json::Value,
    want: u16,
) -> Result<f64> {
    let r = http::request(to, method, path, Some(&body))?;
    if r.status != want {
        bail!(
            "{method} {path} answered {} (wanted {want}): {}",
            r.status,
            r.body.trim()
        );
    }
    Ok(r.wall_ms)
}

/// The Admin write of a one-route change: `PATCH /routes/r{i}` that gives route i the paths `/r{i}`
/// (its own, so a load over the routes still finds every route) and `extra`; the write's path and body.
pub(crate) fn route_patch(i: usize, extra: &str) -> (String, serde_json::Value) {
    let body = json!({ "paths": [format!("/r{i}"), extra] });
    (format!("/routes/r{i}"), body)
}

/// Sends [`route_patch`] to the Admin API at `to` (it must answer 200); its round trip in ms. Shared
/// with `sluice-perf cluster --cp-database postgres`, whose changes are such writes to the CP.
pub(crate) fn patch_route(to: SocketAddr, i: usize, extra: &str) -> Result<f64> {
    let (path, body) = route_patch(i, extra);
    write(to, "PATCH", &path, body, 200)
}

/// Figure 1: route creations on A until B routes each.
pub(super) fn propagation(
    a: &Running,
    b: &Running,
    upstream: &str,
    args: &DbArgs,
) -> Result<Vec<Row>> {
    let service = json!({ "name": "perf", "url": format!("http://{upstream}") });
    write(admin(a)?, "POST", "/services", service, 201)?;
    let (mut from_write, mut after_reply) = (Vec::new(), Vec::new());
    for i in 0..args.changes {
        let path = format!("/p{i}");
        let started = Instant::now();
        let route = json!({ "name": format!("p{i}"), "paths": [path] });
        let replied = write(admin(a)?, "POST", "/services/perf/routes", route, 201)?;
        let t = ms(reach_b(b, &path, started)?.0);
        from_write.push(t);
        after_reply.push((t - replied).max(0.0));
    }
    let p99 = percentile(&from_write, 99.0);
    Ok(vec![
        Row::goal(
            &format!(
                "propagation A → B over {} writes (POST on A sent → B's proxy routes the path)",
                args.changes
            ),
            spread_ms(&from_write),
            p99,
            "p99 ≤ 1 s",
            p99 <= 1000.0,
        ),
        Row::info(
            "… counted from A's reply (A answers once it serves the write)",
            spread_ms(&after_reply),
            percentile(&after_reply, 99.0),
        ),
    ])
}

/// Figure 2: B's CPU per single-route change, the changes one at a time, no proxy load.
/// One figure for several runs of the same load: the median RPS, p99 and max latency, the failures summed
/// and the time added up (`sluice-perf db`'s and `cluster`'s interleaved pairs).
pub(crate) fn medians(runs: &[LoadResult]) -> LoadResult {
    let median =
        |f: fn(&LoadResult) -> f64| percentile(&runs.iter().map(f).collect::<Vec<_>>(), 50.0);
    LoadResult {
        rps: median(|r| r.rps),
        latency: crate::results::Latency {
            p99: median(|r| r.latency.p99),
            max: median(|r| r.latency.max),
            ..Default::default()
        },
        errors: runs.iter().map(|r| r.errors).sum(),
        non_2xx: runs.iter().map(|r| r.non_2xx).sum(),
        duration_s: runs.iter().map(|r| r.duration_s).sum(),
        ..Default::default()
    }
}

pub(super) fn cpu_per_change(a: &Running, b: &Running, args: &DbArgs) -> Result<Vec<Row>> {
    let idle_start = cpu(b)?;
    std::thread::sleep(IDLE);
    let idle_rate = (cpu(b)? - idle_start) / IDLE.as_secs_f64();
    let n = args.cpu_changes;
    let mut reached = Vec::new();
    let (before, a_before, pg_before) = (cpu(b)?, cpu(a)?, postgres_cpu());
    let b_workers_before = workers_cpu(b.pid());
    let started = Instant::now();
    let (mut round_trips, mut probes) = (Vec::new(), 0);
    for k in 0..n {
        let i = k * args.routes / n;
        let extra = format!("/m{i}");
        let t0 = Instant::now();
        patch_route(admin(a)?, i, &extra)?;
        round_trips.push(ms(t0.elapsed()));
        let (took, sent) = reach_b(b, &extra, t0)?;
        reached.push(ms(took));
        probes += sent;
    }
    let spent = cpu(b)? - before;
    let b_workers = workers_cpu(b.pid()) - b_workers_before;
    let writer_ms = (cpu(a)? - a_before) / n as f64 * 1e3;
    let pg_ms = (postgres_cpu() - pg_before).max(0.0) / n as f64 * 1e3;
    let elapsed = started.elapsed().as_secs_f64();
    let per_change = spent / n as f64 * 1e3;
    let corrected = (spent - idle_rate * elapsed).max(0.0) / n as f64 * 1e3;
    let off_workers = (spent - b_workers).max(0.0) / n as f64 * 1e3;
    Ok(vec![
        Row::goal(
            &format!(
                "node B CPU per single-entity change, {} routes ({n} × PATCH /routes/rN on A, no proxy load)",
                args.routes
            ),
            format!("{per_change:.1} ms"),
            per_change,
            "≤ 50 ms",
            per_change <= 50.0,
        ),
        Row::info(
            "… of which off B's proxy workers: the apply (the change read, patch, compile, store); the workers served this tool's probes, a connection each every 1 ms until B routes the change",
            format!(
                "{off_workers:.1} ms ({:.1} probes per change)",
                probes as f64 / n as f64
            ),
            off_workers,
        ),
        Row::info(
            "… less B's idle CPU over the same time",
            format!(
                "{corrected:.1} ms (idle {:.1} ms/s)",
                idle_rate * 1e3
            ),
            corrected,
        ),
        Row::info(
            "… node A's CPU per write (the Admin write and its own apply), PostgreSQL's (every process on the machine), and A's write round trip",
            format!(
                "A {writer_ms:.1} ms, PostgreSQL {pg_ms:.1} ms; round trip {}",
                spread_ms(&round_trips)
            ),
            writer_ms,
        ),
        Row::info(
            "… B's split of its last apply (`configuration loaded` line)",
            reload::load_split(&b.log),
            0.0,
        ),
        Row::info(
            &format!(
                "propagation A → B of those {n} changes on the {} routes",
                args.routes
            ),
            spread_ms(&reached),
            percentile(&reached, 99.0),
        ),
    ])
}

/// Figures 3 and 4: steady RPS on B, then the same load while A writes every interval.
pub(super) fn load_with_writes(
    driver: &mut Local,
    a: &Running,
    b: &Running,
    decoy: Option<&Running>,
    case: &Case,
    out: &Path,
    args: &DbArgs,
) -> Result<Vec<Row>> {
    let spec = LoadSpec {
        base_url: String::new(),
        case: *case,
        connections: args.connections,
        threads: 1,
        duration: Duration::from_secs(args.load_secs),
        rate: None,
        cpus: None,
        work_dir: out.to_path_buf(),
        streams: 1,
        upstream: None,
    };
    if args.warmup_secs > 0 {
        let warm = LoadSpec {
            duration: Duration::from_secs(args.warmup_secs),
            ..spec.clone()
        };
        driver.run_load(b, &warm)?;
    }
    // Steady and writing runs take turns (`--reps` pairs), so that drift on a shared machine hits both.
    let (mut steadies, mut writings, mut walls, mut ratios) = (vec![], vec![], vec![], vec![]);
    let (mut steady_cpu, mut writing_cpu, mut writer_cpu, mut pg_cpu) = (0.0, 0.0, 0.0, 0.0);
    for rep in 1..=args.reps.max(1) {
        let c0 = cpu(b)?;
        // With a decoy, the steady run's writes go where B does not look (see `DbArgs::no_decoy`).
        let steady = match decoy {
            Some(decoy) => load_while_writing(driver, decoy, b, &spec, args)?.0,
            None => driver.run_load(b, &spec)?,
        };
        steady_cpu += cpu(b)? - c0;
        let (c0, a0, pg0) = (cpu(b)?, cpu(a)?, postgres_cpu());
        let (writing, w) = load_while_writing(driver, a, b, &spec, args)?;
        writing_cpu += cpu(b)? - c0;
        writer_cpu += cpu(a)? - a0;
        pg_cpu += (postgres_cpu() - pg0).max(0.0);
        let ratio = writing.rps / steady.rps.max(1.0);
        progress(format!(
            "rep {rep}: steady {:.0} RPS, with a write every {} ms {:.0} RPS ({ratio:.3})",
            steady.rps, args.write_interval_ms, writing.rps
        ));
        ratios.push(ratio);
        walls.extend(w);
        steadies.push(steady);
        writings.push(writing);
    }
    let secs = |runs: &[LoadResult]| runs.iter().map(|r| r.duration_s).sum::<f64>().max(1e-3);
    let steady_cores = steady_cpu / secs(&steadies);
    let writing_cores = writing_cpu / secs(&writings);
    let writer_cores = writer_cpu / secs(&writings);
    let pg_cores = pg_cpu / secs(&writings);
    let median = |xs: Vec<f64>| percentile(&xs, 50.0);
    let ratio = median(ratios.clone());
    let (steady, writing) = (medians(&steadies), medians(&writings));
    let per_cpu = per_cpu_ratio((&steadies, steady_cpu), (&writings, writing_cpu));
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
    let failed = writing.errors + writing.non_2xx;
    let p99 = percentile(&walls, 99.0);
    let came_every_ms = secs(&writings) * 1e3 / walls.len().max(1) as f64;
    let at_rate = scaled_to_rate(ratio, came_every_ms, args.write_interval_ms as f64);
    Ok(vec![
        Row::info(
            &format!(
                "steady RPS on B ({case}, {} connections, {} × {} s; medians)",
                args.connections, args.reps, args.load_secs
            ),
            format!(
                "{:.0} (p99 {:.1} ms, max {:.1} ms; {} errors, {} non-2xx)",
                steady.rps, steady.latency.p99, steady.latency.max, steady.errors, steady.non_2xx
            ),
            steady.rps,
        ),
        Row::goal(
            &format!(
                "RPS on B while A writes every {} ms ({} writes, one per {:.0} ms as they came) ÷ steady, median of {} pairs",
                args.write_interval_ms,
                walls.len(),
                came_every_ms,
                args.reps
            ),
            format!(
                "{ratio:.3} (each {}; {:.0} RPS; p99 {:.1} ms, max {:.1} ms)",
                each.join(", "),
                writing.rps,
                writing.latency.p99,
                writing.latency.max
            ),
            ratio,
            "≥ 0.97",
            ratio >= 0.97,
        ),
        Row::info(
            "… scaled to one write per interval (the loss × the interval the writes came at ÷ the one asked for; A and PostgreSQL at a low nice value write late)",
            format!("{at_rate:.3}"),
            at_rate,
        ),
        Row::info(
            "… B's requests per CPU-second with the writes ÷ steady (the RPS ratio when B's CPU is what limits it)",
            format!("{per_cpu:.3}"),
            per_cpu,
        ),
        Row::goal(
            "failed requests on B during the writes (socket errors + non-2xx)",
            format!(
                "{failed} ({} errors, {} non-2xx)",
                writing.errors, writing.non_2xx
            ),
            failed as f64,
            "0",
            failed == 0,
        ),
        Row::info(
            "node B CPU use, steady → during writes",
            format!("{steady_cores:.2} → {writing_cores:.2} cores"),
            writing_cores,
        ),
        Row::info(
            "CPU of node A and of PostgreSQL during the writes",
            format!(
                "A {writer_cores:.2} cores (CPUs {}), PostgreSQL {pg_cores:.2} cores (CPUs {})",
                args.writer_cpus.as_deref().unwrap_or_default(),
                args.pg_cpus.as_deref().unwrap_or_default()
            ),
            writer_cores + pg_cores,
        ),
        Row::info(
            &format!(
                "Admin write round trip on A under proxy load ({} × PATCH /routes/rN)",
                walls.len()
            ),
            spread_ms(&walls),
            p99,
        ),
    ])
}

/// The RPS ratio `ratio`, measured with writes every `came_ms`, as it would be with a write every
/// `asked_ms`: the loss grows with the write rate (each write costs B about the same CPU).
fn scaled_to_rate(ratio: f64, came_ms: f64, asked_ms: f64) -> f64 {
    1.0 - (1.0 - ratio) * came_ms.max(asked_ms) / asked_ms.max(1.0)
}

/// Requests served per CPU-second of the measured node with changes ÷ steady, from each side's runs and
/// the node's CPU seconds over them. The RPS ratio depends on the load generator too, which shares its
/// CPU with the node that takes the writes (and PostgreSQL, or a control plane): this one is the node's
/// own, and equals the RPS ratio when the node's CPU is saturated in both.
pub(crate) fn per_cpu_ratio(steady: (&[LoadResult], f64), changing: (&[LoadResult], f64)) -> f64 {
    let served = |runs: &[LoadResult]| runs.iter().map(|r| r.rps * r.duration_s).sum::<f64>();
    let per_cpu = |(runs, cpu): (&[LoadResult], f64)| served(runs) / cpu.max(1e-9);
    per_cpu(changing) / per_cpu(steady).max(1e-9)
}

/// Runs the load on B while another thread sends a `PATCH /routes/rN` to A every interval (routes in
/// the middle of the range, which the load hits most, keeping their `/rN` path); the load's figures
/// and each write's round trip in ms.
fn load_while_writing(
    driver: &mut Local,
    a: &Running,
    b: &Running,
    spec: &LoadSpec,
    args: &DbArgs,
) -> Result<(LoadResult, Vec<f64>)> {
    let routes = args.routes;
    let (low, span) = (routes / 3, (routes / 3).max(1));
    let interval = Duration::from_millis(args.write_interval_ms);
    let to = admin(a)?;
    load_while(driver, b, spec, interval, |k| {
        let j = (low + k * 37 % span) % routes;
        patch_route(to, j, &format!("/w{k}"))
    })
}

/// Runs `spec`'s load on `target` while another thread calls `write(k)` (k = 0, 1, ...) every
/// `interval` until the load ends; the load's result and what each write returned. Shared with
/// `sluice-perf cluster` (changes streaming to a control plane while its data plane is loaded).
pub(crate) fn load_while<T: Send>(
    driver: &mut Local,
    target: &Running,
    spec: &LoadSpec,
    interval: Duration,
    mut write: impl FnMut(usize) -> Result<T> + Send,
) -> Result<(LoadResult, Vec<T>)> {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| -> Result<Vec<T>> {
            let mut walls = Vec::new();
            let mut next = Instant::now() + interval;
            let mut k = 0usize;
            while !done.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= next {
                    walls.push(write(k)?);
                    k += 1;
                    next = (next + interval).max(Instant::now());
                } else {
                    std::thread::sleep((next - now).min(Duration::from_millis(10)));
                }
            }
            Ok(walls)
        });
        let result = driver.run_load(target, spec);
        done.store(true, Ordering::Relaxed);
        let walls = writer
            .join()
            .map_err(|_| anyhow::anyhow!("the writing thread panicked"))??;
        Ok((result?, walls))
    })
}

#[cfg(test)]
mod tests {
    use super::{route_patch, scaled_to_rate};

    #[test]
    fn a_route_patch_keeps_the_routes_own_path() {
        let (path, body) = route_patch(42, "/changed/3/r42");
        assert_eq!(path, "/routes/r42");
        assert_eq!(
            body,
            serde_json::json!({ "paths": ["/r42", "/changed/3/r42"] })
        );
    }

    #[test]
    fn a_loss_measured_at_fewer_writes_is_scaled_up_and_never_down() {
        assert!((scaled_to_rate(0.98, 150.0, 100.0) - 0.97).abs() < 1e-9);
        assert!((scaled_to_rate(0.98, 100.0, 100.0) - 0.98).abs() < 1e-9);
        assert!((scaled_to_rate(0.98, 90.0, 100.0) - 0.98).abs() < 1e-9);
        assert!((scaled_to_rate(1.02, 200.0, 100.0) - 1.04).abs() < 1e-9);
    }
}
