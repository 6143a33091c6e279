//! Normalized JSON → typed entities, one entity at a time: after validation (the [`Assembler`], which also
//! hashes them) and when a node restarts from its store (from the stored JSON bytes, validated when committed).

use super::kinds::Kind;
use crate::schema::FieldError;
use crate::Config;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use uuid::Uuid;

/// Where one entity's normalized JSON comes from.
pub enum Source<'a> {
    /// Freshly validated.
    Value(serde_json::Value),
    /// As committed to the store.
    Json(&'a [u8]),
}

impl Source<'_> {
    fn parse<T: DeserializeOwned>(self) -> serde_json::Result<T> {
        match self {
            Source::Value(v) => serde_json::from_value(v),
            Source::Json(bytes) => serde_json::from_slice(bytes),
        }
    }
}

/// `push` and `reserve` over the typed lists, one arm per kind of [`crate::kind_table`].
macro_rules! typed_lists {
    ([] $( $variant:ident ($ty:ident) { key: $key:ident, $($rest:tt)* } )*) => {
        /// Appends one entity to the typed list of its kind.
        pub fn push(config: &mut Config, kind: Kind, src: Source<'_>) -> serde_json::Result<()> {
            match kind {
                $(Kind::$variant => config.$key.push(src.parse()?),)*
            }
            Ok(())
        }

        /// Replaces the entity of `kind` that has the id of `body` (JSON as committed; it keeps its
        /// position, which is returned), or appends it (None). DB mode patches its config with each
        /// changed entity this way.
        pub fn upsert(config: &mut Config, kind: Kind, body: &[u8]) -> serde_json::Result<Option<usize>> {
            Ok(match kind {
                $(Kind::$variant => {
                    let entity = Source::Json(body).parse::<crate::$ty>()?;
                    match config.$key.iter().position(|e| e.id == entity.id) {
                        Some(i) => {
                            config.$key[i] = entity;
                            Some(i)
                        }
                        None => {
                            config.$key.push(entity);
                            None
                        }
                    }
                })*
            })
        }

        /// Removes the entity of `kind` with `id`; false when there was none.
        pub fn remove(config: &mut Config, kind: Kind, id: Uuid) -> bool {
            match kind {
                $(Kind::$variant => {
                    let before = config.$key.len();
                    config.$key.retain(|e| e.id != id);
                    config.$key.len() != before
                })*
            }
        }

        /// Makes room for `n` more entities in the typed list of `kind`.
        fn reserve(config: &mut Config, kind: Kind, n: usize) {
            match kind {
                $(Kind::$variant => config.$key.reserve_exact(n),)*
            }
        }

        /// Appends a copy of entity `index` of `kind` in `from`; false when there is none.
        fn push_copy(config: &mut Config, kind: Kind, from: &Config, index: usize) -> bool {
            match kind {
                $(Kind::$variant => match from.$key.get(index) {
                    Some(e) => config.$key.push(e.clone()),
                    None => return false,
                },)*
            }
            true
        }

        /// How many entities of `kind` `config` holds.
        pub(super) fn count(config: &Config, kind: Kind) -> usize {
            match kind {
                $(Kind::$variant => config.$key.len(),)*
            }
        }
    };
}

crate::entity_kinds!(typed_lists);

/// Lists each certificate's SNI names inline, as Kong's Admin API returns them.
pub fn attach_snis(config: &mut Config) {
    let mut by_cert: HashMap<Uuid, Vec<String>> = HashMap::new();
    for sni in &config.snis {
        by_cert
            .entry(sni.certificate.id)
            .or_default()
            .push(sni.name.clone());
    }
    for cert in &mut config.certificates {
        cert.snis = by_cert.remove(&cert.id).unwrap_or_default();
    }
}

/// Rebuilds a config committed to the store without validating it again (it was validated before it was
/// committed, and the store refuses another layout version). `kinds` are (top-level key, entity bodies in
/// order), as [`crate::records::for_each_record`] produced them. An unreadable record is an error naming its kind.
pub fn from_store(
    format_version: String,
    hash: String,
    kinds: Vec<(String, Vec<Vec<u8>>)>,
) -> Result<Config, String> {
    let mut config = Config {
        format_version,
        hash,
        ..Config::default()
    };
    for (key, bodies) in kinds {
        let kind = Kind::from_key(&key).ok_or_else(|| format!("unknown entity kind '{key}'"))?;
        reserve(&mut config, kind, bodies.len());
        for body in &bodies {
            push(&mut config, kind, Source::Json(body))
                .map_err(|e| format!("unreadable {key} record: {e}"))?;
        }
    }
    attach_snis(&mut config);
    Ok(config)
}

/// The first 16 bytes of the SHA-256 of an entity's normalized JSON: what the config hash covers of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest16([u8; 16]);

impl Digest16 {
    fn of(bytes: &[u8]) -> Self {
        let mut out = [0u8; 16];
        out.copy_from_slice(&Sha256::digest(bytes)[..16]);
        Digest16(out)
    }
}

/// What [`Assembler::add`] did with one entity.
pub struct Added {
    /// Its position in its kind's typed list.
    pub index: usize,
    /// Its normalized form's digest.
    pub digest: Digest16,
    /// A value was generated at random (a credential's key, a hashed secret's salt): loading the same
    /// input again gives another entity, so this one must not be reused.
    pub random: bool,
}

/// Builds the typed [`Config`] and its hash from valid entities, one at a time, in input order.
pub struct Assembler {
    hasher: Sha256,
    /// Reused serialization buffer: one hasher update per entity instead of one per JSON token.
    scratch: Vec<u8>,
    config: Config,
    /// Load time, for entities without `created_at`/`updated_at`.
    now: u64,
}

impl Assembler {
    /// An assembler for entities of these kinds (one item per entity), so each typed list is allocated
    /// once at its final size.
    pub fn new(format_version: String, kinds: impl Iterator<Item = Kind>) -> Self {
        let mut config = Config {
            format_version,
            ..Config::default()
        };
        let mut counts = [0usize; super::kinds::ALL.len()];
        for kind in kinds {
            counts[kind as usize] += 1;
        }
        for kind in super::kinds::ALL {
            reserve(&mut config, kind, counts[kind as usize]);
        }
        let mut hasher = Sha256::new();
        hasher.update(config.format_version.as_bytes());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Assembler {
            hasher,
            scratch: Vec::with_capacity(4096),
            config,
            now,
        }
    }

    /// Hashes the normalized entity (before load-time values, so the same file keeps its hash), fills the
    /// timestamps and a credential's missing generated value (key-auth `key`, hmac-auth `secret`, jwt `key` and `secret`,
    /// oauth2 `client_id` and `client_secret`, the oauth2 plugin's `provision_key`), hashes an oauth2
    /// secret when asked, and moves it into the typed config. `path` is its input position, for errors.
    pub fn add(&mut self, kind: Kind, path: &str, normalized: Value) -> Result<Added, FieldError> {
        self.scratch.clear();
        // Serializing a `Value` into memory cannot fail.
        let _ = serde_json::to_writer(&mut self.scratch, &normalized);
        let digest = Digest16::of(&self.scratch);
        self.hash_entity(kind, &digest);
        let mut v = normalized;
        let mut random = false;
        if let Value::Object(m) = &mut v {
            for f in ["created_at", "updated_at"] {
                if m.get(f).is_none_or(Value::is_null) {
                    m.insert(f.into(), self.now.into());
                }
            }
            // Kong's generated (`auto = true`) credentials: random, never derived from public values.
            let generated: &[&str] = match kind {
                Kind::HmacAuth => &["secret"],
                Kind::KeyAuth => &["key"],
                Kind::Jwt => &["key", "secret"],
                Kind::OAuth2 => &["client_id", "client_secret"],
                _ => &[],
            };
            for field in generated {
                if m.get(*field).is_none_or(Value::is_null) {
                    m.insert((*field).into(), random_secret().into());
                    random = true;
                }
            }
            if kind == Kind::OAuth2 {
                random |= hash_client_secret(m);
            }
            if kind == Kind::Plugin && m.get("name").and_then(Value::as_str) == Some("oauth2") {
                if let Some(Value::Object(config)) = m.get_mut("config") {
                    if config.get("provision_key").is_none_or(Value::is_null) {
                        config.insert("provision_key".into(), random_secret().into());
                        random = true;
                    }
                }
            }
        }
        // A plugin's config is moved into the typed plugin as it is: deserializing it would rebuild it.
        let config = match (&mut v, kind) {
            (Value::Object(m), Kind::Plugin) => m.get_mut("config").map(Value::take),
            _ => None,
        };
        let index = count(&self.config, kind);
        push(&mut self.config, kind, Source::Value(v)).map_err(|err| {
            FieldError::new(path, format!("internal error building the config: {err}"))
        })?;
        if let (Some(config), Some(plugin)) = (config, self.config.plugins.last_mut()) {
            plugin.config = config;
        }
        Ok(Added {
            index,
            digest,
            random,
        })
    }

    /// Appends a copy of entity `index` of `kind` in `from` (an earlier load's result for the same input),
    /// hashed as `digest` (its normalized form's, see [`Added::digest`]). Returns its index, or None when
    /// `from` has no such entity (nothing is added then).
    pub fn add_copy(
        &mut self,
        kind: Kind,
        from: &Config,
        index: usize,
        digest: &Digest16,
    ) -> Option<usize> {
        let at = count(&self.config, kind);
        if !push_copy(&mut self.config, kind, from, index) {
            return None;
        }
        self.hash_entity(kind, digest);
        Some(at)
    }

    /// The config hash covers each entity's kind and the digest of its normalized form, in order.
    fn hash_entity(&mut self, kind: Kind, digest: &Digest16) {
        self.hasher.update(kind.key().as_bytes());
        self.hasher.update(digest.0);
    }

    pub fn finish(mut self) -> Config {
        self.config.hash = self.hasher.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        attach_snis(&mut self.config);
        self.config
    }
}

/// An oauth2 credential's `client_secret` as stored: hashed when `hash_secret` is true, unless it already is
/// (a credential exported and loaded again, or updated without a new secret). True when it hashed (with a
/// random salt).
fn hash_client_secret(m: &mut serde_json::Map<String, Value>) -> bool {
    if m.get("hash_secret") != Some(&Value::Bool(true)) {
        return false;
    }
    match m.get_mut("client_secret") {
        Some(Value::String(secret)) if !crate::oauth2_secret::is_hashed(secret) => {
            *secret = crate::oauth2_secret::hash(secret);
            true
        }
        _ => false,
    }
}

/// Kong's generated key or secret (`auto = true`, `random_string`): 32 random alphanumeric characters.
/// Random, not derived from the id (which is sent upstream in `X-Credential-Identifier`), so no one can
/// compute it; a file that leaves it out gets a new one on each load, as in Kong.
pub fn random_secret() -> String {
    use rand::Rng;
    rand::thread_rng()
        .sample_iter(rand::distributions::Alphanumeric)
        .take(32)
        .map(char::from)
        .collect()
}
