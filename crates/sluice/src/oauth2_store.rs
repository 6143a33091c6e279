//! DB mode's [`OAuth2Store`]: the oauth2 plugin's authorization codes and tokens in the node's PostgreSQL
//! (`sluice_db::oauth2`), on each proxy worker's own connection (the one rate-limiting's cluster counters
//! use), within the database timeout.

use crate::cluster_counters::on_worker_connection;
use sluice_db::oauth2::{self as db, CodeRow, TokenRow};
use sluice_db::PgSettings;
use sluice_plugins::builtin::oauth2::store::{Code, OAuth2Store, StoreFuture, Token, TokenKey};
use std::sync::Arc;
use uuid::Uuid;

pub struct PgOAuth2 {
    settings: Arc<PgSettings>,
}

impl PgOAuth2 {
    pub fn new(settings: PgSettings) -> PgOAuth2 {
        PgOAuth2 {
            settings: Arc::new(settings),
        }
    }
}

fn to_row(t: Token) -> TokenRow {
    TokenRow {
        id: t.id,
        created_at: t.created_at,
        credential_id: t.credential,
        service_id: t.service,
        expires_in: i32::try_from(t.expires_in).unwrap_or(i32::MAX),
        access_token: t.access_token,
        refresh_token: t.refresh_token,
        authenticated_userid: t.authenticated_userid,
        scope: t.scope,
    }
}

fn from_row(r: TokenRow) -> Token {
    Token {
        id: r.id,
        credential: r.credential_id,
        service: r.service_id,
        expires_in: i64::from(r.expires_in),
        access_token: r.access_token,
        refresh_token: r.refresh_token,
        authenticated_userid: r.authenticated_userid,
        scope: r.scope,
        created_at: r.created_at,
    }
}

impl OAuth2Store for PgOAuth2 {
    fn save_token(&self, token: Token, ttl: Option<u64>) -> StoreFuture<()> {
        let settings = self.settings.clone();
        let row = to_row(token);
        Box::pin(async move {
            on_worker_connection(
                &settings,
                |c| async move { db::save_token(&c, &row, ttl).await },
            )
            .await
        })
    }

    fn token(&self, key: TokenKey) -> StoreFuture<Option<Token>> {
        let settings = self.settings.clone();
        Box::pin(async move {
            let (refresh, value) = match key {
                TokenKey::Access(v) => (false, v),
                TokenKey::Refresh(v) => (true, v),
            };
            let row = on_worker_connection(&settings, |c| async move {
                db::token_by(&c, refresh, &value).await
            })
            .await?;
            Ok(row.map(from_row))
        })
    }

    fn delete_token(&self, id: Uuid) -> StoreFuture<bool> {
        let settings = self.settings.clone();
        Box::pin(async move {
            on_worker_connection(
                &settings,
                |c| async move { db::delete(&c, false, id).await },
            )
            .await
        })
    }

    fn save_code(&self, code: Code, ttl: u64) -> StoreFuture<()> {
        let settings = self.settings.clone();
        let row = CodeRow {
            id: code.id,
            created_at: code.created_at,
            credential_id: code.credential,
            service_id: code.service,
            plugin_id: code.plugin,
            code: code.code,
            authenticated_userid: code.authenticated_userid,
            scope: code.scope,
            challenge: code.challenge,
            challenge_method: code.challenge_method,
        };
        Box::pin(async move {
            on_worker_connection(
                &settings,
                |c| async move { db::save_code(&c, &row, ttl).await },
            )
            .await
        })
    }

    fn code(&self, code: String) -> StoreFuture<Option<Code>> {
        let settings = self.settings.clone();
        Box::pin(async move {
            let row = on_worker_connection(&settings, |c| async move { db::code(&c, &code).await })
                .await?;
            Ok(row.map(|r| Code {
                id: r.id,
                credential: r.credential_id,
                service: r.service_id,
                plugin: r.plugin_id,
                code: r.code,
                authenticated_userid: r.authenticated_userid,
                scope: r.scope,
                challenge: r.challenge,
                challenge_method: r.challenge_method,
                created_at: r.created_at,
            }))
        })
    }

    fn delete_code(&self, id: Uuid) -> StoreFuture<bool> {
        let settings = self.settings.clone();
        Box::pin(async move {
            on_worker_connection(&settings, |c| async move { db::delete(&c, true, id).await }).await
        })
    }
}
