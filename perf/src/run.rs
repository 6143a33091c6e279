//! The `run` loop: start the upstream and targets, interleave repetitions, collect, report.

use crate::cases::Case;
use crate::load;
use crate::report::{self, Combined, Run};
use crate::stats::{gate, Verdict};
use crate::target::{self, Running, Target};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Options of `run` and `compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// `kong8`: Kong's 8 published cases (no-plugins, rate-limiting, rl-key-auth, rl-basic-auth × 1 and 100).
    #[arg(long)]
    pub suite: Option<String>,
    /// Cases, e.g. `no-plugins`, `rl-key-auth@100` (repeatable).
    #[arg(long)]
    pub case: Vec<String>,
    /// Targets: `bin:<path>`, `git:<ref>`, `nginx`, `nginx-lua` (repeatable).
    #[arg(long)]
    pub target: Vec<String>,
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Seconds per measured run.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Seconds of unmeasured load before the first run of each target.
    #[arg(long, default_value = "2s")]
    pub warmup: String,
    /// Comma-separated connection counts.
    #[arg(long, default_value = "50,200")]
    pub connections: String,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// CPUs of the gateway (taskset list); its worker count is the number of CPUs listed.
    #[arg(long, default_value = "0")]
    pub gateway_cpus: String,
    /// CPUs of the upstream and the load generator.
    #[arg(long, default_value = "1")]
    pub load_cpus: String,
    /// Upstream response body size in bytes.
    #[arg(long, default_value_t = 2)]
    pub body_size: usize,
    /// Results directory (default: perf-results/<unix time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn seconds(s: &str) -> Result<f64> {
    s.trim_end_matches('s')
        .parse::<f64>()
        .with_context(|| format!("bad duration '{s}'"))
}

fn cpu_count(list: &str) -> usize {
    list.split(',')
        .map(|p| match p.split_once('-') {
            Some((a, b)) => {
                b.parse::<usize>()
                    .unwrap_or(0)
                    .saturating_sub(a.parse().unwrap_or(0))
                    + 1
            }
            None => 1,
        })
        .sum()
}

/// Runs everything and returns the combined results (also written to the results directory).
pub fn run(args: &RunArgs, _label: Option<&str>) -> Result<Vec<Combined>> {
    let mut cases: Vec<Case> = match args.suite.as_deref() {
        Some("kong8") => Case::kong8(),
        Some(other) => bail!("unknown suite '{other}' (known: kong8)"),
        None => Vec::new(),
    };
    for c in &args.case {
        cases.push(Case::parse(c).map_err(anyhow::Error::msg)?);
    }
    if cases.is_empty() {
        bail!("no cases: give --suite kong8 or --case");
    }
    let targets: Vec<Target> = args
        .target
        .iter()
        .map(|t| Target::parse(t))
        .collect::<Result<_>>()?;
    if targets.is_empty() {
        bail!("no targets: give --target");
    }
    let connections: Vec<usize> = args
        .connections
        .split(',')
        .map(|c| c.trim().parse())
        .collect::<Result<_, _>>()?;
    let (duration, warmup) = (seconds(&args.duration)?, seconds(&args.warmup)?);
    let out = args.out.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("perf-results/{now}"))
    });
    std::fs::create_dir_all(&out)?;
    let out = out.canonicalize()?;
    let workers = cpu_count(&args.gateway_cpus);
    let cache = PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into()))
        .join(".cache/sluice-perf");

    // Resolve binaries first (git refs are built once, cached by commit).
    let mut bins = Vec::new();
    for t in &targets {
        bins.push(match t {
            Target::Bin(p) => Some(
                p.canonicalize()
                    .with_context(|| format!("{}", p.display()))?,
            ),
            Target::Git(r) => Some(target::build_git(r, &cache)?),
            _ => None,
        });
    }

    let up_port = target::free_port()?;
    let me = std::env::current_exe()?;
    let mut upstream = Command::new("taskset")
        .args(["-c", &args.load_cpus])
        .arg(&me)
        .args([
            "upstream",
            "--listen",
            &format!("127.0.0.1:{up_port}"),
            "--body-size",
            &args.body_size.to_string(),
        ])
        .stdout(Stdio::null())
        .spawn()?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let upstream_addr = format!("127.0.0.1:{up_port}");

    let mut runs: Vec<Run> = Vec::new();
    let result = (|| -> Result<()> {
        for case in &cases {
            let config = out.join(format!("{}.json", case.name));
            std::fs::write(
                &config,
                serde_json::to_string(&case.config(&upstream_addr))?,
            )?;
            let script = out.join(format!("{}.lua", case.name));
            std::fs::write(&script, load::script(case))?;
            let mut running: Vec<(String, Running)> = Vec::new();
            for (t, bin) in targets.iter().zip(&bins) {
                if t.is_peer() && case.has_plugins() {
                    continue;
                }
                let r = match (t, bin) {
                    (_, Some(bin)) => {
                        target::start_sluice(bin, &config, &out, &args.gateway_cpus, workers)?
                    }
                    (Target::NginxLua, _) => target::start_nginx(
                        true,
                        &upstream_addr,
                        &out,
                        &args.gateway_cpus,
                        workers,
                    )?,
                    _ => target::start_nginx(
                        false,
                        &upstream_addr,
                        &out,
                        &args.gateway_cpus,
                        workers,
                    )?,
                };
                eprintln!("[{}] {} warming up on :{}", case.name, t.label(), r.port);
                load::wrk(
                    &script,
                    r.port,
                    connections[0],
                    args.threads,
                    warmup,
                    &args.load_cpus,
                )?;
                running.push((t.label(), r));
            }
            for rep in 0..args.reps {
                for &c in &connections {
                    for (label, r) in &running {
                        let (cpu0, _) = target::usage(r.child.id());
                        let w =
                            load::wrk(&script, r.port, c, args.threads, duration, &args.load_cpus)?;
                        let (cpu1, rss) = target::usage(r.child.id());
                        let run = Run {
                            case: case.name.clone(),
                            target: label.clone(),
                            connections: c,
                            rep,
                            rps: w.rps(),
                            p50_ms: w.p50 / 1000.0,
                            p95_ms: w.p95 / 1000.0,
                            p99_ms: w.p99 / 1000.0,
                            max_ms: w.max / 1000.0,
                            errors: w.errors,
                            non2xx: w.non2xx,
                            cpu_us_per_req: (cpu1 - cpu0) * 1e6 / (w.requests.max(1) as f64),
                            peak_rss_kb: rss,
                        };
                        eprintln!(
                            "[{}] rep {} c={} {}: {:.0} rps, p99 {:.2} ms, {:.1} µs CPU/req, {} non-2xx",
                            run.case, rep + 1, c, label, run.rps, run.p99_ms, run.cpu_us_per_req, run.non2xx
                        );
                        runs.push(run);
                    }
                }
            }
            for (_, r) in &running {
                let _ = std::fs::copy(&r.log, out.join(format!("{}-{}.log", case.name, r.port)));
            }
        }
        Ok(())
    })();
    let _ = upstream.kill();
    let _ = upstream.wait();
    result?;

    let combined = report::combine(&runs);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    std::fs::write(out.join("runs.json"), serde_json::to_string_pretty(&runs)?)?;
    std::fs::write(
        out.join("results.json"),
        serde_json::to_string_pretty(&combined)?,
    )?;
    let md = report::markdown(&combined, &command);
    std::fs::write(out.join("results.md"), &md)?;
    std::fs::write(out.join("chart.svg"), report::svg(&combined))?;
    println!("{md}");
    eprintln!("results in {}", out.display());
    Ok(combined)
}

/// Kong's release gates for every (case, connections) that both targets ran; the worst verdict wins.
pub fn verdict(combined: &[Combined], a: &str, b: &str) -> Verdict {
    let (a, b) = (
        Target::parse(a).map(|t| t.label()).unwrap_or_default(),
        Target::parse(b).map(|t| t.label()).unwrap_or_default(),
    );
    let mut worst = Verdict::Pass;
    for x in combined.iter().filter(|x| x.target == a) {
        let Some(y) = combined
            .iter()
            .find(|y| y.target == b && y.case == x.case && y.connections == x.connections)
        else {
            continue;
        };
        let (v, notes) = gate(x.rps, y.rps, (x.p95_ms, y.p95_ms), (x.p99_ms, y.p99_ms));
        println!("{} c={}: {v:?} {}", x.case, x.connections, notes.join("; "));
        worst = worst.max(v);
    }
    println!("verdict: {worst:?}");
    worst
}
