//! ldap-auth's one LDAP exchange: a simple bind with the client's DN and password, on a kept connection
//! (`ldap_auth/pool.rs`) or a new one: TCP to `ldap_host:ldap_port` (within `timeout`), then TLS when `ldaps`
//! or `start_tls` asks for it. Runs in a deferred `access` future on the worker's runtime (ldap3 over tokio),
//! so the worker keeps serving other requests while the server answers. Called only when the verdict cache
//! has no answer.

use super::pool;
use ldap3::{Ldap, LdapConnAsync, LdapConnSettings, LdapError, LdapResult, StdStream};
use sluice_tls::rustls::ClientConfig;
use std::sync::Arc;
use std::time::Duration;

/// Where and how to reach the LDAP server, fixed when the plugin is built.
pub struct Target {
    pub host: String,
    pub port: u16,
    pub ldaps: bool,
    pub start_tls: bool,
    pub verify: bool,
    /// Kong's `timeout`: bounds the connection (with its TLS set-up) and the bind, each.
    pub timeout: Duration,
    /// The TLS client config when `ldaps` or `start_tls` is on.
    pub tls: Option<Arc<ClientConfig>>,
    /// How long a connection is kept for the next bind (Kong's `keepalive`; None: for good).
    pub keepalive: Option<Duration>,
    /// The pool of kept connections: server, port and TLS mode.
    pub pool: String,
}

impl Target {
    /// `host:port`, with an IPv6 address in brackets.
    fn authority(&self) -> String {
        match self.host.contains(':') && !self.host.starts_with('[') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }
}

/// Binds as `dn` with `password`: Ok(true) when the server accepts, Ok(false) when it refuses (any result
/// code but success) or the TLS handshake fails, as in Kong; Err when the server cannot be reached or does
/// not answer (Kong then fails the request with a 500).
pub async fn bind(target: &Target, dn: &str, password: &str) -> Result<bool, String> {
    if let Some(mut ldap) = pool::take(&target.pool) {
        // A kept connection the server has closed meanwhile fails at once; a new one is tried then.
        match ldap
            .with_timeout(target.timeout)
            .simple_bind(dn, password)
            .await
        {
            Ok(result) => return Ok(finish(target, ldap, result)),
            Err(e @ LdapError::Timeout { .. }) => {
                return Err(format!("LDAP bind on {} failed: {e}", target.authority()))
            }
            Err(_) => {}
        }
    }
    let Some(mut ldap) = connect(target).await? else {
        return Ok(false);
    };
    let result = ldap
        .with_timeout(target.timeout)
        .simple_bind(dn, password)
        .await
        .map_err(|e| format!("LDAP bind on {} failed: {e}", target.authority()))?;
    Ok(finish(target, ldap, result))
}

/// A new connection, with its TLS; None when the TLS handshake failed (a refusal in Kong).
async fn connect(target: &Target) -> Result<Option<Ldap>, String> {
    let authority = target.authority();
    let connect = tokio::net::TcpStream::connect(&authority);
    let stream = match tokio::time::timeout(target.timeout, connect).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(format!("failed to connect to {authority}: {e}")),
        Err(_) => return Err(format!("failed to connect to {authority}: timeout")),
    };
    let stream = stream
        .into_std()
        .map_err(|e| format!("failed to connect to {authority}: {e}"))?;
    let mut settings = LdapConnSettings::new()
        .set_std_stream(StdStream::Tcp(stream))
        .set_conn_timeout(target.timeout);
    if let Some(tls) = &target.tls {
        settings = settings
            .set_config(tls.clone())
            .set_starttls(target.start_tls)
            .set_no_tls_verify(!target.verify);
    }
    let scheme = if target.ldaps { "ldaps" } else { "ldap" };
    let url = format!("{scheme}://{authority}");
    match LdapConnAsync::with_settings(settings, &url).await {
        Ok((conn, ldap)) => {
            ldap3::drive!(conn);
            Ok(Some(ldap))
        }
        // A failed handshake is a refusal in Kong; a refused StartTLS or a timeout is an error.
        Err(LdapError::Io { source }) if target.tls.is_some() => {
            tracing::error!("failed to do SSL handshake with {authority}: {source}");
            Ok(None)
        }
        Err(e) => Err(format!("LDAP connection to {authority} failed: {e}")),
    }
}

/// The verdict of a bind's result; the connection is kept for the next bind.
fn finish(target: &Target, ldap: Ldap, result: LdapResult) -> bool {
    if result.rc != 0 {
        tracing::info!(
            code = result.rc,
            details = result.text,
            "LDAP server refused the bind"
        );
    }
    pool::put(&target.pool, ldap, target.keepalive);
    result.rc == 0
}
