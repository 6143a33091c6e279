//! The six parts Kong's config hash is made of (five group hashes and the hash of the rest), kept next
//! to a live config so that the hash of the next one costs only the parts a change touched: a change to
//! routes rehashes the routes, not the 10,000 consumers. Only the `hashes` table ([`ConfigHashes`]) goes
//! on the wire; [`Parts`] is what a node remembers.

use super::{group_hash, hex, rest_hash, ConfigHashes, GROUPS};
use md5::{Digest, Md5};
use serde_json::{Map, Value};

/// The hashes of a config table's parts: one per group (in [`GROUPS`] order) and one of the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    pub groups: [String; 5],
    pub rest: String,
}

impl Parts {
    /// Hashes every part of `table` (Kong's `calculate_config_hash` before the final MD5).
    pub fn of(table: &Map<String, Value>) -> Parts {
        Parts {
            groups: GROUPS.map(|g| group_hash(table.get(g))),
            rest: rest_hash(table),
        }
    }

    /// The parts of a config that differs from this one only in the `touched` parts, which `partial`
    /// holds: each touched group is its entry in `partial` (none: the group is empty), and a touched rest
    /// is every non-group entry of `partial`. Entries of `partial` outside `touched` are ignored. Equal to
    /// [`Parts::of`] over the whole new table exactly when the untouched parts did not change.
    pub fn update(&self, touched: Touched, partial: &Map<String, Value>) -> Parts {
        let mut next = self.clone();
        for (i, group) in GROUPS.iter().enumerate() {
            if touched.group(i) {
                next.groups[i] = group_hash(partial.get(*group));
            }
        }
        if touched.rest() {
            next.rest = rest_hash(partial);
        }
        next
    }

    /// The `hashes` table: the parts and the config hash, the MD5 of the six hex hashes in order.
    pub fn hashes(&self) -> ConfigHashes {
        let mut all = Md5::new();
        for h in self.groups.iter().chain([&self.rest]) {
            all.update(h.as_bytes());
        }
        let [routes, services, plugins, upstreams, targets] = self.groups.clone();
        ConfigHashes {
            config: hex(&all.finalize()),
            routes,
            services,
            plugins,
            upstreams,
            targets,
        }
    }
}

/// Which parts a change touched: a bit per group (in [`GROUPS`] order), and one for the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Touched(u8);

const REST: u8 = 1 << GROUPS.len();

impl Touched {
    /// Every part: what a config with no previous hashes needs.
    pub const ALL: Touched = Touched((REST << 1) - 1);

    /// Marks the part the top-level key `key` belongs to: its group, or the rest (every other entity
    /// kind, `_format_version`, `_transform`).
    pub fn mark(&mut self, key: &str) {
        self.0 |= match GROUPS.iter().position(|g| *g == key) {
            Some(i) => 1 << i,
            None => REST,
        };
    }

    /// Whether the part `key` belongs to was touched: which entries a partial table needs.
    pub fn covers(self, key: &str) -> bool {
        match GROUPS.iter().position(|g| *g == key) {
            Some(i) => self.group(i),
            None => self.rest(),
        }
    }

    /// Whether the group `GROUPS[i]` was touched.
    pub fn group(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    /// Whether the rest was touched.
    pub fn rest(self) -> bool {
        self.0 & REST != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl<'a> FromIterator<&'a str> for Touched {
    /// The parts the keys belong to.
    fn from_iter<I: IntoIterator<Item = &'a str>>(keys: I) -> Touched {
        let mut touched = Touched::default();
        keys.into_iter().for_each(|k| touched.mark(k));
        touched
    }
}

#[cfg(test)]
mod tests;
