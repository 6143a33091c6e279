//! Starting and stopping target processes: a sluice binary with its `SLUICE_*` settings, or nginx
//! from a generated config. Processes are stopped on drop, so an error never leaves one running.

use super::nginx;
use crate::cases::Protocol;
use anyhow::{bail, Context, Result};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a target may take to become ready (the large config takes a while to compile).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running target; stopped (SIGTERM, then SIGKILL after 3 s) on drop.
pub struct Running {
    /// The started process (nginx's master, or sluice).
    pub child: Child,
    /// Where the proxy listens.
    pub proxy: SocketAddr,
    /// Where sluice's Admin API listens (None for nginx).
    pub admin: Option<SocketAddr>,
    /// The target's log file.
    pub log: PathBuf,
    /// Stops the process if the run is interrupted.
    pub held: crate::interrupt::Held,
}

impl Running {
    /// The pid whose process tree is measured.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Stops a child gracefully (SIGTERM lets nginx's master stop its workers), then forcibly.
pub fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A free port on `ip` (bind port 0, read it back, release it). An address that is not local here
/// belongs to a network namespace of the netns driver, which is fresh: any port there is free.
pub fn free_addr(ip: &str) -> Result<SocketAddr> {
    match TcpListener::bind((ip, 0)) {
        Ok(l) => Ok(l.local_addr()?),
        Err(e) if e.kind() == std::io::ErrorKind::AddrNotAvailable => {
            static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(20_000);
            let port = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(SocketAddr::new(ip.parse()?, port))
        }
        Err(e) => Err(e.into()),
    }
}

/// How a target is launched: the command prefix (e.g. `taskset -c 0`, `ip netns exec ns`) is
/// given by the driver.
pub struct Launch<'a> {
    /// Program and arguments put in front of the target's own command.
    pub prefix: &'a [String],
    /// The address the proxy listens on.
    pub proxy: SocketAddr,
    /// The upstream, `host:port`.
    pub upstream: &'a str,
    /// Worker threads/processes (one per gateway CPU).
    pub workers: usize,
    /// A directory for this target's files (prefix, logs, config).
    pub dir: &'a Path,
    /// Certificate and key files: the proxy listens with TLS.
    pub tls: Option<(&'a Path, &'a Path)>,
}

fn command(prefix: &[String], program: &Path) -> Command {
    match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// Starts a sluice binary serving `config` (or, without one, the config in its store under
/// `launch.dir`), and waits for `GET /status/ready` to answer 200.
pub fn start_sluice(
    bin: &Path,
    config: Option<&Path>,
    launch: &Launch<'_>,
    log_level: &str,
) -> Result<Running> {
    start_sluice_with_env(bin, config, launch, log_level, &[])
}

/// [`start_sluice`] with more `SLUICE_*` settings in the environment (e.g. DB mode's).
pub fn start_sluice_with_env(
    bin: &Path,
    config: Option<&Path>,
    launch: &Launch<'_>,
    log_level: &str,
    env: &[(String, String)],
) -> Result<Running> {
    let ip = launch.proxy.ip().to_string();
    let (admin, status) = (free_addr(&ip)?, free_addr(&ip)?);
    std::fs::create_dir_all(launch.dir)?;
    let log = launch.dir.join("sluice.log");
    let out = std::fs::File::create(&log)?;
    let mut cmd = command(launch.prefix, bin);
    cmd.arg("start");
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    let listen = match launch.tls {
        Some((cert, key)) => {
            cmd.env("SLUICE_SSL_CERT", cert)
                .env("SLUICE_SSL_CERT_KEY", key);
            // Kong's default: `ssl` listeners offer HTTP/2 too (wrk speaks HTTP/1.1 and offers no ALPN).
            format!("{} http2 ssl", launch.proxy)
        }
        None => launch.proxy.to_string(),
    };
    let mut child = cmd
        .env("SLUICE_PROXY_LISTEN", listen)
        .env("SLUICE_ADMIN_LISTEN", admin.to_string())
        .env("SLUICE_STATUS_LISTEN", status.to_string())
        .env("SLUICE_PREFIX", launch.dir.join("prefix"))
        .env("SLUICE_WORKER_THREADS", launch.workers.to_string())
        .env("SLUICE_LOG_LEVEL", log_level)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let held = crate::interrupt::hold_process(child.id());
    wait_ready(status, "/status/ready", &mut child, &log)?;
    Ok(Running {
        held,
        child,
        proxy: launch.proxy,
        admin: Some(admin),
        log,
    })
}

/// Writes the nginx config for a case speaking `protocol` into the target's directory and starts nginx in
/// the foreground.
pub fn start_nginx(lua: bool, protocol: Protocol, launch: &Launch<'_>) -> Result<Running> {
    let modules = if lua {
        Some(nginx::lua_modules()?)
    } else {
        None
    };
    std::fs::create_dir_all(launch.dir.join("tmp"))?;
    let conf = launch.dir.join("nginx.conf");
    // Over TLS, and where the proxy listener speaks HTTP/2 only (gRPC over h2c), readiness is probed on
    // a second, plain HTTP/1.1 listener.
    let ready = match (launch.tls, protocol) {
        (None, Protocol::Http | Protocol::WebSocket) => launch.proxy,
        _ => free_addr(&launch.proxy.ip().to_string())?,
    };
    let text = nginx::config(&nginx::Peer {
        lua: modules.as_deref(),
        workers: launch.workers,
        root: launch.dir,
        listen: launch.proxy,
        ready,
        upstream: launch.upstream,
        tls: launch.tls,
        protocol,
    });
    std::fs::write(&conf, text)?;
    let log = launch.dir.join("error.log");
    let mut child = command(launch.prefix, &nginx::binary()?)
        .arg("-p")
        .arg(launch.dir)
        .arg("-c")
        .arg(&conf)
        .arg("-g")
        .arg("daemon off;")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting nginx")?;
    let held = crate::interrupt::hold_process(child.id());
    wait_ready(ready, "/__ready", &mut child, &log)?;
    Ok(Running {
        held,
        child,
        proxy: launch.proxy,
        admin: None,
        log,
    })
}

/// Polls `GET path` on `addr` until it answers 200, the process exits, or the timeout passes.
pub fn wait_ready(addr: SocketAddr, path: &str, child: &mut Child, log: &Path) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let tail = || std::fs::read_to_string(log).unwrap_or_default();
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            bail!(
                "target exited with {status} before it was ready; log {}:\n{}",
                log.display(),
                tail()
            );
        }
        if probe(addr, path) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop(child);
    bail!(
        "target not ready on {addr}{path} after {READY_TIMEOUT:?}; log {}:\n{}",
        log.display(),
        tail()
    )
}

/// One `GET` with `Connection: close`; true when the status is 200.
pub fn probe(addr: SocketAddr, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: perf\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).is_ok() && &buf[9..12] == b"200"
}
