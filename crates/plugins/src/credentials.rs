//! Consumers and their credentials of one snapshot, indexed for O(1) lookups by the auth plugins, with
//! the upstream header values Kong sets for them ([`ConsumerHeaders`], [`Identified`]) made here once
//! rather than formatted per authenticated request.

use crate::builtin::hmac_auth::HmacCredential;
use crate::builtin::jwt::JwtCredential;
use crate::owner_id::OwnerId;
use http::HeaderValue;
use sluice_model::{BasicAuthCredential, Config, Consumer, KeyAuthCredential, OAuth2Credential};
use std::collections::HashMap;
use uuid::Uuid;

mod verified;
pub(crate) use verified::PerWorker;

/// FxHash for tables keyed by config ids: a client's lookup cannot lengthen their chains (only the config
/// fills them), and std's SipHash of a UUID costs ~150 instructions of every authenticated request.
type ById<V> = HashMap<Uuid, V, rustc_hash::FxBuildHasher>;

/// foldhash, seeded at random per table, for tables keyed by what a client sends (an API key, a username):
/// keyed, so a client cannot aim its lookups at one bucket chain or tell from their timing which buckets
/// hold real keys, and ~5 times cheaper than std's SipHash on a short key (~150 instructions of every
/// key-auth request).
type ByText<V> = HashMap<String, V, foldhash::quality::RandomState>;

/// Kong's upstream headers of one consumer (`X-Consumer-ID`, `X-Consumer-Custom-ID`,
/// `X-Consumer-Username`), made when the snapshot is built. Cloning one shares its bytes; formatting the
/// id and copying the names into fresh values cost ~1k instructions per authenticated request. A custom id
/// or username that cannot be a header value is None, and not sent.
#[derive(Clone, Debug)]
pub struct ConsumerHeaders {
    pub id: HeaderValue,
    pub custom_id: Option<HeaderValue>,
    pub username: Option<HeaderValue>,
}

impl ConsumerHeaders {
    pub fn of(consumer: &Consumer) -> ConsumerHeaders {
        let text = |t: &Option<String>| t.as_deref().and_then(|t| HeaderValue::from_str(t).ok());
        ConsumerHeaders {
            id: id_value(&consumer.id),
            custom_id: text(&consumer.custom_id),
            username: text(&consumer.username),
        }
    }
}

/// An id as its hyphenated text, a header value.
pub fn id_value(id: &Uuid) -> HeaderValue {
    let mut text = Uuid::encode_buffer();
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut text))
        .expect("a hyphenated UUID is a valid header value")
}

/// A credential with the `X-Credential-Identifier` value Kong sends upstream for it (key-auth: its id;
/// basic-auth: its username, or its id when the username cannot be a header value).
pub struct Identified<C> {
    pub credential: C,
    pub identifier: HeaderValue,
}

/// Lookups built once per snapshot.
#[derive(Default)]
pub struct Credentials {
    /// This snapshot's, never another's: what per-worker state derived from these credentials is kept
    /// under (jwt's verified tokens).
    id: OwnerId,
    consumers: Vec<Consumer>,
    /// Parallel to `consumers`.
    consumer_headers: Vec<ConsumerHeaders>,
    consumer_by_id: ById<usize>,
    consumer_by_name: HashMap<String, usize>,
    /// By key (a keyed hash, [`ByText`]: clients choose the keys looked up).
    keys: ByText<Identified<KeyAuthCredential>>,
    /// basic-auth's credentials by username: the index of each in `basic_list`.
    basic: ByText<usize>,
    basic_list: Vec<Identified<BasicAuthCredential>>,
    /// The `Authorization` values basic-auth verified on this snapshot.
    basic_verified: verified::Verified,
    /// hmac-auth's credentials by username, each with its secret's HMAC keys (made on first use).
    hmac: HashMap<String, HmacCredential>,
    groups: ById<Vec<String>>,
    /// jwt credentials by `key`, each with its public key parsed (or HMAC keys derived) once, here.
    jwt: HashMap<String, JwtCredential>,
    /// oauth2 applications by `client_id`, and their client ids by credential id.
    oauth2: HashMap<String, OAuth2Credential>,
    oauth2_ids: ById<String>,
}

impl Credentials {
    pub fn build(config: &Config) -> Credentials {
        let mut c = Credentials {
            consumers: config.consumers.clone(),
            consumer_headers: config.consumers.iter().map(ConsumerHeaders::of).collect(),
            ..Default::default()
        };
        for (i, consumer) in config.consumers.iter().enumerate() {
            c.consumer_by_id.insert(consumer.id, i);
            if let Some(u) = &consumer.username {
                c.consumer_by_name.insert(u.clone(), i);
            }
        }
        for k in &config.keyauth_credentials {
            let identifier = id_value(&k.id);
            let key = Identified {
                credential: k.clone(),
                identifier,
            };
            c.keys.insert(k.key.clone(), key);
        }
        for b in &config.basicauth_credentials {
            let identifier = HeaderValue::from_str(&b.username).unwrap_or_else(|_| id_value(&b.id));
            let basic = Identified {
                credential: b.clone(),
                identifier,
            };
            // A username given twice: the last one is found, as a map's insert leaves it.
            c.basic.insert(b.username.clone(), c.basic_list.len());
            c.basic_list.push(basic);
        }
        for h in &config.hmacauth_credentials {
            c.hmac.insert(h.username.clone(), HmacCredential::new(h));
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

    /// This snapshot's id.
    pub fn id(&self) -> OwnerId {
        self.id
    }

    pub fn consumer(&self, id: &Uuid) -> Option<&Consumer> {
        self.consumer_by_id.get(id).map(|i| &self.consumers[*i])
    }

    /// Kong's upstream headers of a consumer of this snapshot.
    pub fn consumer_headers(&self, id: &Uuid) -> Option<&ConsumerHeaders> {
        self.consumer_by_id
            .get(id)
            .map(|i| &self.consumer_headers[*i])
    }

    /// A consumer and its upstream headers, with one lookup.
    pub fn consumer_with_headers(&self, id: &Uuid) -> Option<(&Consumer, &ConsumerHeaders)> {
        let i = *self.consumer_by_id.get(id)?;
        Some((&self.consumers[i], &self.consumer_headers[i]))
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
    pub fn key(&self, key: &str) -> Option<&Identified<KeyAuthCredential>> {
        let found = self.keys.get(key)?;
        let cred = &found.credential;
        let matches = bool::from(subtle::ConstantTimeEq::ct_eq(
            cred.key.as_bytes(),
            key.as_bytes(),
        ));
        (matches && !expired(cred.ttl)).then_some(found)
    }

    pub fn basic(&self, username: &str) -> Option<&Identified<BasicAuthCredential>> {
        self.basic.get(username).map(|i| &self.basic_list[*i])
    }

    /// The basic-auth credential that exactly this `Authorization` value verified as on this snapshot
    /// (what [`Credentials::remember_basic`] kept).
    pub fn basic_verified(&self, value: &[u8]) -> Option<&Identified<BasicAuthCredential>> {
        let i = self.basic_verified.get(value)?;
        self.basic_list.get(i)
    }

    /// Keeps that `value` verified as the credential of `username`, for [`Credentials::basic_verified`].
    pub fn remember_basic(&self, value: &[u8], username: &str) {
        if let Some(i) = self.basic.get(username) {
            self.basic_verified.insert(value, *i);
        }
    }

    /// The hmac-auth credential of this username.
    pub fn hmac(&self, username: &str) -> Option<&HmacCredential> {
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
