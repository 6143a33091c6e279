//! Kong's v1 hybrid-mode protocol (kong/clustering/*) as plain data and functions, with no sockets: the
//! config hash, the frames a DP and a CP exchange, their gzip envelope, Kong's compatibility rules, and
//! Sluice's delta extension. The CP and DP runtimes (WebSocket over mTLS) are built on top of this crate;
//! docs/hybrid.md describes the protocol as Sluice implements it.

pub mod hash;
pub mod lua_number;

pub use hash::{config_hashes, value_hash, ConfigHashes, EMPTY_CONFIG_HASH};
