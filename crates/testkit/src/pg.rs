//! PostgreSQL for DB-mode tests: a database of the test's own on the local server (made on creation,
//! dropped on drop, even while nodes are still connected), and a TCP relay between a node and the server
//! ([`PgRelay`], a [`crate::TcpRelay`]) that a test can cut and restore to play a database outage.
//!
//! The server is `SLUICE_TEST_PG_HOST`/`_PORT`/`_USER` (default 127.0.0.1, 5432, postgres, trust auth);
//! databases are made and dropped with `psql`.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's address and user.
pub fn pg_server() -> (String, u16, String) {
    let host = std::env::var("SLUICE_TEST_PG_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("SLUICE_TEST_PG_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(5432);
    let user = std::env::var("SLUICE_TEST_PG_USER").unwrap_or_else(|_| "postgres".into());
    (host, port, user)
}

/// A `psql` command on database `db` of the server (quiet, tuples only), to add `-c` arguments to.
pub fn psql_command(db: &str) -> Command {
    let (host, port, user) = pg_server();
    let mut cmd = Command::new("psql");
    cmd.args(["-h", &host, "-p", &port.to_string(), "-U", &user, "-d", db])
        .args(["-v", "ON_ERROR_STOP=1", "-tAq"]);
    cmd
}

/// Runs one statement with `psql` on database `db`; panics with psql's output when it fails.
pub fn psql(db: &str, sql: &str) -> String {
    let out = psql_command(db)
        .args(["-c", sql])
        .output()
        .expect("running psql (is the postgresql-client package installed?)");
    assert!(
        out.status.success(),
        "psql failed on {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A database of the test's own; dropped with its connections when this is dropped.
pub struct TestDb {
    pub name: String,
}

impl TestDb {
    pub fn create(prefix: &str) -> TestDb {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "sluice_{prefix}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        );
        psql("postgres", &format!("CREATE DATABASE {name}"));
        TestDb { name }
    }

    /// `SLUICE_*` settings that point a node or `sluice migrations` at this database (through `port`,
    /// e.g. a [`PgRelay`]'s, when given).
    pub fn env(&self, port: Option<u16>) -> Vec<(String, String)> {
        let (host, server_port, user) = pg_server();
        vec![
            ("SLUICE_DATABASE".into(), "postgres".into()),
            ("SLUICE_PG_HOST".into(), host),
            (
                "SLUICE_PG_PORT".into(),
                port.unwrap_or(server_port).to_string(),
            ),
            ("SLUICE_PG_USER".into(), user),
            ("SLUICE_PG_DATABASE".into(), self.name.clone()),
            ("SLUICE_PG_TIMEOUT".into(), "1000".into()),
        ]
    }

    /// One statement on this database.
    pub fn sql(&self, sql: &str) -> String {
        psql(&self.name, sql)
    }
}

impl TestDb {
    /// A database of its own, bootstrapped with `bin migrations bootstrap`.
    pub fn bootstrapped(bin: &str, prefix: &str) -> TestDb {
        let db = TestDb::create(prefix);
        let (code, out) = db.migrations(bin, &["bootstrap"]);
        assert_eq!(code, 0, "sluice migrations bootstrap: {out}");
        db
    }

    /// `bin migrations <args>` on this database: the exit code and what it printed.
    pub fn migrations(&self, bin: &str, args: &[&str]) -> (i32, String) {
        let out = Command::new(bin)
            .arg("migrations")
            .args(args)
            .envs(self.env(None))
            .output()
            .expect("run sluice migrations");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    /// A gateway in DB mode on this database (through `port`, e.g. a [`PgRelay`]'s, when given).
    pub fn gateway(&self, bin: &str, port: Option<u16>) -> crate::GatewayBuilder {
        let mut b = crate::Gateway::builder(bin).no_config();
        for (k, v) in self.env(port) {
            b = b.env(&k, &v);
        }
        b
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = psql_command("postgres")
            .args([
                "-c",
                &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
            ])
            .output();
    }
}

/// A relay to the PostgreSQL server ([`crate::TcpRelay::to_postgres`]).
pub type PgRelay = crate::TcpRelay;
