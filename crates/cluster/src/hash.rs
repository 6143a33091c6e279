//! Kong's config hash (kong/clustering/config_helper.lua, `calculate_config_hash`), byte-exact, over the
//! config table as JSON. A CP computes it once per export and sends it in `reconfigure`; a DP reports the
//! hash it runs in every ping, and `GET /clustering/data-planes` shows it, so a Sluice node and a Kong node
//! must agree on every byte.
//!
//! The rules, as Kong applies them:
//! - **Serialization** (`to_sorted_string`): a value is flattened into one byte string:
//!   - `null` (JSON null, i.e. `ngx.null` in the Lua table) → `/null/`;
//!   - a string → its raw bytes (no quoting, no escaping);
//!   - a number → LuaJIT's `tostring` (`%.14g`, see [`crate::lua_number`]): `1.0` and `1` both give `1`;
//!   - a boolean → `true` / `false`;
//!   - an empty object or array → `{}` (Lua cannot tell them apart);
//!   - an array of 1 to 5 items → the items joined by `;` (no trailing `;`); of 6 or more → every item
//!     followed by `;`;
//!   - an object → for each key in byte order: `key:` then the value then `;`.
//! - **Bounding**: before serializing any value, if more than 1,000,000 bytes have accumulated, the bytes so
//!   far are replaced by their raw 16-byte MD5 digest, and serialization continues after it.
//! - **Digest**: the lowercase hex MD5 of the result (32 characters).
//! - **Groups**: `routes`, `services`, `plugins`, `upstreams` and `targets` are hashed separately (a missing
//!   group hashes to [`EMPTY_CONFIG_HASH`]); the rest of the table (every other key, e.g. `_format_version`,
//!   `consumers`) is hashed as one object; the config hash is the MD5 of the six hex hashes concatenated in
//!   that order (routes, services, plugins, upstreams, targets, rest).
//! - A config that is not a table hashes as a single value (`null` → MD5 of `/null/`) and Kong sends only
//!   `hashes.config`; DPs fill the missing group hashes with zeros, which is what [`ConfigHashes`] holds.
//!
//! Because the config hash is made of six parts, a node that keeps them ([`Parts`]) can hash a changed
//! config by rehashing only the parts the change touched ([`Touched`]).

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lua_number::push_lua_number;

mod kept;
mod parts;
pub use kept::{array_hash, Marked, Serialized};
pub use parts::{Parts, Touched};

/// Kong's hash of "no config" (`DECLARATIVE_EMPTY_CONFIG_HASH`): 32 zeros. Also what a DP pings with
/// before it has applied a config.
pub const EMPTY_CONFIG_HASH: &str = "00000000000000000000000000000000";

/// Past this many buffered bytes the buffer is folded into its MD5 (Kong's `#o > 1000000`).
const FOLD_AT: usize = 1_000_000;

/// The group keys hashed on their own, in the order their hashes are concatenated.
pub const GROUPS: [&str; 5] = ["routes", "services", "plugins", "upstreams", "targets"];

/// The `hashes` table of a `reconfigure` frame: the config hash and one hash per group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigHashes {
    #[serde(default = "empty_hash")]
    pub config: String,
    #[serde(default = "empty_hash")]
    pub routes: String,
    #[serde(default = "empty_hash")]
    pub services: String,
    #[serde(default = "empty_hash")]
    pub plugins: String,
    #[serde(default = "empty_hash")]
    pub upstreams: String,
    #[serde(default = "empty_hash")]
    pub targets: String,
}

fn empty_hash() -> String {
    EMPTY_CONFIG_HASH.to_owned()
}

impl ConfigHashes {
    /// All zeros: the hashes of no config (Kong's `fill_empty_hashes` on an empty table).
    pub fn empty() -> Self {
        ConfigHashes {
            config: empty_hash(),
            routes: empty_hash(),
            services: empty_hash(),
            plugins: empty_hash(),
            upstreams: empty_hash(),
            targets: empty_hash(),
        }
    }
}

/// Kong's `calculate_config_hash`: the config hash and the per-group hashes of a config table.
pub fn config_hashes(config: &Value) -> ConfigHashes {
    let Value::Object(map) = config else {
        // Arrays are Lua tables too: the group lookups find nothing and the rest is the whole array.
        if let Value::Array(_) = config {
            return from_groups([None; 5], value_hash(config));
        }
        return ConfigHashes {
            config: value_hash(config),
            ..ConfigHashes::empty()
        };
    };
    Parts::of(map).hashes()
}

fn from_groups(groups: [Option<&Value>; 5], rest: String) -> ConfigHashes {
    Parts {
        groups: groups.map(group_hash),
        rest,
    }
    .hashes()
}

/// The hash of one group: of its value, or zeros when the table has none.
fn group_hash(group: Option<&Value>) -> String {
    group.map_or_else(empty_hash, value_hash)
}

/// The hash of the rest of a table: its entries whose keys are not groups, as one object.
fn rest_hash(map: &serde_json::Map<String, Value>) -> String {
    let mut rest = Sorted::default();
    rest.write_object(map.iter().filter(|(k, _)| !GROUPS.contains(&k.as_str())));
    rest.finish()
}

/// Kong's `calculate_hash` of one present value: MD5 hex of its sorted string.
pub fn value_hash(value: &Value) -> String {
    let mut s = Sorted::default();
    s.write(value);
    s.finish()
}

/// Kong's `to_sorted_string` of `value`, without the digest (for tests and debugging). The 1 MB folding
/// applies, so past that size the result holds raw digest bytes.
pub fn sorted_string(value: &Value) -> Vec<u8> {
    let mut s = Sorted::default();
    s.write(value);
    s.buf
}

/// The serialization buffer (Kong's `string.buffer`), folded into its MD5 when it grows past 1 MB; or,
/// for a value kept serialized ([`Serialized`]), never folded, with the offsets where Kong checks the
/// limit recorded instead.
#[derive(Default)]
struct Sorted {
    buf: Vec<u8>,
    /// When Some: do not fold, record each offset a value starts at (once per offset: a check right
    /// after another at the same offset cannot fold, the buffer is unchanged or 16 bytes).
    checks: Option<Vec<u32>>,
}

impl Sorted {
    fn write(&mut self, value: &Value) {
        match &mut self.checks {
            Some(checks) => {
                let at = self.buf.len() as u32;
                if checks.last() != Some(&at) {
                    checks.push(at);
                }
            }
            None if self.buf.len() > FOLD_AT => {
                let digest = Md5::digest(&self.buf);
                self.buf.clear();
                self.buf.extend_from_slice(&digest);
            }
            None => {}
        }
        match value {
            Value::Null => self.buf.extend_from_slice(b"/null/"),
            Value::String(s) => self.buf.extend_from_slice(s.as_bytes()),
            Value::Number(n) => push_lua_number(&mut self.buf, n.as_f64().unwrap_or(f64::NAN)),
            Value::Bool(b) => self
                .buf
                .extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Array(items) if items.is_empty() => self.buf.extend_from_slice(b"{}"),
            Value::Object(map) if map.is_empty() => self.buf.extend_from_slice(b"{}"),
            Value::Array(items) if items.len() <= 5 => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(b';');
                    }
                    self.write(item);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.write(item);
                    self.buf.push(b';');
                }
            }
            Value::Object(map) => self.write_object(map.iter()),
        }
    }

    /// An object's entries in key byte order (Lua's `table.sort` on strings compares bytes).
    fn write_object<'a>(&mut self, entries: impl Iterator<Item = (&'a String, &'a Value)>) {
        let mut entries: Vec<_> = entries.collect();
        if entries.is_empty() {
            self.buf.extend_from_slice(b"{}");
            return;
        }
        entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        for (k, v) in entries {
            self.buf.extend_from_slice(k.as_bytes());
            self.buf.push(b':');
            self.write(v);
            self.buf.push(b';');
        }
    }

    fn finish(self) -> String {
        hex(&Md5::digest(&self.buf))
    }
}

/// Lowercase hex, as `ngx.md5` returns it.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests;
