//! Kong's compatibility rules between a CP and a DP (kong/clustering/compat/init.lua, Kong 3.9), with its
//! `sync_status` values and messages. A CP runs [`check_version`] once, when a DP's `basic_info` arrives
//! (a failure closes the connection), and [`check_configuration`] before every push to that DP (a failure
//! skips the push; the DP keeps its last config and the status shows why).
//!
//! The rules:
//! - versions are read as `major.minor.patch...` (`^(\d+)\.(\d+)\.\d+`); an unreadable one is incompatible;
//! - the majors must be equal, and the DP's minor must not exceed the CP's (an older DP is fine);
//! - plugins the CP *has* but the DP lacks, or whose versions differ, are only logged at connect time;
//! - a plugin the config *uses* must exist on the DP (`plugin_set_incompatible`), with the same major
//!   version and a minor not above the CP's (`plugin_version_incompatible`) when both sides report a
//!   readable version; opentelemetry 0.1.x on the DP is accepted whatever the CP has (a Kong quirk:
//!   that plugin shipped as 0.1.0 for years);
//! - with wasm filters, every filter the CP has must exist on the DP (`filter_set_incompatible`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::frames::dp::PluginInfo;

/// Kong's `CLUSTERING_SYNC_STATUS` values, as stored per DP and shown by `GET /clustering/data-planes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncStatus {
    Unknown,
    Normal,
    KongVersionIncompatible,
    PluginSetIncompatible,
    PluginVersionIncompatible,
    FilterSetIncompatible,
}

impl SyncStatus {
    pub const ALL: [SyncStatus; 6] = [
        SyncStatus::Unknown,
        SyncStatus::Normal,
        SyncStatus::KongVersionIncompatible,
        SyncStatus::PluginSetIncompatible,
        SyncStatus::PluginVersionIncompatible,
        SyncStatus::FilterSetIncompatible,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SyncStatus::Unknown => "unknown",
            SyncStatus::Normal => "normal",
            SyncStatus::KongVersionIncompatible => "kong_version_incompatible",
            SyncStatus::PluginSetIncompatible => "plugin_set_incompatible",
            SyncStatus::PluginVersionIncompatible => "plugin_version_incompatible",
            SyncStatus::FilterSetIncompatible => "filter_set_incompatible",
        }
    }

    pub fn parse(s: &str) -> Option<SyncStatus> {
        SyncStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for SyncStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed check: the DP's new `sync_status` and Kong's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Incompatible {
    pub status: SyncStatus,
    pub message: String,
}

fn incompatible(status: SyncStatus, message: String) -> Incompatible {
    Incompatible { status, message }
}

/// `major.minor` of a version string (Kong's `extract_major_minor`): digits, dot, digits, dot, a digit.
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let n1 = digits(version);
    let rest = version[n1..].strip_prefix('.')?;
    let n2 = digits(rest);
    let after = rest[n2..].strip_prefix('.')?;
    if n1 == 0 || n2 == 0 || digits(after) == 0 {
        return None;
    }
    Some((version[..n1].parse().ok()?, rest[..n2].parse().ok()?))
}

/// Kong's `check_kong_version_compatibility`. Success means `sync_status` = `normal`.
pub fn check_kong_version(cp_version: &str, dp_version: &str) -> Result<(), Incompatible> {
    let bad = |m| Err(incompatible(SyncStatus::KongVersionIncompatible, m));
    let Some((cp_major, cp_minor)) = major_minor(cp_version) else {
        return bad(format!(
            "data plane version {dp_version} is incompatible with control plane version"
        ));
    };
    let Some((dp_major, dp_minor)) = major_minor(dp_version) else {
        return bad(format!(
            "data plane version is incompatible with control plane version {cp_version} ({cp_major}.x.y are accepted)"
        ));
    };
    if cp_major != dp_major {
        return bad(format!(
            "data plane version {dp_version} is incompatible with control plane version {cp_version} ({cp_major}.x.y are accepted)"
        ));
    }
    if cp_minor < dp_minor {
        return bad(format!(
            "data plane version {dp_version} is incompatible with older control plane version {cp_version}"
        ));
    }
    Ok(())
}

/// A plugin's version as Kong's `plugins_list_to_map` keeps it: only when it reads as `major.minor.x`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginVersion {
    pub major: u64,
    pub minor: u64,
    pub version: String,
}

/// A node's plugins by name (`None`: present, version unknown or unreadable).
pub type PluginMap = BTreeMap<String, Option<PluginVersion>>;

/// Kong's `plugins_list_to_map`.
pub fn plugin_map(plugins: &[PluginInfo]) -> PluginMap {
    plugins
        .iter()
        .map(|p| {
            let v = p.version.as_deref().and_then(|v| {
                let (major, minor) = major_minor(v)?;
                Some(PluginVersion {
                    major,
                    minor,
                    version: v.to_owned(),
                })
            });
            (p.name.clone(), v)
        })
        .collect()
}

/// Kong's `check_version_compatibility`, run when a DP connects: only the Kong version can refuse it;
/// plugin differences are logged by Kong (not modelled here).
pub fn check_version(cp_version: &str, dp_version: &str) -> Result<(), Incompatible> {
    check_kong_version(cp_version, dp_version)
}

/// Kong's `check_configuration_compatibility`, before each push: every plugin in `cp_plugins` (in the
/// CP's order) that the config uses must be on the DP with a compatible version. `filters` is
/// `Some((cp, dp))` when the CP runs wasm.
pub fn check_configuration(
    cp_plugins: &[PluginInfo],
    configured: &BTreeSet<String>,
    dp_plugins: &PluginMap,
    filters: Option<(&BTreeSet<String>, &BTreeSet<String>)>,
) -> Result<(), Incompatible> {
    let cp_map = plugin_map(cp_plugins);
    for plugin in cp_plugins.iter().filter(|p| configured.contains(&p.name)) {
        let name = &plugin.name;
        let cp = cp_map.get(name).and_then(Option::as_ref);
        let Some(dp) = dp_plugins.get(name) else {
            let message = match cp {
                Some(cp) => format!(
                    "configured {name} plugin {} is missing from data plane",
                    cp.version
                ),
                None => format!("configured {name} plugin is missing from data plane"),
            };
            return Err(incompatible(SyncStatus::PluginSetIncompatible, message));
        };
        let (Some(cp), Some(dp)) = (cp, dp) else {
            continue;
        };
        if name == "opentelemetry" && dp.major == 0 && dp.minor == 1 {
            continue;
        }
        if cp.major != dp.major || cp.minor < dp.minor {
            return Err(incompatible(
                SyncStatus::PluginVersionIncompatible,
                format!(
                    "configured data plane {name} plugin version {} is different to control plane plugin version {}",
                    dp.version, cp.version
                ),
            ));
        }
    }
    if let Some((cp_filters, dp_filters)) = filters {
        let missing: Vec<&str> = cp_filters
            .difference(dp_filters)
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(incompatible(
                SyncStatus::FilterSetIncompatible,
                format!(
                    "data plane is missing one or more wasm filters ({})",
                    missing.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
