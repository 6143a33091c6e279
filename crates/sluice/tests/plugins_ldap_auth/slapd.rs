//! A real OpenLDAP server for the ldap-auth tests: Debian's `slapd`, started in the foreground on two free
//! ports (`ldap://` with StartTLS, and `ldaps://`) with its own `slapd.conf`, a fresh mdb database loaded with
//! `slapadd`, and a self-signed certificate; killed when dropped. Without `slapd` the test fails and says how
//! to install it.

use sluice_testkit::{free_tcp_port, self_signed};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BASE_DN: &str = "ou=scientists,dc=ldap,dc=test";
const ADMIN_DN: &str = "cn=admin,dc=ldap,dc=test";
const ADMIN_PASSWORD: &str = "admin-secret";
const INSTALL: &str = "DEBIAN_FRONTEND=noninteractive apt-get install -y slapd ldap-utils";

/// The users the directory starts with: (uid, password).
pub const USERS: &[(&str, &str)] = &[("einstein", "password"), ("curie", "radium")];

pub struct Slapd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// Plain LDAP (StartTLS offered).
    pub port: u16,
    /// LDAP over TLS.
    pub tls_port: u16,
}

/// A program of the `slapd` / `ldap-utils` packages, from PATH or `/usr/sbin`.
fn program(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| panic!("`{name}` not found: install OpenLDAP with `{INSTALL}`"))
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tls_only`: simple binds without TLS are refused (`Confidentiality required`).
fn config(dir: &Path, tls_only: bool) -> String {
    let d = dir.display();
    let security = if tls_only {
        "security simple_bind=1\n"
    } else {
        ""
    };
    format!(
        "include /etc/ldap/schema/core.schema\n\
         include /etc/ldap/schema/cosine.schema\n\
         include /etc/ldap/schema/inetorgperson.schema\n\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         pidfile {d}/slapd.pid\n\
         TLSCertificateFile {d}/cert.pem\n\
         TLSCertificateKeyFile {d}/key.pem\n\
         {security}\
         database mdb\n\
         maxsize 10485760\n\
         suffix \"dc=ldap,dc=test\"\n\
         rootdn \"{ADMIN_DN}\"\n\
         rootpw {ADMIN_PASSWORD}\n\
         directory {d}/db\n"
    )
}

fn entries() -> String {
    let mut ldif = format!(
        "dn: dc=ldap,dc=test\nobjectClass: dcObject\nobjectClass: organization\no: test\ndc: ldap\n\n\
         dn: {BASE_DN}\nobjectClass: organizationalUnit\nou: scientists\n\n"
    );
    for (uid, password) in USERS {
        ldif.push_str(&format!(
            "dn: uid={uid},{BASE_DN}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\n\
             userPassword: {password}\n\n"
        ));
    }
    ldif
}

impl Slapd {
    pub fn start() -> Slapd {
        Self::start_with(false)
    }

    /// A server that refuses simple binds over plain LDAP (so a bind that passes used TLS).
    pub fn start_requiring_tls() -> Slapd {
        Self::start_with(true)
    }

    fn start_with(tls_only: bool) -> Slapd {
        // Asked first: without OpenLDAP the test fails here with the install command.
        program("slapd");
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = self_signed(&["localhost"]);
        std::fs::write(dir.path().join("cert.pem"), &cert.cert_pem).unwrap();
        std::fs::write(dir.path().join("key.pem"), &cert.key_pem).unwrap();
        std::fs::create_dir(dir.path().join("db")).unwrap();
        let conf = dir.path().join("slapd.conf");
        std::fs::write(&conf, config(dir.path(), tls_only)).unwrap();
        let ldif = dir.path().join("users.ldif");
        std::fs::write(&ldif, entries()).unwrap();
        run(Command::new(program("slapadd"))
            .arg("-f")
            .arg(&conf)
            .arg("-l")
            .arg(&ldif));
        let mut server = Slapd {
            child: None,
            dir,
            conf,
            port: free_tcp_port(),
            tls_port: free_tcp_port(),
        };
        server.spawn();
        server
    }

    /// Runs slapd on the server's ports: `-d 0` keeps it in the foreground (so the test owns the process)
    /// without debug output.
    fn spawn(&mut self) {
        let urls = format!(
            "ldap://127.0.0.1:{}/ ldaps://127.0.0.1:{}/",
            self.port, self.tls_port
        );
        let child = Command::new(program("slapd"))
            .arg("-f")
            .arg(&self.conf)
            .args(["-h", &urls, "-d", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn slapd");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Kills the server and starts it again on the same ports with the same directory.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Established TCP connections to the plain port, seen from the clients' side (`/proc/net/tcp`).
    pub fn clients(&self) -> usize {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        let remote = format!(":{:04X}", self.port);
        table
            .lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[2].ends_with(&remote) && f[3] == "01"
            })
            .count()
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            let up = [self.port, self.tls_port]
                .iter()
                .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok());
            if up {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "slapd exited: {status} (config in {})",
                    self.dir.path().display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "slapd did not listen on {} and {}",
            self.port, self.tls_port
        );
    }

    /// Sets `uid`'s password as the directory's administrator (`ldappasswd`).
    pub fn set_password(&self, uid: &str, password: &str) {
        run(Command::new(program("ldappasswd"))
            .args(["-x", "-H", &format!("ldap://127.0.0.1:{}", self.port)])
            .args(["-D", ADMIN_DN, "-w", ADMIN_PASSWORD, "-s", password])
            .arg(format!("uid={uid},{BASE_DN}")));
    }

    /// Kills the server (the directory stays until drop).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.kill();
    }
}
