//! Kong's v1 hybrid-mode protocol (kong/clustering/*, Kong 3.9) as plain data and functions, with no
//! sockets: the config hash ([`hash`]), the frames a DP and a CP exchange ([`frames`]), their gzip envelope
//! ([`gzip`]), Kong's compatibility rules and `sync_status` values ([`compat`]), and Sluice's delta
//! extension ([`delta`]). The CP and DP runtimes (WebSocket over mTLS, the DP's store, the Admin API's
//! `/clustering/*`) are to be built on top of this crate; docs/hybrid.md describes the protocol as Sluice
//! implements it and what is not built yet.

pub mod compat;
pub mod delta;
pub mod digest;
pub mod frames;
pub mod gzip;
pub mod hash;
pub mod lua_number;

/// The config-hash golden vectors, shared with tests/luajit.rs.
#[cfg(test)]
#[path = "../tests/common/vectors.rs"]
mod test_vectors;

pub use compat::{Incompatible, SyncStatus};
pub use frames::cp::{CpMessage, Reconfigure};
pub use frames::dp::{BasicInfo, DpMessage, ErrorReport, Outlet, PluginInfo};
pub use frames::FrameError;
pub use hash::{config_hashes, value_hash, ConfigHashes, EMPTY_CONFIG_HASH};
