//! Normalized JSON → typed entities, one entity at a time: after validation (from `serde_json::Value`) and
//! when a node restarts from its store (from the stored JSON bytes, which were validated when committed).

use super::kinds::Kind;
use crate::Config;
use serde::de::DeserializeOwned;
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
