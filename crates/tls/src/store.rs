//! Certificates by server name, looked up in Kong's order: the exact name, then a prefix wildcard
//! (`*.example.com` for `api.example.com`: one label), then a suffix wildcard (`example.*` for
//! `example.org`), then the `*` SNI if one is configured, then the caller's default.

use crate::pem::{typed_key, KeyKind};
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;
use std::collections::HashMap;
use std::sync::Arc;

/// A certificate entity ready to serve: its main pair and, optionally, a pair of the other key type. The
/// ECDSA pair is preferred when the client can verify ECDSA signatures.
#[derive(Debug, Clone)]
pub struct CertPair {
    main: Arc<CertifiedKey>,
    main_kind: KeyKind,
    alt: Option<Arc<CertifiedKey>>,
}

impl CertPair {
    /// Builds a pair from PEM texts (validation already passed; errors here are for settings files).
    pub fn new(
        cert: &str,
        key: &str,
        cert_alt: Option<&str>,
        key_alt: Option<&str>,
    ) -> Result<CertPair, String> {
        let (main, main_kind) = typed_key(cert, key)?;
        let alt = match (cert_alt, key_alt) {
            (Some(c), Some(k)) => Some(typed_key(c, k)?.0),
            _ => None,
        };
        Ok(CertPair {
            main,
            main_kind,
            alt,
        })
    }

    /// The pair to present to a client offering `schemes`.
    pub fn choose(&self, schemes: &[SignatureScheme]) -> Arc<CertifiedKey> {
        let Some(alt) = &self.alt else {
            return self.main.clone();
        };
        let client_ecdsa = schemes.iter().any(|s| {
            matches!(
                s,
                SignatureScheme::ECDSA_NISTP256_SHA256
                    | SignatureScheme::ECDSA_NISTP384_SHA384
                    | SignatureScheme::ECDSA_NISTP521_SHA512
            )
        });
        let main_is_ecdsa = self.main_kind == KeyKind::Ecdsa;
        if client_ecdsa == main_is_ecdsa {
            self.main.clone()
        } else {
            alt.clone()
        }
    }

    /// The leaf certificate of the main pair (tests and logs).
    pub fn leaf(&self) -> &[u8] {
        self.main.cert.first().map_or(&[], |c| c.as_ref())
    }
}

/// The certificates of one config snapshot, by SNI name.
#[derive(Debug, Default)]
pub struct CertStore {
    by_name: HashMap<String, usize>,
    pairs: Vec<CertPair>,
}

impl CertStore {
    /// Adds a certificate with the SNI names that select it. Names are matched case-insensitively.
    pub fn add(&mut self, names: impl IntoIterator<Item = impl AsRef<str>>, pair: CertPair) {
        let index = self.pairs.len();
        self.pairs.push(pair);
        for name in names {
            self.by_name
                .insert(name.as_ref().to_ascii_lowercase(), index);
        }
    }

    /// Whether any SNI is configured (with none, every handshake gets the default certificate).
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The certificate for `sni` by Kong's order; None means "use the default certificate".
    pub fn select(&self, sni: Option<&str>) -> Option<&CertPair> {
        let found = sni.and_then(|name| {
            let name = name.to_ascii_lowercase();
            let exact = self.by_name.get(&name);
            let prefix = || {
                let (_, rest) = name.split_once('.')?;
                self.by_name.get(&format!("*.{rest}"))
            };
            let suffix = || {
                let (head, _) = name.rsplit_once('.')?;
                self.by_name.get(&format!("{head}.*"))
            };
            exact.or_else(prefix).or_else(suffix).copied()
        });
        found
            .or_else(|| self.by_name.get("*").copied())
            .and_then(|i| self.pairs.get(i))
    }
}
