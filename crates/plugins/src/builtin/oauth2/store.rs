//! Where the oauth2 plugin keeps its authorization codes and tokens: runtime data the proxy writes, never
//! part of a config snapshot. The node provides the database behind [`OAuth2Store`] (DB mode only, as in
//! Kong: set once on [`crate::state::PluginState`]), so this crate needs no database client. [`Store`] adds
//! a short per-node cache of access-token lookups in front of it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// An issued token (Kong's `oauth2_tokens` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub id: Uuid,
    /// The `oauth2_credentials` entity it was issued to.
    pub credential: Uuid,
    /// The service it is valid for; None for a token issued with `global_credentials`.
    pub service: Option<Uuid>,
    /// Seconds from `created_at` it stays valid; 0: it never expires.
    pub expires_in: i64,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub authenticated_userid: Option<String>,
    pub scope: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
}

/// An authorization code (Kong's `oauth2_authorization_codes` row), kept 300 s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    pub id: Uuid,
    pub credential: Uuid,
    pub service: Option<Uuid>,
    /// The plugin instance that issued it.
    pub plugin: Option<Uuid>,
    pub code: String,
    pub authenticated_userid: Option<String>,
    pub scope: Option<String>,
    /// The PKCE challenge (base64url, unpadded) and its method (`S256`).
    pub challenge: Option<String>,
    pub challenge_method: Option<String>,
    pub created_at: i64,
}

/// Which field a token is looked up by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKey {
    Access(String),
    Refresh(String),
}

/// A boxed future of a store call; the error is a message for the log.
pub type StoreFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// The database side: rows past their time to live are never returned.
pub trait OAuth2Store: Send + Sync + 'static {
    /// Inserts `token`, or replaces the one with its id; kept `ttl` seconds when given.
    fn save_token(&self, token: Token, ttl: Option<u64>) -> StoreFuture<()>;
    fn token(&self, key: TokenKey) -> StoreFuture<Option<Token>>;
    /// Whether a token was deleted.
    fn delete_token(&self, id: Uuid) -> StoreFuture<bool>;
    fn save_code(&self, code: Code, ttl: u64) -> StoreFuture<()>;
    fn code(&self, code: String) -> StoreFuture<Option<Code>>;
    /// Whether the code was deleted (false: another request used it first).
    fn delete_code(&self, id: Uuid) -> StoreFuture<bool>;
}

/// How long a looked-up token is served from this node's memory. A token deleted or replaced on another
/// node (a refresh) may still be accepted here for that long.
const CACHE_TTL: Duration = Duration::from_secs(5);
/// Entries kept at most; past that, expired ones are dropped, then all.
const CACHE_MAX: usize = 10_000;

/// The node's store with its cache of access tokens.
pub struct Store {
    pub db: Arc<dyn OAuth2Store>,
    cache: Mutex<HashMap<String, (Instant, Arc<Token>)>>,
}

impl Store {
    pub fn new(db: Arc<dyn OAuth2Store>) -> Store {
        Store {
            db,
            cache: Mutex::default(),
        }
    }

    /// A token this node looked up or issued in the last few seconds.
    pub fn cached(&self, access_token: &str) -> Option<Arc<Token>> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .get(access_token)
            .filter(|(at, _)| at.elapsed() < CACHE_TTL)
            .map(|(_, t)| t.clone())
    }

    fn remember(&self, token: Arc<Token>) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_MAX {
            cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
        }
        cache.insert(token.access_token.clone(), (Instant::now(), token));
    }

    /// Drops a token from this node's cache (it was deleted).
    pub fn forget(&self, access_token: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.remove(access_token);
    }

    /// The token with this access token, from the cache or the database.
    pub async fn by_access_token(
        &self,
        access_token: String,
    ) -> Result<Option<Arc<Token>>, String> {
        if let Some(t) = self.cached(&access_token) {
            return Ok(Some(t));
        }
        let found = self.db.token(TokenKey::Access(access_token)).await?;
        Ok(found.map(|t| {
            let t = Arc::new(t);
            self.remember(t.clone());
            t
        }))
    }

    /// Saves `token` (replacing `previous`'s access token in the cache when it is the same row renewed).
    pub async fn save_token(
        &self,
        token: Token,
        ttl: Option<u64>,
        previous: Option<&str>,
    ) -> Result<(), String> {
        if let Some(old) = previous {
            self.forget(old);
        }
        self.db.save_token(token.clone(), ttl).await?;
        self.remember(Arc::new(token));
        Ok(())
    }

    pub async fn delete_token(&self, token: &Token) -> Result<bool, String> {
        self.forget(&token.access_token);
        self.db.delete_token(token.id).await
    }
}
