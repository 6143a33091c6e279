//! A small Redis client for the counters the rate-limiting plugins keep on Redis: pipelined connections
//! over TCP or TLS, commands written straight into the output buffer, replies read as numbers.
//!
//! It does what those plugins need and nothing else: connect (with Kong's `redis` record: TLS with or
//! without verification, `AUTH` with or without a username, `SELECT`), send commands in order on one
//! connection and read their replies in order, each call until its deadline (one timer per connection).
//! Which connection to use, the deadlines and reconnecting are the caller's (see
//! `builtin::rate_limiting::redis`). Built because the `redis` crate's multiplexed connection
//! cost about as many instructions per call as the rest of a proxied request.

mod connection;
pub mod resp;

pub use connection::Connection;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The connection failed (I/O, a byte stream that is not RESP): it is closed, a new one may work.
    Broken(String),
    /// Redis answered with an error (e.g. `NOSCRIPT ...`, `WRONGPASS ...`).
    Reply(String),
    /// The call's deadline passed before its replies came (the connection may still be fine, or hung).
    TimedOut,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Broken(why) | Error::Reply(why) => f.write_str(why),
            Error::TimedOut => f.write_str("redis did not answer in time"),
        }
    }
}

/// Where to connect and how to log in.
#[derive(Clone)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    pub database: i64,
    /// Set for TLS: the client config (verifying the server or not).
    pub tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tls = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        write!(f, "{tls}://{}:{}/{}", self.host, self.port, self.database)
    }
}

impl Endpoint {
    /// A new connection, logged in and on its database. The caller bounds the time it may take.
    pub async fn connect(&self) -> Result<Connection, Error> {
        let broken = |what: &str, e: std::io::Error| Error::Broken(format!("{what} {self:?}: {e}"));
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| broken("connecting to", e))?;
        tcp.set_nodelay(true)
            .map_err(|e| broken("connecting to", e))?;
        let connection = match &self.tls {
            None => Connection::start(tcp),
            Some(config) => {
                let name = ServerName::try_from(self.host.clone())
                    .map_err(|_| Error::Broken(format!("'{}' is not a server name", self.host)))?;
                let tls = TlsConnector::from(config.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| broken("TLS handshake with", e))?;
                Connection::start(tls)
            }
        };
        self.log_in(&connection).await?;
        Ok(connection)
    }

    /// `AUTH` (Redis 6's form with a username when there is one) and `SELECT`, in one round trip.
    async fn log_in(&self, connection: &Connection) -> Result<(), Error> {
        let auth = self.password.as_deref().map(|password| {
            let user = self.username.as_deref();
            (user, password)
        });
        let select = self.database != 0;
        let replies = usize::from(auth.is_some()) + usize::from(select);
        if replies == 0 {
            return Ok(());
        }
        connection
            .call(
                replies,
                None,
                |out| {
                    if let Some((user, password)) = auth {
                        resp::command(out, 2 + usize::from(user.is_some()));
                        resp::arg(out, b"AUTH");
                        if let Some(user) = user {
                            resp::arg(out, user.as_bytes());
                        }
                        resp::arg(out, password.as_bytes());
                    }
                    if select {
                        resp::command(out, 2);
                        resp::arg(out, b"SELECT");
                        resp::arg(out, itoa::Buffer::new().format(self.database).as_bytes());
                    }
                },
                |_| (),
            )
            .await
    }
}

#[cfg(test)]
mod tests;
