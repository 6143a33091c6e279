//! Consumers and their credentials of one snapshot, indexed for O(1) lookups by the auth plugins.

use crate::builtin::jwt::JwtCredential;
use sluice_model::{
    BasicAuthCredential, Config, Consumer, HmacAuthCredential, KeyAuthCredential, OAuth2Credential,
};
use std::collections::HashMap;
use uuid::Uuid;

/// Lookups built once per snapshot.
#[derive(Default)]
pub struct Credentials {
    consumers: Vec<Consumer>,
    consumer_by_id: HashMap<Uuid, usize>,
    consumer_by_name: HashMap<String, usize>,
    keys: HashMap<String, KeyAuthCredential>,
    basic: HashMap<String, BasicAuthCredential>,
    hmac: HashMap<String, HmacAuthCredential>,
    groups: HashMap<Uuid, Vec<String>>,
    /// jwt credentials by `key`, each with its public key parsed (or HMAC keys derived) once, here.
    jwt: HashMap<String, JwtCredential>,
    /// oauth2 applications by `client_id`, and their client ids by credential id.
    oauth2: HashMap<String, OAuth2Credential>,
    oauth2_ids: HashMap<Uuid, String>,
}

impl Credentials {
    pub fn build(config: &Config) -> Credentials {
        let mut c = Credentials {
            consumers: config.consumers.clone(),
            ..Default::default()
        };
        for (i, consumer) in config.consumers.iter().enumerate() {
            c.consumer_by_id.insert(consumer.id, i);
            if let Some(u) = &consumer.username {
                c.consumer_by_name.insert(u.clone(), i);
            }
        }
        for k in &config.keyauth_credentials {
            c.keys.insert(k.key.clone(), k.clone());
        }
        for b in &config.basicauth_credentials {
            c.basic.insert(b.username.clone(), b.clone());
        }
        for h in &config.hmacauth_credentials {
            c.hmac.insert(h.username.clone(), h.clone());
        }
        for j in &config.jwt_secrets {
            c.jwt.insert(j.key.clone(), JwtCredential::new(j));
        }
        for o in &config.oauth2_credentials {
            c.oauth2_ids.insert(o.id, o.client_id.clone());
            c.oauth2.insert(o.client_id.clone(), o.clone());
        }
        for a in &config.acls {
            c.groups
                .entry(a.consumer.id)
                .or_default()
                .push(a.group.clone());
        }
        c
    }

    pub fn consumer(&self, id: &Uuid) -> Option<&Consumer> {
        self.consumer_by_id.get(id).map(|i| &self.consumers[*i])
    }

    /// By id or username (Kong's `anonymous` setting accepts both).
    pub fn consumer_by_id_or_name(&self, key: &str) -> Option<&Consumer> {
        match Uuid::parse_str(key) {
            Ok(id) => self.consumer(&id),
            Err(_) => self.consumer_by_name.get(key).map(|i| &self.consumers[*i]),
        }
    }

    /// The key-auth credential with this key, unless its `ttl` (the Unix time it expires, as in Kong's
    /// declarative files) has passed: Kong's DB-less node no longer finds an expired key. The hash lookup
    /// compares bucket candidates by full equality; a final constant-time comparison guards against
    /// early-exit timing on the matched entry.
    pub fn key(&self, key: &str) -> Option<&KeyAuthCredential> {
        let cred = self.keys.get(key)?;
        let matches = bool::from(subtle::ConstantTimeEq::ct_eq(
            cred.key.as_bytes(),
            key.as_bytes(),
        ));
        (matches && !expired(cred.ttl)).then_some(cred)
    }

    pub fn basic(&self, username: &str) -> Option<&BasicAuthCredential> {
        self.basic.get(username)
    }

    /// The hmac-auth credential of this username.
    pub fn hmac(&self, username: &str) -> Option<&HmacAuthCredential> {
        self.hmac.get(username)
    }

    /// The jwt credential a token names by its key claim (a public identifier, not a secret).
    pub fn jwt(&self, key: &str) -> Option<&JwtCredential> {
        self.jwt.get(key)
    }

    /// The oauth2 application with this `client_id` (a public identifier).
    pub fn oauth2(&self, client_id: &str) -> Option<&OAuth2Credential> {
        self.oauth2.get(client_id)
    }

    /// The oauth2 application with this id (what a token names).
    pub fn oauth2_by_id(&self, id: &Uuid) -> Option<&OAuth2Credential> {
        self.oauth2_ids.get(id).and_then(|c| self.oauth2.get(c))
    }

    /// ACL groups of a consumer.
    pub fn groups(&self, consumer: &Uuid) -> &[String] {
        self.groups.get(consumer).map_or(&[], |g| g.as_slice())
    }
}

/// Whether a credential's `ttl` (Unix seconds) is now or past.
fn expired(ttl: Option<u64>) -> bool {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    ttl.is_some_and(|t| t <= now())
}

#[cfg(test)]
mod tests;
