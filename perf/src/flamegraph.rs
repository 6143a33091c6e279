//! `flamegraph`: samples the gateway with `perf record -F 999 -g -p <pid>` while it is under
//! load, then folds `perf script` output with `inferno` into an SVG flame graph.

use crate::cases::Case;
use crate::driver::Driver;
use crate::loadgen::LoadSpec;
use crate::target::{self, Target};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Options of `flamegraph`.
#[derive(clap::Args, Debug, Clone)]
pub struct FlameArgs {
    /// The case to load, e.g. `rl-key-auth@100`.
    #[arg(long, default_value = "no-plugins")]
    pub case: String,
    /// The target to profile (`bin:<path>`, `git:<ref>`, `nginx`, `nginx-lua`).
    #[arg(long)]
    pub target: String,
    /// Output SVG.
    #[arg(long, default_value = "flamegraph.svg")]
    pub out: PathBuf,
    /// How long to sample.
    #[arg(long, default_value = "10s", value_parser = crate::runner::parse_duration)]
    pub duration: Duration,
    /// Connections of the load.
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// Unwind stacks with DWARF debug info (`--call-graph dwarf`) instead of frame pointers
    /// (`-g`): slower and bigger, but complete stacks for a release build without frame pointers.
    #[arg(long)]
    pub dwarf: bool,
    /// The repository `git:` targets are built from.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
}

/// Profiles the target and writes the flame graph; the raw `perf.data` and folded stacks are
/// kept next to the SVG.
pub fn run(args: &FlameArgs) -> Result<()> {
    check_perf()?;
    let case = Case::parse(&args.case)?;
    let target = target::resolve(
        &Target::parse(&args.target)?,
        &args.repo,
        &target::git::default_cache(),
    )?;
    if target.target.is_peer() && !case.peers_can_run() {
        bail!("{} only runs the no-plugins cases", target.target.label());
    }
    let work = args.out.with_extension("d");
    std::fs::create_dir_all(&work)?;
    let mut driver = args.cpus.driver()?;
    let upstream = driver.start_upstream(2)?;
    let config = crate::runner::write_config(&case, &upstream, &work)?;
    let running = driver.start_target(&target, &case, &config, &work.join("target"))?;
    let pid = running.pid();
    let spec = LoadSpec {
        base_url: String::new(),
        case,
        connections: args.connections,
        threads: 1,
        duration: args.duration + Duration::from_secs(2),
        rate: None,
        cpus: None,
        work_dir: work.clone(),
        streams: 1,
        upstream: None,
    };
    let data = work.join("perf.data");
    let record = std::thread::scope(|s| -> Result<std::process::Output> {
        let load = s.spawn(|| driver.run_load(&running, &spec));
        std::thread::sleep(Duration::from_secs(1));
        crate::progress(format!(
            "perf record -F 999 -p {pid} for {:?}",
            args.duration
        ));
        let call_graph: &[&str] = if args.dwarf {
            &["--call-graph", "dwarf"]
        } else {
            &["-g"]
        };
        let out = Command::new("perf")
            .args(["record", "-F", "999"])
            .args(call_graph)
            .arg("-o")
            .arg(&data)
            .args(["-p", &pid.to_string(), "--", "sleep"])
            .arg(args.duration.as_secs_f64().to_string())
            .output()
            .context("running perf (apt-get install -y linux-perf)");
        let load = load
            .join()
            .map_err(|_| anyhow::anyhow!("load thread panicked"))?;
        let load = load?;
        crate::progress(format!("load during sampling: {:.0} rps", load.rps));
        out
    })?;
    if !record.status.success() || !data.is_file() {
        bail!(
            "perf record failed: perf events are probably not available on this machine (container without \
             perf_event access, or kernel.perf_event_paranoid too high). perf said:\n{}",
            String::from_utf8_lossy(&record.stderr).trim()
        );
    }
    drop(running);
    render(
        &data,
        &args.out,
        &format!("sluice-perf: {} on {case}", args.target),
    )
}

/// Checks that `perf` is installed, with a clear message when it is not.
fn check_perf() -> Result<()> {
    match Command::new("perf").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!("`perf` is not installed or does not run for this kernel: apt-get install -y linux-perf"),
    }
}

/// `perf script` → inferno's perf collapser → inferno's flame graph SVG.
pub fn render(data: &Path, out: &Path, title: &str) -> Result<()> {
    let script = Command::new("perf")
        .arg("script")
        .arg("-i")
        .arg(data)
        .output()
        .context("running perf script")?;
    if !script.status.success() {
        bail!(
            "perf script failed: {}",
            String::from_utf8_lossy(&script.stderr).trim()
        );
    }
    let folded = fold(&script.stdout)?;
    std::fs::write(out.with_extension("folded"), &folded)?;
    let svg = flame_svg(&folded, title)?;
    std::fs::write(out, svg).with_context(|| format!("writing {}", out.display()))?;
    crate::progress(format!("flame graph written to {}", out.display()));
    Ok(())
}

/// Folds `perf script` output into `stack;frames count` lines.
pub fn fold(perf_script: &[u8]) -> Result<Vec<u8>> {
    use inferno::collapse::Collapse;
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::default()
        .collapse(perf_script, &mut folded)
        .context("folding perf script output")?;
    Ok(folded)
}

/// Renders folded stacks as a flame graph SVG.
pub fn flame_svg(folded: &[u8], title: &str) -> Result<Vec<u8>> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    let mut svg = Vec::new();
    inferno::flamegraph::from_reader(&mut opts, folded, &mut svg)
        .context("rendering the flame graph")?;
    Ok(svg)
}
