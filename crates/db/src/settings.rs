//! Kong's `pg_*` node settings and the connection pool built from them.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tokio_postgres::NoTls;

/// How a node reaches PostgreSQL (Kong's names and defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct PgSettings {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub database: String,
    /// The schema the tables live in (`search_path`); None is the server's default (`public`).
    pub schema: Option<String>,
    pub ssl: bool,
    pub ssl_verify: bool,
    /// Connect and pool-wait timeout (`pg_timeout`, 5000 ms).
    pub timeout: Duration,
    /// Connections per node (`pg_pool_size`).
    pub pool_size: usize,
}

impl Default for PgSettings {
    fn default() -> PgSettings {
        PgSettings {
            host: "127.0.0.1".into(),
            port: 5432,
            user: "kong".into(),
            password: None,
            database: "kong".into(),
            schema: None,
            ssl: false,
            ssl_verify: false,
            timeout: Duration::from_millis(5000),
            pool_size: 4,
        }
    }
}

impl PgSettings {
    /// The client configuration for one connection.
    pub fn client_config(&self) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.database)
            .connect_timeout(self.timeout)
            .application_name("sluice");
        if let Some(p) = &self.password {
            c.password(p);
        }
        if let Some(schema) = &self.schema {
            c.options(format!("-c search_path={schema}"));
        }
        c
    }

    /// `host:port/database`, for messages.
    pub fn describe(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, self.database)
    }

    /// Refuses settings this build cannot honour, with the reason.
    pub fn check(&self) -> Result<(), String> {
        if self.ssl {
            return Err(
                "pg_ssl = on is not supported yet: connect over a trusted network or a local \
                        TLS-terminating proxy"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The node's connection pool. Connections are made on first use, so building it never blocks or fails
/// on an unreachable database.
pub fn connect(settings: &PgSettings) -> Result<Pool, String> {
    settings.check()?;
    let manager = Manager::from_config(
        settings.client_config(),
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(settings.pool_size.max(1))
        .wait_timeout(Some(settings.timeout))
        .create_timeout(Some(settings.timeout))
        .recycle_timeout(Some(settings.timeout))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| e.to_string())
}
