//! Kong's `pg_*` node settings and the connection pool built from them.

use crate::DbError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures_util::StreamExt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

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
        self.tls().map(|_| ())
    }

    /// TLS to the server when `pg_ssl` is on: the server's certificate is verified against the system's
    /// trusted CAs when `pg_ssl_verify` is on (Kong's `lua_ssl_trusted_certificate = system`), else any is
    /// accepted (the traffic is still encrypted).
    pub fn tls(&self) -> Result<Option<MakeRustlsConnect>, String> {
        if !self.ssl {
            return Ok(None);
        }
        let config = sluice_tls::client_config_without_alpn(self.ssl_verify)?;
        Ok(Some(MakeRustlsConnect::new((*config).clone())))
    }
}

/// One connection (not pooled), its I/O driven on a task of its own; for commands and the listener.
/// `on_message` sees each asynchronous message (notifications); the connection ends with an error or
/// when the client is dropped.
pub async fn connect_one(
    settings: &PgSettings,
    on_message: impl FnMut(AsyncMessage) + Send + 'static,
) -> Result<Client, DbError> {
    let unavailable = |e: tokio_postgres::Error| DbError::Unavailable(e.to_string());
    match settings.tls().map_err(DbError::Unavailable)? {
        None => {
            let (client, conn) = settings
                .client_config()
                .connect(NoTls)
                .await
                .map_err(unavailable)?;
            tokio::spawn(drive(conn, on_message));
            Ok(client)
        }
        Some(tls) => {
            let (client, conn) = settings
                .client_config()
                .connect(tls)
                .await
                .map_err(unavailable)?;
            tokio::spawn(drive(conn, on_message));
            Ok(client)
        }
    }
}

/// Polls a connection until it ends, handing its asynchronous messages to `on_message`.
async fn drive<S, T>(mut conn: Connection<S, T>, mut on_message: impl FnMut(AsyncMessage))
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
    while let Some(message) = messages.next().await {
        match message {
            Ok(m) => on_message(m),
            Err(e) => {
                tracing::warn!(error = %e, "database connection lost");
                break;
            }
        }
    }
}

/// The node's connection pool. Connections are made on first use, so building it never blocks or fails
/// on an unreachable database.
pub fn connect(settings: &PgSettings) -> Result<Pool, String> {
    let config = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = match settings.tls()? {
        None => Manager::from_config(settings.client_config(), NoTls, config),
        Some(tls) => Manager::from_config(settings.client_config(), tls, config),
    };
    Pool::builder(manager)
        .max_size(settings.pool_size.max(1))
        .wait_timeout(Some(settings.timeout))
        .create_timeout(Some(settings.timeout))
        .recycle_timeout(Some(settings.timeout))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| e.to_string())
}
