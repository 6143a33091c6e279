//! Reuse of validated entities across loads of a whole config. Validating an entity (its schema, its
//! plugin's config) and building its typed form is most of a load's CPU, and a reload usually changes a few
//! entities out of thousands. An entity's validated result depends only on its kind, its own fields as given,
//! its id, the ids its references resolved to, and the load's `_format_version` and `_transform` (the
//! plugin registry is fixed for a [`Reusable`]'s life). A load keys each entity by a 128-bit keyed hash of
//! all of these; an entity whose key maps to an entity of the previous load's config takes a copy of it
//! instead of being validated again.
//!
//! What is not reused: entities with an error before validation (a reference to nothing, a bad id), which go
//! the full way and report every error; entities that got a random value when built (a generated key, a
//! salted secret hash), since loading them again gives a new value; and everything when the previous config
//! is not the one the map was built for. Uniqueness is still checked over every entity, reused ones with the
//! keys their validation produced (kept as hashes); a reused entity whose key is taken goes the full way,
//! which reports the clash. So the result is the config (or the errors) a full validation gives, with the
//! previous load's timestamps on the reused entities (what [`crate::stamps::keep_unchanged_stamps`] gives
//! them anyway).

use super::kinds::Kind;
use super::typed::Digest16;
use crate::Config;
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};
use std::hash::{BuildHasher, RandomState};
use uuid::Uuid;

/// A natural key an entity claims in its kind, as the uniqueness check uses it: (field, key, and the value
/// an error shows when the key is taken).
pub(crate) type UniqueKey = (&'static str, String, Option<String>);

/// What a load keeps of one valid entity, to hand a copy of it to the next load.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub kind: Kind,
    /// Position in its kind's list of the config the map was built with.
    pub index: usize,
    /// What the config hash covers of it.
    pub digest: Digest16,
    /// Its natural keys, from its normalized form.
    pub unique: KeyHashes,
}

/// The hashes of an entity's natural keys ([`Reusable::unique_hash`]), at most two (a consumer's
/// `username` and `custom_id`), kept inline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHashes {
    hashes: [u128; 2],
    len: u8,
}

impl KeyHashes {
    /// None when there are more than two.
    pub(crate) fn new(hashes: impl Iterator<Item = u128>) -> Option<KeyHashes> {
        let mut out = KeyHashes {
            hashes: [0; 2],
            len: 0,
        };
        for h in hashes {
            *out.hashes.get_mut(usize::from(out.len))? = h;
            out.len += 1;
        }
        Some(out)
    }

    pub(crate) fn as_slice(&self) -> &[u128] {
        &self.hashes[..usize::from(self.len)]
    }
}

/// The map from input keys to the entities of one loaded config. Returned by
/// [`super::parse_value_reusing`] beside the config; the caller keeps it with that config and hands both to
/// the next load. Only meaningful with the config it came with.
pub struct Reusable {
    keys: (RandomState, RandomState),
    entries: HashMap<u128, Entry>,
    /// The serialization buffer of [`Reusable::key`].
    scratch: Vec<u8>,
    /// Entities the load that built this map copied from the previous one.
    copies: Copies,
    copied: usize,
}

impl Default for Reusable {
    fn default() -> Self {
        Reusable {
            keys: (RandomState::new(), RandomState::new()),
            entries: HashMap::default(),
            scratch: Vec::new(),
            copies: Copies::default(),
            copied: 0,
        }
    }
}

impl Reusable {
    /// An empty map for a new load, with the same hash keys as `self` (so keys compare across loads).
    pub(super) fn next(&self, capacity: usize) -> Reusable {
        Reusable {
            keys: self.keys.clone(),
            entries: HashMap::with_capacity_and_hasher(capacity, Default::default()),
            scratch: Vec::with_capacity(4096),
            copies: Copies::default(),
            copied: 0,
        }
    }

    /// Entities it can hand out.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entities the load that returned this map copied from the previous load instead of validating.
    pub fn copied(&self) -> usize {
        self.copied
    }

    /// Which entities of the config this load built are copies.
    pub fn copies(&self) -> &Copies {
        &self.copies
    }

    /// Notes that entity `index` of `kind` is a copy.
    pub(super) fn count_copy(&mut self, kind: Kind, index: usize) {
        self.copies.mark(kind, index);
        self.copied += 1;
    }

    pub(super) fn get(&self, key: u128) -> Option<&Entry> {
        self.entries.get(&key)
    }

    pub(super) fn insert(&mut self, key: u128, entry: Entry) {
        self.entries.insert(key, entry);
    }

    /// A natural key of an entity of `kind` (its `field` and value) as the uniqueness check keeps it.
    pub(super) fn unique_hash(&self, kind: Kind, field: &str, value: &[u8]) -> u128 {
        let key = (kind as u8, field, value);
        (self.keys.0.hash_one(key) as u128) << 64 | self.keys.1.hash_one(key) as u128
    }

    /// The input key of one entity: `load` (the format version and `_transform`), kind, id, resolved
    /// references (field and value) and own fields, serialized unambiguously and hashed twice with
    /// independent random keys.
    pub(super) fn key(
        &mut self,
        load: &str,
        kind: Kind,
        id: Uuid,
        refs: &[(&'static str, Uuid)],
        value: &Map<String, Value>,
    ) -> u128 {
        let b = &mut self.scratch;
        b.clear();
        for part in [load, kind.key()] {
            b.extend_from_slice(part.as_bytes());
            b.push(0);
        }
        b.extend_from_slice(id.as_bytes());
        for (field, id) in refs {
            b.extend_from_slice(field.as_bytes());
            b.push(0);
            b.extend_from_slice(id.as_bytes());
        }
        b.push(0);
        // Serializing a `Value` into memory cannot fail.
        let _ = serde_json::to_writer(&mut *b, value);
        let high = self.keys.0.hash_one(&b[..]) as u128;
        let low = self.keys.1.hash_one(&b[..]) as u128;
        high << 64 | low
    }
}

/// Which entities of a config are copies of the previous config's (per kind, by position): they equal
/// their namesake there, timestamps included, so comparing them with it again can be skipped.
#[derive(Debug, Default, Clone)]
pub struct Copies(Vec<Vec<bool>>);

impl Copies {
    pub fn is_copy(&self, kind: Kind, index: usize) -> bool {
        self.of(kind).get(index).copied().unwrap_or(false)
    }

    /// The flags of `kind`, by position (shorter than the list when its last entities are not copies).
    pub fn of(&self, kind: Kind) -> &[bool] {
        self.0.get(kind as usize).map_or(&[], Vec::as_slice)
    }

    fn mark(&mut self, kind: Kind, index: usize) {
        if self.0.len() <= kind as usize {
            self.0.resize(kind as usize + 1, Vec::new());
        }
        let flags = &mut self.0[kind as usize];
        if flags.len() <= index {
            flags.resize(index + 1, false);
        }
        flags[index] = true;
    }
}

/// The previous load's config and its map, when the caller has both.
#[derive(Clone, Copy)]
pub struct Previous<'a> {
    pub config: &'a Config,
    pub reusable: &'a Reusable,
}
