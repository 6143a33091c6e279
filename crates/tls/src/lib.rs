//! TLS material for Sluice, with no sockets: checking PEM certificates and keys (config validation), choosing
//! a certificate by SNI with Kong's order, the default certificate kept under `prefix`, and the rustls server
//! and client configurations the proxy and the admin listener use.
//!
//! Everything here runs when a config is compiled or a listener starts, never per request, except
//! [`SniResolver::resolve`], which runs once per TLS handshake (at most three hash lookups).
//!
//! One crypto provider (ring) is used everywhere, so a certificate that validated also serves.

mod ca_check;
mod cert_spki;
mod client;
mod default_cert;
mod negotiated;
mod pem;
mod pinned;
mod public_key;
mod server;
mod signatures;
mod store;

pub use ca_check::check_ca_certificate;
pub use client::{
    client_config, client_config_without_alpn, system_roots, unverified, UpstreamTls,
};
pub use default_cert::{default_pair, load_pair_files, DEFAULT_CERT_FILE, DEFAULT_KEY_FILE};
pub use negotiated::Negotiated;
pub use pem::{certificates, check_certificate, private_key, KeyKind};
pub use pinned::Pinned;
pub use public_key::{public_key, Curve, PublicKey};
pub use rustls;
pub use server::{server_config, CertSource, SniResolver};
pub use store::{CertPair, CertStore};

use std::sync::Arc;

/// The crypto provider every config of this crate is built with.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(test)]
mod tests;
