//! The config as flat records for a key-value store (the LMDB config store): each entity's JSON with the
//! natural keys and references a store indexes. Serialized from the typed entities directly, one at a
//! time, so committing a large config never builds a second copy of it.

use crate::declarative::Copies;
use crate::entities::*;
use crate::Config;
use serde::Serialize;
use uuid::Uuid;

/// One entity, ready to be written.
pub struct Record<'a> {
    /// The entity kind's top-level key (`routes`, `keyauth_credentials`, ...).
    pub kind: &'static str,
    pub id: Uuid,
    /// The entity as JSON, in the shape [`crate::declarative::from_store`] reads back.
    pub body: Vec<u8>,
    /// Natural keys, e.g. `("name", "svc-a")`, unique per kind.
    pub unique: Vec<(&'static str, &'a str)>,
    /// References as (field, referenced id), e.g. `("service", <uuid>)`.
    pub foreign: Vec<(&'static str, Uuid)>,
}

/// What a store needs to know about one entity type beyond its JSON, derived from [`crate::kind_table`]'s
/// `unique` and `fks` columns.
trait Keys: Serialize {
    fn id(&self) -> Uuid;
    fn unique(&self) -> Vec<(&'static str, &str)>;
    fn foreign(&self) -> Vec<(&'static str, Uuid)>;
}

/// A natural-key field, required (`String`) or optional (`Option<String>`).
pub trait KeyField {
    fn key_str(&self) -> Option<&str>;
}

impl KeyField for String {
    fn key_str(&self) -> Option<&str> {
        Some(self)
    }
}

impl KeyField for Option<String> {
    fn key_str(&self) -> Option<&str> {
        self.as_deref()
    }
}

/// A foreign-key field, required (`Ref`) or optional (`Option<Ref>`).
pub trait RefField {
    fn ref_id(&self) -> Option<Uuid>;
}

impl RefField for Ref {
    fn ref_id(&self) -> Option<Uuid> {
        Some(self.id)
    }
}

impl RefField for Option<Ref> {
    fn ref_id(&self) -> Option<Uuid> {
        self.map(|r| r.id)
    }
}

macro_rules! store_keys {
    ([] $( $variant:ident ($ty:ident) {
        key: $key:ident, singular: $singular:literal, schema: $schema:ident, build: $rank:literal,
        admin: $path:literal, endpoint: [$($endpoint:ident)?],
        refs: [$($reffield:literal),*], unique: [$($uniq:ident),*],
        fks: [$($fkfield:ident -> $fkparent:ident $rule:ident),*],
        nests: [$($nests:tt)*],
    } )*) => {
        $(impl Keys for $ty {
            fn id(&self) -> Uuid {
                self.id
            }
            fn unique(&self) -> Vec<(&'static str, &str)> {
                [$((stringify!($uniq), self.$uniq.key_str())),*]
                    .into_iter()
                    .filter_map(|(f, v): (&'static str, Option<&str>)| v.map(|v| (f, v)))
                    .collect()
            }
            fn foreign(&self) -> Vec<(&'static str, Uuid)> {
                [$((stringify!($fkfield), self.$fkfield.ref_id())),*]
                    .into_iter()
                    .filter_map(|(f, r): (&'static str, Option<Uuid>)| r.map(|r| (f, r)))
                    .collect()
            }
        })*
    };
}

crate::entity_kinds!(store_keys);

/// Visits every entity of `config` as a [`Record`], kinds in the flat export's order, entities in config
/// order (which is the order ties are broken by, so a store must keep it).
pub fn for_each_record(config: &Config, mut f: impl FnMut(Record<'_>)) {
    fn each<'a, T: Keys>(kind: &'static str, items: &'a [T], f: &mut dyn FnMut(Record<'a>)) {
        for item in items {
            f(Record {
                kind,
                id: item.id(),
                // Serializing a typed entity into memory cannot fail.
                body: serde_json::to_vec(item).unwrap_or_default(),
                unique: item.unique(),
                foreign: item.foreign(),
            });
        }
    }
    crate::entities::each_entity_list!(config, each, &mut f);
}

/// The entities of `next` a store holding `live` must write, and the entities of `live` it must delete,
/// to hold `next`: (kind, position in `next`'s list of that kind) and (kind, id), kinds in the flat
/// export's order.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    pub puts: Vec<(&'static str, usize)>,
    pub deletes: Vec<(&'static str, Uuid)>,
}

/// What changed from `live` to `next`, entity by entity (same id, equal value), when a store keeping
/// each entity's position and appending new ones can follow: in each kind, the entities `next` keeps
/// are in `live`'s order and its new ones come after them. None otherwise (write the whole config).
/// Entities `copies` marks as copies of `live`'s are not compared again.
pub fn changes(next: &Config, live: &Config, copies: &Copies) -> Option<Changes> {
    use crate::declarative::kinds::Kind;
    let mut out = Changes::default();
    macro_rules! each_kind {
        ([] $( $variant:ident ($ty:ident) { key: $key:ident, $($rest:tt)* } )*) => {
            $( if !kind_changes(
                stringify!($key),
                (&next.$key, copies.of(Kind::$variant)),
                &live.$key,
                &mut out,
            ) {
                return None;
            } )*
        };
    }
    crate::entity_kinds!(each_kind);
    Some(out)
}

fn kind_changes<T: Keys + PartialEq>(
    kind: &'static str,
    (next, copies): (&[T], &[bool]),
    live: &[T],
    out: &mut Changes,
) -> bool {
    let position: rustc_hash::FxHashMap<Uuid, usize> =
        live.iter().enumerate().map(|(i, e)| (e.id(), i)).collect();
    let mut kept = vec![false; live.len()];
    let (mut last, mut appended) = (None, false);
    for (i, e) in next.iter().enumerate() {
        match position.get(&e.id()) {
            Some(&j) => {
                if appended || last.is_some_and(|l| j <= l) {
                    return false;
                }
                last = Some(j);
                kept[j] = true;
                if !copies.get(i).copied().unwrap_or(false) && live[j] != *e {
                    out.puts.push((kind, i));
                }
            }
            None => {
                appended = true;
                out.puts.push((kind, i));
            }
        }
    }
    let gone = live.iter().zip(kept).filter(|(_, kept)| !kept);
    out.deletes.extend(gone.map(|(e, _)| (kind, e.id())));
    true
}
