//! The local driver: every process on this machine, on 127.0.0.1, pinned with `taskset -c`.

use super::netns::Namespaces;
use super::{Driver, Usage};
use crate::cases::Case;
use crate::loadgen::{self, LoadSpec};
use crate::procfs;
use crate::results::LoadResult;
use crate::target::process::{self, free_addr, Launch, Running};
use crate::target::{Resolved, Target};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// Processes on this machine, pinned to CPU sets.
pub struct Local {
    gateway_cpus: String,
    load_cpus: String,
    upstream: Option<(Child, crate::interrupt::Held)>,
    upstream_listen: Option<String>,
    /// Certificate and key files when the load goes over TLS.
    tls: Option<(PathBuf, PathBuf)>,
    /// Set for the netns driver: where the gateway and the upstream run.
    net: Option<Namespaces>,
    notes: Vec<String>,
}

impl Local {
    /// A driver pinning targets to `gateway_cpus` and the upstream and load to `load_cpus`
    /// (`taskset -c` lists such as `0` or `2-3`).
    pub fn new(gateway_cpus: &str, load_cpus: &str) -> Result<Self> {
        for list in [gateway_cpus, load_cpus] {
            procfs::parse_cpu_list(list).with_context(|| format!("bad CPU list `{list}`"))?;
        }
        Ok(Local {
            gateway_cpus: gateway_cpus.into(),
            load_cpus: load_cpus.into(),
            upstream: None,
            upstream_listen: None,
            tls: None,
            net: None,
            notes: vec![],
        })
    }

    /// Runs the gateway and the upstream in network namespaces of their own (the netns driver).
    pub fn use_namespaces(&mut self) -> Result<()> {
        self.net = Some(Namespaces::create()?);
        Ok(())
    }

    /// A listen address for the gateway or the upstream.
    fn listen_addr(&self, upstream: bool) -> Result<std::net::SocketAddr> {
        let ip = match &self.net {
            Some(n) if upstream => n.upstream_ip.to_string(),
            Some(n) => n.gateway_ip.to_string(),
            None => "127.0.0.1".into(),
        };
        free_addr(&ip)
    }

    /// `ip netns exec <ns>` for the netns driver, nothing otherwise.
    fn ns_prefix(&self, upstream: bool) -> Vec<String> {
        match &self.net {
            Some(n) if upstream => Namespaces::exec_prefix(&n.upstream_ns),
            Some(n) => Namespaces::exec_prefix(&n.gateway_ns),
            None => Vec::new(),
        }
    }

    /// Serves every target over TLS with one ECDSA P-256 certificate generated under `dir`, so the
    /// gateways compare on equal terms.
    pub fn use_tls(&mut self, dir: &Path) -> Result<()> {
        let certs = dir.join("tls");
        sluice_tls::default_pair(&certs).map_err(|e| anyhow::anyhow!("{e}"))?;
        self.tls = Some((
            certs.join(sluice_tls::DEFAULT_CERT_FILE),
            certs.join(sluice_tls::DEFAULT_KEY_FILE),
        ));
        Ok(())
    }

    /// Worker count for targets: one per gateway CPU.
    pub fn workers(&self) -> usize {
        procfs::parse_cpu_list(&self.gateway_cpus).map_or(1, |s| s.len())
    }

    fn check(&mut self, pid: u32, what: &str, cpus: &str) {
        if let Some(w) = procfs::check_pinning(pid, what, cpus) {
            crate::progress(format!("warning: {w}"));
            self.notes.push(w);
        }
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some((mut c, _held)) = self.upstream.take() {
            process::stop(&mut c);
        }
    }
}

impl Driver for Local {
    fn name(&self) -> &'static str {
        match self.net {
            Some(_) => "netns",
            None => "local",
        }
    }

    fn start_upstream(&mut self, body_size: usize) -> Result<String> {
        let addr = self.listen_addr(true)?;
        let me = std::env::current_exe().context("locating sluice-perf")?;
        let mut words = self.ns_prefix(true);
        words.extend(["taskset".into(), "-c".into(), self.load_cpus.clone()]);
        let mut child = std::process::Command::new(&words[0]);
        child.args(&words[1..]).arg(&me);
        let mut child = child
            .arg("upstream")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--body-size")
            .arg(body_size.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the upstream")?;
        let held = crate::interrupt::hold_process(child.id());
        let log = std::env::temp_dir().join("sluice-perf-upstream.log");
        let ready = process::wait_ready(addr, "/", &mut child, &log);
        let pid = child.id();
        self.upstream = Some((child, held));
        ready?;
        self.upstream_listen = Some(addr.to_string());
        self.check(pid, "upstream", &self.load_cpus.clone());
        Ok(addr.to_string())
    }

    fn start_target(
        &mut self,
        target: &Resolved,
        case: &Case,
        config: &Path,
        dir: &Path,
    ) -> Result<Running> {
        let upstream = self.upstream_addr()?;
        let prefix = self.gateway_prefix();
        let launch = Launch {
            prefix: &prefix,
            proxy: self.listen_addr(false)?,
            upstream: &upstream,
            workers: self.workers(),
            dir,
            tls: self.tls.as_ref().map(|(c, k)| (c.as_path(), k.as_path())),
        };
        let running = match (&target.target, &target.bin) {
            (Target::Nginx, _) => process::start_nginx(false, case.kind.protocol(), &launch)?,
            (Target::NginxLua, _) => process::start_nginx(true, case.kind.protocol(), &launch)?,
            (_, Some(bin)) => process::start_sluice(bin, Some(config), &launch, "warn")?,
            (t, None) => anyhow::bail!("target {} has no binary", t.label()),
        };
        self.check_gateway_pinning(running.pid(), &target.target.label());
        Ok(running)
    }

    fn run_load(&mut self, running: &Running, spec: &LoadSpec) -> Result<LoadResult> {
        let mut spec = spec.clone();
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        spec.base_url = format!("{scheme}://{}", running.proxy);
        spec.cpus = Some(self.load_cpus.clone());
        spec.upstream = self.upstream_listen.clone();
        loadgen::run(&spec)
    }

    fn usage(&self, running: &Running) -> Usage {
        Usage {
            cpu_s: procfs::tree_cpu_seconds(running.pid()),
            minor_faults: procfs::tree_minor_faults(running.pid()),
            peak_rss_kib: procfs::tree_peak_rss_kib(running.pid()),
        }
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

impl Local {
    /// The command prefix that pins a target to the gateway CPUs.
    pub fn gateway_prefix(&self) -> Vec<String> {
        let mut words = self.ns_prefix(false);
        words.extend(["taskset".into(), "-c".into(), self.gateway_cpus.clone()]);
        words
    }

    /// Checks (and notes) that every process of `pid`'s tree got the gateway CPUs.
    pub fn check_gateway_pinning(&mut self, pid: u32, what: &str) {
        let cpus = self.gateway_cpus.clone();
        for p in procfs::tree(pid) {
            self.check(p, what, &cpus);
        }
    }

    pub fn upstream_addr(&self) -> Result<String> {
        self.upstream_listen
            .clone()
            .context("start_upstream was not called")
    }
}
