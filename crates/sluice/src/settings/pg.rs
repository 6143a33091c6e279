//! Kong's `pg_*` settings (read when `database = postgres`) and how `GET /` shows them.

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use sluice_db::PgSettings;
use std::time::Duration;

/// The `pg_*` settings, with Kong's defaults for those unset.
pub fn from_values(get: &dyn Fn(&str) -> Option<String>) -> Result<PgSettings> {
    let d = PgSettings::default();
    let number = |name: &str, default: u64| super::number(get, name, default);
    let flag = |name: &str| -> Result<bool> {
        match get(name).as_deref() {
            None | Some("off") => Ok(false),
            Some("on") => Ok(true),
            Some(v) => bail!("{name}: expected 'on' or 'off', got '{v}'"),
        }
    };
    let port = number("pg_port", d.port.into())?;
    let port = u16::try_from(port).with_context(|| format!("pg_port: {port} is not a port"))?;
    Ok(PgSettings {
        host: get("pg_host").unwrap_or(d.host),
        port,
        user: get("pg_user").unwrap_or(d.user),
        password: get("pg_password"),
        database: get("pg_database").unwrap_or(d.database),
        schema: get("pg_schema"),
        ssl: flag("pg_ssl")?,
        ssl_verify: flag("pg_ssl_verify")?,
        timeout: Duration::from_millis(number("pg_timeout", d.timeout.as_millis() as u64)?),
        pool_size: number("pg_pool_size", d.pool_size as u64)? as usize,
    })
}

/// The `pg_*` fields of `GET /`'s `configuration` (the password redacted, as Kong does).
pub fn to_json(pg: &PgSettings) -> Map<String, Value> {
    let v = json!({
        "pg_host": pg.host,
        "pg_port": pg.port,
        "pg_user": pg.user,
        "pg_password": pg.password.as_ref().map(|_| "******"),
        "pg_database": pg.database,
        "pg_schema": pg.schema,
        "pg_ssl": pg.ssl,
        "pg_ssl_verify": pg.ssl_verify,
        "pg_timeout": pg.timeout.as_millis() as u64,
        "pg_pool_size": pg.pool_size,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
