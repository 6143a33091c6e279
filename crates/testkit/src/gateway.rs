//! Runs the real `sluice` binary for integration tests, on free ports, with a temp prefix; on 127.0.0.1,
//! or in a network namespace on its address there ([`GatewayBuilder::netns`]).

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The gateway's listening ports.
struct Ports {
    proxy: u16,
    admin: u16,
    status: u16,
    proxy_tls: u16,
    /// `cluster_listen`, which only a control plane binds.
    cluster: u16,
}

impl Ports {
    /// Five distinct free ports: all are bound at once before any is released, so the kernel can't hand the
    /// same port out twice (picking one port at a time did, and a gateway then failed to listen on its status
    /// port).
    fn free() -> Ports {
        let listeners: [TcpListener; 5] =
            std::array::from_fn(|_| TcpListener::bind("127.0.0.1:0").expect("free port"));
        let [proxy, admin, status, proxy_tls, cluster] =
            listeners.map(|l| l.local_addr().expect("local addr").port());
        Ports {
            proxy,
            admin,
            status,
            proxy_tls,
            cluster,
        }
    }
}

/// Options for a gateway under test.
pub struct GatewayBuilder {
    bin: PathBuf,
    config: Option<String>,
    env: Vec<(String, String)>,
    args: Vec<String>,
    workers: usize,
    wait_ready: bool,
    prefix: Option<tempfile::TempDir>,
    netns: Option<(String, IpAddr)>,
}

impl GatewayBuilder {
    /// The declarative config, written to `<prefix>/kong.yml` and passed with `--config`.
    pub fn config_yaml(mut self, yaml: &str) -> Self {
        self.config = Some(yaml.to_string());
        self
    }

    /// Start without `--config` (serve from the store, or nothing).
    pub fn no_config(mut self) -> Self {
        self.config = None;
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Don't wait for `/status/ready` (only for the status listener to answer).
    pub fn expect_not_ready(mut self) -> Self {
        self.wait_ready = false;
        self
    }

    /// Re-use an existing prefix directory (restart-from-store tests).
    pub fn prefix_dir(mut self, dir: tempfile::TempDir) -> Self {
        self.prefix = Some(dir);
        self
    }

    /// Runs the binary in the network namespace `ns` (`ip netns exec`), listening on `ip`, its address
    /// there: the URLs and the readiness probe use that address (see [`crate::Lan`]).
    pub fn netns(mut self, ns: &str, ip: IpAddr) -> Self {
        self.netns = Some((ns.into(), ip));
        self
    }

    /// Starts the process and waits until it is ready; panics with its log if it never is.
    pub fn start(self) -> Gateway {
        let (netns, host) = match self.netns {
            Some((ns, ip)) => (Some(ns), ip),
            None => (None, IpAddr::V4(Ipv4Addr::LOCALHOST)),
        };
        let prefix = match self.prefix {
            Some(p) => p,
            None => tempfile::tempdir().expect("tempdir"),
        };
        let mut gw = Gateway {
            bin: self.bin,
            prefix,
            ports: Ports::free(),
            host,
            netns,
            config: self.config.is_some(),
            env: self.env,
            args: self.args,
            workers: self.workers,
            child: None,
        };
        if let Some(yaml) = &self.config {
            std::fs::write(gw.prefix().join("kong.yml"), yaml).expect("write config");
        }
        gw.spawn(self.wait_ready);
        gw
    }
}

/// A running `sluice start`. Dropping it kills the process.
pub struct Gateway {
    bin: PathBuf,
    prefix: tempfile::TempDir,
    ports: Ports,
    /// The address it listens on.
    host: IpAddr,
    /// The network namespace it runs in (None: this one).
    netns: Option<String>,
    config: bool,
    env: Vec<(String, String)>,
    args: Vec<String>,
    workers: usize,
    child: Option<Child>,
}

impl Gateway {
    pub fn builder(bin: impl AsRef<Path>) -> GatewayBuilder {
        GatewayBuilder {
            bin: bin.as_ref().to_path_buf(),
            config: None,
            env: Vec::new(),
            args: Vec::new(),
            workers: 2,
            wait_ready: true,
            prefix: None,
            netns: None,
        }
    }

    /// Starts the binary and waits for its status listener. Ports are picked free and released just
    /// before the start, so another process (any test's ephemeral socket) can take one in between:
    /// then the start is retried on fresh ports rather than failing the test.
    fn spawn(&mut self, wait_ready: bool) {
        for _ in 0..3 {
            match self.try_spawn(wait_ready) {
                Ok(()) => return,
                Err(log) if log.contains("Address already in use") => self.ports = Ports::free(),
                Err(log) => panic!("sluice exited before it was ready:\n{log}"),
            }
        }
        panic!(
            "sluice could not bind its ports in 3 tries:\n{}",
            self.log()
        );
    }

    /// One start; Err(log) when the process exited before it was ready.
    fn try_spawn(&mut self, wait_ready: bool) -> Result<(), String> {
        let log = std::fs::File::create(self.log_path()).expect("log file");
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", ns]).arg(&self.bin);
                cmd
            }
            None => Command::new(&self.bin),
        };
        cmd.arg("start");
        let host = self.host;
        if self.config {
            cmd.arg("--config").arg(self.prefix().join("kong.yml"));
        }
        cmd.args(&self.args)
            .env(
                "SLUICE_PROXY_LISTEN",
                format!(
                    "{host}:{}, {host}:{} ssl http2",
                    self.ports.proxy, self.ports.proxy_tls
                ),
            )
            .env(
                "SLUICE_ADMIN_LISTEN",
                format!("{host}:{}", self.ports.admin),
            )
            .env(
                "SLUICE_STATUS_LISTEN",
                format!("{host}:{}", self.ports.status),
            )
            .env(
                "SLUICE_CLUSTER_LISTEN",
                format!("{host}:{}", self.ports.cluster),
            )
            .env("SLUICE_PREFIX", self.prefix.path())
            .env("SLUICE_WORKER_THREADS", self.workers.to_string())
            .env("SLUICE_LOG_LEVEL", "info")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        self.child = Some(cmd.spawn().expect("spawn sluice"));
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(format!("exit {status}:\n{}", self.log()));
            }
            if let Some(code) = status_code((self.host, self.ports.status), "/status/ready") {
                if code == 200 || !wait_ready {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                panic!("sluice was not ready within 15 s:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn proxy_url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.host, self.ports.proxy)
    }

    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.host, self.ports.admin)
    }

    pub fn status_url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.host, self.ports.status)
    }

    pub fn proxy_port(&self) -> u16 {
        self.ports.proxy
    }

    /// The `ssl http2` proxy listener.
    pub fn proxy_tls_port(&self) -> u16 {
        self.ports.proxy_tls
    }

    /// The `cluster_listen` port a control plane binds (unless the test's own settings name another).
    pub fn cluster_port(&self) -> u16 {
        self.ports.cluster
    }

    pub fn admin_port(&self) -> u16 {
        self.ports.admin
    }

    pub fn prefix(&self) -> &Path {
        self.prefix.path()
    }

    fn log_path(&self) -> PathBuf {
        self.prefix().join("sluice.log")
    }

    /// Everything the process wrote to stdout and stderr.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Sends a signal by name (`HUP`, `TERM`, `KILL`, ...) with the `kill` command.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status();
        assert!(ok.is_ok_and(|s| s.success()), "kill -{sig} failed");
    }

    /// Waits up to `timeout` for the process to exit and returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            if let Some(status) = child.try_wait().ok().flatten() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops (SIGKILL) and starts again with the same prefix and ports (fresh ones only if another process
    /// took them meanwhile).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn(true);
    }

    /// Stops the process at once (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Keeps the prefix directory (e.g. to start another gateway on the same store) and stops this one.
    pub fn into_prefix(mut self) -> tempfile::TempDir {
        self.kill();
        let dir = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.prefix, dir)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            if c.try_wait().ok().flatten().is_some() {
                return;
            }
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if c.try_wait().ok().flatten().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A blocking GET to `addr`, returning the status code (no HTTP client needed before readiness).
fn status_code(addr: (IpAddr, u16), path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr.into(), Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = [0u8; 32];
    let n = s.read(&mut buf).ok()?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
