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

/// Appends one entity to the typed list of its kind.
pub fn push(config: &mut Config, kind: Kind, src: Source<'_>) -> serde_json::Result<()> {
    match kind {
        Kind::Service => config.services.push(src.parse()?),
        Kind::Route => config.routes.push(src.parse()?),
        Kind::Upstream => config.upstreams.push(src.parse()?),
        Kind::Target => config.targets.push(src.parse()?),
        Kind::Consumer => config.consumers.push(src.parse()?),
        Kind::KeyAuth => config.keyauth_credentials.push(src.parse()?),
        Kind::BasicAuth => config.basicauth_credentials.push(src.parse()?),
        Kind::Acl => config.acls.push(src.parse()?),
        Kind::Plugin => config.plugins.push(src.parse()?),
        Kind::Certificate => config.certificates.push(src.parse()?),
        Kind::Sni => config.snis.push(src.parse()?),
        Kind::CaCertificate => config.ca_certificates.push(src.parse()?),
    }
    Ok(())
}

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
        for body in &bodies {
            push(&mut config, kind, Source::Json(body))
                .map_err(|e| format!("unreadable {key} record: {e}"))?;
        }
    }
    attach_snis(&mut config);
    Ok(config)
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
    pub fn new(format_version: String) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(format_version.as_bytes());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Assembler {
            hasher,
            scratch: Vec::with_capacity(4096),
            config: Config {
                format_version,
                ..Config::default()
            },
            now,
        }
    }

    /// Hashes the normalized entity (before load-time timestamps, so the same file keeps its hash), fills
    /// the timestamps and moves it into the typed config. `path` is its input position, for errors.
    pub fn add(&mut self, kind: Kind, path: &str, normalized: Value) -> Result<(), FieldError> {
        self.hasher.update(kind.key().as_bytes());
        self.scratch.clear();
        // Serializing a `Value` into memory cannot fail.
        let _ = serde_json::to_writer(&mut self.scratch, &normalized);
        self.hasher.update(&self.scratch);
        let mut v = normalized;
        if let Value::Object(m) = &mut v {
            for f in ["created_at", "updated_at"] {
                if m.get(f).is_none_or(Value::is_null) {
                    m.insert(f.into(), self.now.into());
                }
            }
        }
        push(&mut self.config, kind, Source::Value(v)).map_err(|err| {
            FieldError::new(path, format!("internal error building the config: {err}"))
        })
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
