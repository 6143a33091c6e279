//! The oauth2 plugin's authorization codes and tokens in PostgreSQL (`migrations/004_oauth2.sql`): runtime
//! rows the proxy writes and reads by code, access token or refresh token. A row past its `ttl` is never
//! returned, and [`expire`] deletes such rows.

use std::time::{Duration, SystemTime};
use tokio_postgres::{Client, Row};
use uuid::Uuid;

/// A token row (Kong's `oauth2_tokens` columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    pub id: Uuid,
    pub created_at: i64,
    pub credential_id: Uuid,
    pub service_id: Option<Uuid>,
    pub expires_in: i32,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub authenticated_userid: Option<String>,
    pub scope: Option<String>,
}

/// An authorization code row (Kong's `oauth2_authorization_codes` columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRow {
    pub id: Uuid,
    pub created_at: i64,
    pub credential_id: Uuid,
    pub service_id: Option<Uuid>,
    pub plugin_id: Option<Uuid>,
    pub code: String,
    pub authenticated_userid: Option<String>,
    pub scope: Option<String>,
    pub challenge: Option<String>,
    pub challenge_method: Option<String>,
}

const TOKEN_COLUMNS: &str = "id, created_at, credential_id, service_id, expires_in, access_token, \
                             refresh_token, authenticated_userid, scope";
const CODE_COLUMNS: &str = "id, created_at, credential_id, service_id, plugin_id, code, \
                            authenticated_userid, scope, challenge, challenge_method";
const LIVE: &str = "(ttl IS NULL OR ttl > now())";

fn ttl(secs: Option<u64>) -> Option<SystemTime> {
    secs.map(|s| SystemTime::now() + Duration::from_secs(s))
}

/// Inserts a token, or replaces the row with its id (a token renewed in place).
pub async fn save_token(
    client: &Client,
    t: &TokenRow,
    ttl_secs: Option<u64>,
) -> Result<(), tokio_postgres::Error> {
    let sql = format!(
        "INSERT INTO oauth2_tokens ({TOKEN_COLUMNS}, ttl) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (id) DO UPDATE SET created_at = $2, expires_in = $5, access_token = $6, ttl = $10"
    );
    client
        .execute(
            &sql,
            &[
                &t.id,
                &t.created_at,
                &t.credential_id,
                &t.service_id,
                &t.expires_in,
                &t.access_token,
                &t.refresh_token,
                &t.authenticated_userid,
                &t.scope,
                &ttl(ttl_secs),
            ],
        )
        .await
        .map(drop)
}

fn token_row(r: &Row) -> TokenRow {
    TokenRow {
        id: r.get(0),
        created_at: r.get(1),
        credential_id: r.get(2),
        service_id: r.get(3),
        expires_in: r.get(4),
        access_token: r.get(5),
        refresh_token: r.get(6),
        authenticated_userid: r.get(7),
        scope: r.get(8),
    }
}

/// The live token whose `field` (`access_token` or `refresh_token`) is `value`.
pub async fn token_by(
    client: &Client,
    refresh: bool,
    value: &str,
) -> Result<Option<TokenRow>, tokio_postgres::Error> {
    let field = if refresh {
        "refresh_token"
    } else {
        "access_token"
    };
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM oauth2_tokens WHERE {field} = $1 AND {LIVE}");
    Ok(client
        .query_opt(&sql, &[&value])
        .await?
        .as_ref()
        .map(token_row))
}

/// Deletes a row of `table` (`oauth2_tokens` or `oauth2_authorization_codes`); whether it was there.
pub async fn delete(client: &Client, codes: bool, id: Uuid) -> Result<bool, tokio_postgres::Error> {
    let table = if codes {
        "oauth2_authorization_codes"
    } else {
        "oauth2_tokens"
    };
    let sql = format!("DELETE FROM {table} WHERE id = $1");
    Ok(client.execute(&sql, &[&id]).await? == 1)
}

pub async fn save_code(
    client: &Client,
    c: &CodeRow,
    ttl_secs: u64,
) -> Result<(), tokio_postgres::Error> {
    let sql = format!(
        "INSERT INTO oauth2_authorization_codes ({CODE_COLUMNS}, ttl) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    );
    client
        .execute(
            &sql,
            &[
                &c.id,
                &c.created_at,
                &c.credential_id,
                &c.service_id,
                &c.plugin_id,
                &c.code,
                &c.authenticated_userid,
                &c.scope,
                &c.challenge,
                &c.challenge_method,
                &ttl(Some(ttl_secs)),
            ],
        )
        .await
        .map(drop)
}

/// The live authorization code `code`.
pub async fn code(client: &Client, code: &str) -> Result<Option<CodeRow>, tokio_postgres::Error> {
    let sql =
        format!("SELECT {CODE_COLUMNS} FROM oauth2_authorization_codes WHERE code = $1 AND {LIVE}");
    Ok(client.query_opt(&sql, &[&code]).await?.map(|r| CodeRow {
        id: r.get(0),
        created_at: r.get(1),
        credential_id: r.get(2),
        service_id: r.get(3),
        plugin_id: r.get(4),
        code: r.get(5),
        authenticated_userid: r.get(6),
        scope: r.get(7),
        challenge: r.get(8),
        challenge_method: r.get(9),
    }))
}

/// Deletes codes and tokens past their `ttl`; returns how many.
pub async fn expire(client: &Client) -> Result<u64, tokio_postgres::Error> {
    let codes = client
        .execute(
            "DELETE FROM oauth2_authorization_codes WHERE ttl < now()",
            &[],
        )
        .await?;
    let tokens = client
        .execute("DELETE FROM oauth2_tokens WHERE ttl < now()", &[])
        .await?;
    Ok(codes + tokens)
}

/// The live tokens for the Admin API's `/oauth2_tokens` (oldest first, at most 1000), or the one whose id
/// or access token is `key`.
pub async fn tokens(
    client: &Client,
    key: Option<&str>,
) -> Result<Vec<TokenRow>, tokio_postgres::Error> {
    let rows = match key {
        None => {
            let sql = format!(
                "SELECT {TOKEN_COLUMNS} FROM oauth2_tokens WHERE {LIVE} ORDER BY created_at, id LIMIT 1000"
            );
            client.query(&sql, &[]).await?
        }
        Some(key) => {
            let sql = format!(
                "SELECT {TOKEN_COLUMNS} FROM oauth2_tokens WHERE (id::text = $1 OR access_token = $1) AND {LIVE}"
            );
            client.query(&sql, &[&key]).await?
        }
    };
    Ok(rows.iter().map(token_row).collect())
}

impl TokenRow {
    /// Kong's JSON of an `oauth2_tokens` entity.
    pub fn to_json(&self) -> serde_json::Value {
        let id = |u: Option<Uuid>| u.map(|id| serde_json::json!({ "id": id }));
        serde_json::json!({
            "id": self.id,
            "created_at": self.created_at,
            "credential": { "id": self.credential_id },
            "service": id(self.service_id),
            "token_type": "bearer",
            "expires_in": self.expires_in,
            "access_token": self.access_token,
            "refresh_token": self.refresh_token,
            "authenticated_userid": self.authenticated_userid,
            "scope": self.scope,
        })
    }
}
