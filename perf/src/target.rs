//! What is measured: a sluice binary (`bin:<path>`), a git ref built on demand (`git:<ref>`), or a peer
//! (`nginx`, `nginx-lua`) configured from a template. Every target is started pinned to the gateway CPUs.

use anyhow::{anyhow, bail, Context, Result};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A target as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Bin(PathBuf),
    Git(String),
    Nginx,
    NginxLua,
}

impl Target {
    pub fn parse(s: &str) -> Result<Target> {
        Ok(match s {
            "nginx" => Target::Nginx,
            "nginx-lua" => Target::NginxLua,
            _ if s.starts_with("bin:") => Target::Bin(PathBuf::from(&s[4..])),
            _ if s.starts_with("git:") => Target::Git(s[4..].to_string()),
            _ => bail!("unknown target '{s}': use bin:<path>, git:<ref>, nginx or nginx-lua"),
        })
    }

    pub fn label(&self) -> String {
        match self {
            Target::Bin(p) => format!("bin:{}", p.display()),
            Target::Git(r) => format!("git:{r}"),
            Target::Nginx => "nginx".into(),
            Target::NginxLua => "nginx-lua".into(),
        }
    }

    /// Peers only run the no-plugin cases, so their ratios compare like with like.
    pub fn is_peer(&self) -> bool {
        matches!(self, Target::Nginx | Target::NginxLua)
    }
}

/// A started target; killed on drop.
pub struct Running {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Drop for Running {
    /// SIGTERM first, so nginx's master stops its workers; SIGKILL if it lingers.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn pinned(cpus: &str, program: &Path) -> Command {
    let mut cmd = Command::new("taskset");
    cmd.arg("-c").arg(cpus).arg(program);
    cmd
}

fn wait_http(port: u16, path: &str, child: &mut Child, log: &Path) -> Result<()> {
    use std::io::{Read, Write};
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            bail!(
                "target exited with {status}; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut buf = [0u8; 16];
            if s.read(&mut buf)
                .is_ok_and(|n| n >= 12 && &buf[9..12] == b"200")
            {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "target not ready on port {port}; log:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    )
}

/// Starts a sluice binary with `config` (Kong YAML/JSON) pinned to `cpus` with `workers` workers.
pub fn start_sluice(
    bin: &Path,
    config: &Path,
    dir: &Path,
    cpus: &str,
    workers: usize,
) -> Result<Running> {
    let (port, admin, status) = (free_port()?, free_port()?, free_port()?);
    let log = dir.join(format!("sluice-{port}.log"));
    let out = std::fs::File::create(&log)?;
    let mut child = pinned(cpus, bin)
        .arg("start")
        .arg("--config")
        .arg(config)
        .env("SLUICE_PROXY_LISTEN", format!("127.0.0.1:{port}"))
        .env("SLUICE_ADMIN_LISTEN", format!("127.0.0.1:{admin}"))
        .env("SLUICE_STATUS_LISTEN", format!("127.0.0.1:{status}"))
        .env("SLUICE_PREFIX", dir.join(format!("prefix-{port}")))
        .env("SLUICE_WORKER_THREADS", workers.to_string())
        .env("SLUICE_LOG_LEVEL", "warn")
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    wait_http(status, "/status/ready", &mut child, &log)?;
    Ok(Running { child, port, log })
}

/// Starts nginx as a plain reverse proxy (or with an empty Lua access handler) in front of `upstream`.
pub fn start_nginx(
    lua: bool,
    upstream: &str,
    dir: &Path,
    cpus: &str,
    workers: usize,
) -> Result<Running> {
    let port = free_port()?;
    let root = dir.join(format!("nginx-{port}"));
    std::fs::create_dir_all(root.join("logs"))?;
    let modules = if lua {
        let lua_module = "/usr/lib/nginx/modules/ngx_http_lua_module.so";
        if !Path::new(lua_module).exists() {
            bail!("nginx-lua needs libnginx-mod-http-lua (apt-get install libnginx-mod-http-lua)");
        }
        format!(
            "load_module /usr/lib/nginx/modules/ndk_http_module.so;\nload_module {lua_module};\n"
        )
    } else {
        String::new()
    };
    let access = if lua { "access_by_lua_block { }" } else { "" };
    let conf = format!(
        "{modules}worker_processes {workers};\npid {root}/nginx.pid;\nerror_log {root}/logs/error.log warn;\n\
         events {{ worker_connections 16384; }}\n\
         http {{\n  access_log off;\n  upstream u {{ server {upstream}; keepalive 256; keepalive_requests 1000000; }}\n\
           server {{\n    listen 127.0.0.1:{port} reuseport backlog=16384;\n    keepalive_requests 1000000;\n\
             location /__ready {{ return 200; }}\n\
             location / {{ {access} proxy_pass http://u; proxy_http_version 1.1; proxy_set_header Connection \"\"; }}\n  }}\n}}\n",
        root = root.display()
    );
    let conf_path = root.join("nginx.conf");
    std::fs::write(&conf_path, conf)?;
    let log = root.join("logs/error.log");
    let nginx = which("nginx")
        .ok_or_else(|| anyhow!("nginx is not installed (apt-get install nginx-light)"))?;
    let mut child = pinned(cpus, &nginx)
        .arg("-p")
        .arg(&root)
        .arg("-c")
        .arg(&conf_path)
        .arg("-g")
        .arg("daemon off;")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    wait_http(port, "/__ready", &mut child, &log)?;
    Ok(Running { child, port, log })
}

pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Builds `git:<ref>` of the repository in the current directory, cached by commit under `cache`.
pub fn build_git(reference: &str, cache: &Path) -> Result<PathBuf> {
    let sha = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", reference])
            .output()?
            .stdout,
    )?
    .trim()
    .to_string();
    if sha.is_empty() {
        bail!("unknown git ref '{reference}'");
    }
    let bin = cache.join(&sha).join("sluice");
    if bin.exists() {
        return Ok(bin);
    }
    let tree = cache.join(format!("worktree-{sha}"));
    let _ = Command::new("git")
        .args(["worktree", "remove", "--force"])
        .arg(&tree)
        .status();
    let ok = Command::new("git")
        .args(["worktree", "add", "--detach"])
        .arg(&tree)
        .arg(&sha)
        .status()?;
    if !ok.success() {
        bail!("git worktree add failed for {sha}");
    }
    eprintln!("building {reference} ({sha}) in {}", tree.display());
    let status = Command::new("cargo")
        .args(["build", "--release", "-p", "sluice"])
        .current_dir(&tree)
        .env("CARGO_TARGET_DIR", cache.join("target"))
        .status()?;
    if !status.success() {
        bail!("cargo build failed for {reference}");
    }
    std::fs::create_dir_all(cache.join(&sha))?;
    std::fs::copy(cache.join("target/release/sluice"), &bin)?;
    let _ = Command::new("git")
        .args(["worktree", "remove", "--force"])
        .arg(&tree)
        .status();
    Ok(bin)
}

/// CPU seconds (user + system) of a process and its direct children, and their peak RSS in kB.
pub fn usage(pid: u32) -> (f64, u64) {
    let mut pids = vec![pid];
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1))
                .and_then(|p| p.parse().ok());
            if ppid == Some(pid) {
                pids.push(child);
            }
        }
    }
    let mut cpu = 0.0;
    let mut rss = 0;
    for p in pids {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks: f64 = [11, 12]
            .iter()
            .filter_map(|i| fields.get(*i)?.parse::<f64>().ok())
            .sum();
        cpu += ticks / 100.0;
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        rss += status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    (cpu, rss)
}
