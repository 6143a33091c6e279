//! The options of `run` (shared by `compare`), and how they turn into a [`Plan`] and load specs.

use super::Plan;
use crate::cases::{self, Case};
use crate::loadgen::LoadSpec;
use crate::target::Target;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The CPU pinning every command that runs a gateway shares: the gateway on some CPUs (one worker per
/// CPU listed), its upstream and the load on others, so that the load never competes with what it
/// measures.
#[derive(clap::Args, Debug, Clone)]
pub struct Cpus {
    /// CPUs of the gateway (`taskset -c` list); one worker per CPU listed.
    #[arg(long, default_value = "0")]
    pub gateway_cpus: String,
    /// CPUs of the upstream, the load generator and anything else beside the gateway.
    #[arg(long, default_value = "1")]
    pub load_cpus: String,
}

impl Cpus {
    /// The local driver with this pinning.
    pub fn driver(&self) -> Result<crate::driver::local::Local> {
        crate::driver::local::Local::new(&self.gateway_cpus, &self.load_cpus)
    }
}

/// Options of `run` and `compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// A named suite: `kong8` = Kong's published cases (no-plugins, rate-limiting, rl-key-auth,
    /// rl-basic-auth, each over 1 and 100 routes/consumers).
    #[arg(long)]
    pub suite: Option<String>,
    /// A case, `name[@routes[/consumers]]`, e.g. `no-plugins`, `rl-key-auth@100` (repeatable).
    #[arg(long)]
    pub case: Vec<String>,
    /// A target: `bin:<path>`, `git:<ref>`, `nginx` or `nginx-lua` (repeatable; interleaved in
    /// the order given).
    #[arg(long)]
    pub target: Vec<String>,
    /// Repetitions of every (case, target, connections), interleaved across targets.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Measured time per run (`10s`, `500ms`, `1m`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Unmeasured load after each target starts.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Connection counts, comma-separated (for ws-echo: WebSocket tunnels, e.g. `1,1000`).
    #[arg(long, default_value = "50,200", value_delimiter = ',')]
    pub connections: Vec<u32>,
    /// Load-generator threads (wrk -t).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Calls in flight on each HTTP/2 connection of the grpc-unary case (h2load -m).
    #[arg(long, default_value_t = 10)]
    pub streams: u32,
    /// Constant offered rate in requests/s: measures latency with oha (open loop, corrected for
    /// coordinated omission) instead of maximum throughput with wrk.
    #[arg(long)]
    pub rate: Option<u32>,
    /// Results directory (default `perf-results/<unix time>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where the processes run: `local` (this network namespace, 127.0.0.1) or `netns` (gateway and
    /// upstream in network namespaces of their own joined by veth pairs, as separate hosts; needs root).
    #[arg(long, default_value = "local", value_parser = ["local", "netns"])]
    pub driver: String,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// Upstream response body size in bytes.
    #[arg(long, default_value_t = 2)]
    pub body_size: usize,
    /// Plain HTTP between the load generator and the gateways (the default is HTTPS, as in
    /// Kong's published suite).
    #[arg(long, conflicts_with = "https")]
    pub http: bool,
    /// HTTPS between the load generator and the gateways (the default; every target presents the
    /// same generated ECDSA P-256 certificate).
    #[arg(long)]
    pub https: bool,
    /// The repository `git:` targets are built from.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Build cache for `git:` targets (default `~/.cache/sluice-perf`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// CPUs the local Redis moves to while a case that counts on it runs (`rl-redis`, `rl-redis-sync`):
    /// default the load CPUs, as Redis stands for another host; `off` leaves it where it is.
    #[arg(long)]
    pub redis_cpus: Option<String>,
}

/// Parses `10s`, `500ms`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration `{s}` (use e.g. 10s, 500ms, 1m)"))?;
    if !(0.0..=86_400.0).contains(&v) {
        return Err(format!("duration `{s}` out of range"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

impl RunArgs {
    /// Whether the load goes over TLS (the default).
    pub fn tls(&self) -> bool {
        !self.http
    }

    /// Parses cases and targets and checks the options.
    pub fn plan(&self) -> Result<Plan> {
        if self.reps == 0 || self.connections.is_empty() || self.connections.contains(&0) {
            bail!("--reps and every --connections value must be at least 1");
        }
        let mut cases: Vec<Case> = match &self.suite {
            Some(s) => cases::suite(s)?,
            None => Vec::new(),
        };
        for c in &self.case {
            cases.push(Case::parse(c)?);
        }
        let targets = self
            .target
            .iter()
            .map(|t| Target::parse(t))
            .collect::<Result<Vec<_>>>()?;
        let started_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let plan = Plan {
            cases,
            targets,
            started_unix,
        };
        plan.validate()?;
        Ok(plan)
    }

    /// The results directory, created.
    pub fn out_dir(&self) -> Result<PathBuf> {
        let out = self.out.clone().unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            PathBuf::from(format!("perf-results/{now}"))
        });
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        Ok(out.canonicalize()?)
    }

    /// The load of one run; the driver fills in the URL and CPUs.
    pub fn load_spec(
        &self,
        case: &Case,
        connections: u32,
        duration: Duration,
        work_dir: &Path,
    ) -> LoadSpec {
        LoadSpec {
            base_url: String::new(),
            case: *case,
            connections,
            threads: self.threads,
            duration,
            rate: self.rate,
            cpus: None,
            work_dir: work_dir.to_path_buf(),
            streams: self.streams,
            upstream: None,
        }
    }
}
