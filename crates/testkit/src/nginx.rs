//! Debian's nginx as a reference peer for differential tests: a `proxy_pass` to one upstream with the
//! proxy settings Kong's own nginx template uses (HTTP/1.1 and keep-alive upstream, request buffering on,
//! no body size limit). Started on 127.0.0.1 with its own prefix, stopped on drop. [`NginxPeer::start_h2c`]
//! listens for HTTP/2 with prior knowledge instead (nginx's plain `listen ... http2`), for the h2 vectors.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running nginx in front of one upstream.
pub struct NginxPeer {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

/// The nginx binary: Debian installs it in /usr/sbin. Tests that need it fail with the install command
/// when it is missing (scripts/test.sh installs it).
fn binary() -> std::path::PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
        .expect("nginx is not installed: apt-get install -y nginx-light (scripts/test.sh does)")
}

impl NginxPeer {
    /// nginx on a free port of 127.0.0.1, proxying everything to `127.0.0.1:upstream_port`.
    pub fn start(upstream_port: u16) -> NginxPeer {
        NginxPeer::launch(upstream_port, "")
    }

    /// The same nginx speaking h2c with prior knowledge on its port (and no HTTP/1.1 there).
    pub fn start_h2c(upstream_port: u16) -> NginxPeer {
        NginxPeer::launch(upstream_port, " http2")
    }

    fn launch(upstream_port: u16, listen_flags: &str) -> NginxPeer {
        let dir = tempfile::tempdir().expect("nginx prefix");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let root = dir.path().display();
        let conf = format!(
            "worker_processes 1;\n\
             daemon off;\n\
             master_process off;\n\
             pid {root}/nginx.pid;\n\
             error_log {root}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n\
               access_log off;\n\
               client_body_temp_path {root}/body;\n\
               proxy_temp_path {root}/proxy;\n\
               fastcgi_temp_path {root}/fastcgi;\n\
               uwsgi_temp_path {root}/uwsgi;\n\
               scgi_temp_path {root}/scgi;\n\
               client_max_body_size 0;\n\
               upstream up {{ server 127.0.0.1:{upstream_port}; keepalive 16; }}\n\
               server {{\n\
                 listen 127.0.0.1:{port}{listen_flags};\n\
                 location / {{\n\
                   proxy_pass http://up;\n\
                   proxy_http_version 1.1;\n\
                   proxy_set_header Connection \"\";\n\
                   proxy_set_header Host $http_host;\n\
                 }}\n\
               }}\n\
             }}\n"
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let child = Command::new(binary())
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not listen on {port}: {}",
                std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        NginxPeer {
            port,
            child,
            _dir: dir,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for NginxPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
