//! `sluice-perf soak`: the hardening soak (issue 17). Minutes of load on one case while the config is
//! re-posted every `--interval` and a crowd of bad clients sits beside the good ones, then a report of:
//! - failed legitimate requests (the load generator's socket errors and non-2xx answers): goal 0;
//! - RSS and open fds of the gateway, sampled every `--sample`: goal flat (the last third of the run
//!   against the first third, so warm-up is not counted as growth);
//! - the crowd: how often the gateway closed each kind of bad client, which is what its timeouts
//!   (`client_header_timeout`, `client_body_timeout`) are for.
//!
//! The crowd's kinds, in turn: a slowloris head (one more header byte every few seconds), a stalled body
//! (a `Content-Length` promised, a few bytes sent, then nothing), and a silent connection (nothing
//! sent). A closed crowd connection is opened again at once, so the crowd stays at full size.

use crate::cases::{config, Case};
use crate::driver::Driver;
use crate::loadgen::LoadSpec;
use crate::reload::{load_while_reposting, rss_kib};
use crate::target::process::{self, free_addr, Launch};
use crate::{progress, target};
use anyhow::{Context, Result};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Options of `sluice-perf soak`.
#[derive(clap::Args, Debug, Clone)]
pub struct SoakArgs {
    /// The sluice to soak: `bin:PATH` or `git:REF`.
    #[arg(long, default_value = "bin:target/release/sluice")]
    pub target: String,
    /// The case under load (any `gen-config` case, `name@routes[/consumers]`).
    #[arg(long, default_value = "rl-key-auth@100")]
    pub case: String,
    /// Minutes of load.
    #[arg(long, default_value_t = 10.0)]
    pub minutes: f64,
    /// Seconds between re-posts of the config.
    #[arg(long, default_value_t = 5.0)]
    pub interval: f64,
    /// Bad clients kept open beside the load.
    #[arg(long, default_value_t = 300)]
    pub crowd: usize,
    /// Seconds between RSS and fd samples.
    #[arg(long, default_value_t = 10.0)]
    pub sample: f64,
    /// Load-generator connections.
    #[arg(long, default_value_t = 50)]
    pub connections: u32,
    /// Where the gateway and the rest (upstream, load) run.
    #[command(flatten)]
    pub cpus: crate::runner::Cpus,
    /// Where the config, logs and the report go.
    #[arg(long, default_value = "target/sluice-perf/soak")]
    pub out: PathBuf,
}

/// Runs the soak and returns the Markdown report (also written to `out/soak.md`).
pub fn run(args: &SoakArgs) -> Result<String> {
    let (out, bin) = target::sluice_in(&args.out, &args.target, "soak")?;
    let mut driver = args.cpus.driver()?;
    let upstream = driver.start_upstream(2)?;
    let case = Case::parse(&args.case)?;
    // JSON, as `POST /config` is sent with a JSON content type.
    let body = config::render(&config::build(&case, &upstream), config::Format::Json)?;
    let config_path = out.join("config.json");
    std::fs::write(&config_path, &body)?;
    let dir = out.join("sluice");
    let _ = std::fs::remove_dir_all(&dir);
    let prefix = driver.gateway_prefix();
    let proxy = free_addr("127.0.0.1")?;
    let launch = Launch {
        prefix: &prefix,
        proxy,
        upstream: &upstream,
        workers: driver.workers(),
        dir: &dir,
        tls: None,
    };
    progress(format!("starting sluice on {case}"));
    let running = process::start_sluice(&bin, Some(&config_path), &launch, "warn")?;
    let admin = running.admin.context("sluice has an admin address")?;
    let pid = running.pid();
    let spec = LoadSpec {
        base_url: String::new(),
        case,
        connections: args.connections,
        threads: 1,
        duration: Duration::from_secs_f64(args.minutes * 60.0),
        rate: None,
        cpus: None,
        work_dir: out.clone(),
        streams: 1,
        upstream: None,
    };

    progress(format!(
        "{} min of load, a re-post every {} s, {} bad clients beside it",
        args.minutes, args.interval, args.crowd
    ));
    let done = AtomicBool::new(false);
    let interval = Duration::from_secs_f64(args.interval);
    let (load, crowd, samples) = std::thread::scope(|s| {
        let crowd = s.spawn(|| Crowd::new(proxy, args.crowd).run(&done));
        let sampler = s.spawn(|| sample(pid, Duration::from_secs_f64(args.sample), &done));
        let load = load_while_reposting(
            &mut driver,
            &running,
            &spec,
            admin,
            body.as_bytes(),
            interval,
        );
        done.store(true, Ordering::Relaxed);
        let crowd = crowd.join().map_err(|_| anyhow::anyhow!("crowd panicked"));
        let samples = sampler
            .join()
            .map_err(|_| anyhow::anyhow!("sampler panicked"));
        (load, crowd, samples)
    });
    let ((load, reposts), crowd, samples) = (load?, crowd?, samples?);

    let (rss, fds) = (trend(&samples, |s| s.rss_kib), trend(&samples, |s| s.fds));
    let lines = [
        format!(
            "case {case}, sluice `{}`, {} min, gateway CPUs {}, load CPUs {}",
            args.target, args.minutes, args.cpus.gateway_cpus, args.cpus.load_cpus
        ),
        format!(
            "legitimate requests: {} at {:.0} RPS; failed: {} socket errors, {} non-2xx — goal 0",
            load.requests, load.rps, load.errors, load.non_2xx
        ),
        format!("config re-posted {reposts} times (every {} s), each answered 201", args.interval),
        format!(
            "RSS {} KiB → {} KiB (first third's median → last third's, {:+.1}%), max {} KiB — goal flat",
            rss.0, rss.1, rss.2, rss.3
        ),
        format!(
            "open fds {} → {} ({:+.1}%), max {} — goal flat (the crowd holds {} of them)",
            fds.0, fds.1, fds.2, fds.3, args.crowd
        ),
        format!(
            "crowd closed by the gateway: {} slowloris heads, {} stalled bodies, {} silent connections ({} answered with bytes first)",
            crowd.closed[0], crowd.closed[1], crowd.closed[2], crowd.answered
        ),
    ];
    let report = format!(
        "# sluice-perf soak\n\n{}\nSamples (s, RSS KiB, fds): {}\n",
        lines.iter().map(|l| format!("- {l}\n")).collect::<String>(),
        samples
            .iter()
            .map(|s| format!("{:.0}/{}/{}", s.at_s, s.rss_kib, s.fds))
            .collect::<Vec<_>>()
            .join(" ")
    );
    std::fs::write(out.join("soak.md"), &report)?;
    Ok(report)
}

/// One reading of the gateway's process.
struct Sample {
    at_s: f64,
    rss_kib: u64,
    fds: u64,
}

/// Samples RSS and open fds every `every` until `done`.
fn sample(pid: u32, every: Duration, done: &AtomicBool) -> Vec<Sample> {
    let started = Instant::now();
    let mut out = Vec::new();
    while !done.load(Ordering::Relaxed) {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
        out.push(Sample {
            at_s: started.elapsed().as_secs_f64(),
            rss_kib: rss_kib(pid),
            fds,
        });
        let until = Instant::now() + every;
        while Instant::now() < until && !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    out
}

/// (first third's median, last third's median, change in %, max) of one figure.
fn trend(samples: &[Sample], f: impl Fn(&Sample) -> u64) -> (u64, u64, f64, u64) {
    let median = |part: &[Sample]| {
        let mut v: Vec<u64> = part.iter().map(&f).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    let third = (samples.len() / 3).max(1).min(samples.len());
    let (first, last) = (
        median(&samples[..third]),
        median(&samples[samples.len() - third..]),
    );
    let max = samples.iter().map(&f).max().unwrap_or(0);
    (
        first,
        last,
        (last as f64 / first.max(1) as f64 - 1.0) * 100.0,
        max,
    )
}

/// The bad clients: one connection per slot, each slot of one kind, reopened when the gateway closes it.
struct Crowd {
    proxy: SocketAddr,
    slots: Vec<Option<(TcpStream, Instant)>>,
    closed: [u64; 3],
    answered: u64,
}

/// How often a slowloris sends its next header byte.
const TRICKLE: Duration = Duration::from_secs(5);

impl Crowd {
    fn new(proxy: SocketAddr, size: usize) -> Crowd {
        Crowd {
            proxy,
            slots: (0..size).map(|_| None).collect(),
            closed: [0; 3],
            answered: 0,
        }
    }

    /// Keeps the crowd open until `done`; returns itself with its counts.
    fn run(mut self, done: &AtomicBool) -> Crowd {
        while !done.load(Ordering::Relaxed) {
            for i in 0..self.slots.len() {
                self.tend(i);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        self
    }

    /// Slot `i`: opened when empty; a slowloris trickles; a closed connection is counted and dropped.
    fn tend(&mut self, i: usize) {
        let kind = i % 3;
        let Some((stream, last)) = &mut self.slots[i] else {
            self.slots[i] = self.open(kind);
            return;
        };
        let mut buf = [0u8; 512];
        let closed = match stream.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => {
                self.answered += 1;
                true
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(_) => true,
        };
        if closed {
            self.closed[kind] += 1;
            self.slots[i] = None;
        } else if kind == 0 && last.elapsed() >= TRICKLE {
            *last = Instant::now();
            if stream.write_all(b"x").is_err() {
                self.closed[kind] += 1;
                self.slots[i] = None;
            }
        }
    }

    /// A new bad client of `kind`, its opening bytes sent (None when the gateway refused it).
    fn open(&self, kind: usize) -> Option<(TcpStream, Instant)> {
        let mut s = TcpStream::connect_timeout(&self.proxy, Duration::from_secs(1)).ok()?;
        let opening: &[u8] = match kind {
            0 => b"GET /r0 HTTP/1.1\r\nHost: soak\r\nX-Slow: ",
            // Authenticated in the key-auth cases, so the body goes upstream and stalls there.
            1 => b"POST /r0 HTTP/1.1\r\nHost: soak\r\napikey: key-0\r\nContent-Length: 1000\r\n\r\nonly-this",
            _ => b"",
        };
        s.write_all(opening).ok()?;
        s.set_nonblocking(true).ok()?;
        Some((s, Instant::now()))
    }
}
