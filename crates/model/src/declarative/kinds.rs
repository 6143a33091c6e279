//! The entity kinds of a declarative file: their top-level keys, schemas, references and nesting, all
//! derived from the one table in [`crate::kind_table`].

use crate::schema::Schema;

/// What happens to an entity when the entity its foreign key points at is deleted (Kong's `on_delete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDelete {
    /// Deleted with it (plugins, credentials, targets, SNIs).
    Cascade,
    /// The delete is refused while this entity exists (routes of a service).
    Restrict,
}

/// A kind nested under another in the declarative format and the Admin API: `/{parent}/{x}/{segment}` lists
/// the `child` entities whose `field` is `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nest {
    pub child: Kind,
    pub field: &'static str,
    pub segment: &'static str,
}

/// A foreign key of a kind: its field, the kind it points at, and Kong's delete rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignKey {
    pub field: &'static str,
    pub parent: Kind,
    pub on_delete: OnDelete,
}

/// `Some("field")` for one field, `None` for none.
macro_rules! field_name {
    () => {
        None
    };
    ($field:ident) => {
        Some(stringify!($field))
    };
}

macro_rules! on_delete {
    (cascade) => {
        OnDelete::Cascade
    };
    (restrict) => {
        OnDelete::Restrict
    };
}

/// Orders kinds by their build rank (a const selection sort: the table is small and this runs at compile
/// time).
const fn by_rank<const N: usize>(ranked: [(u8, Kind); N]) -> [Kind; N] {
    let mut out = [Kind::Service; N];
    let mut taken = [false; N];
    let mut i = 0;
    while i < N {
        let mut best = N;
        let mut j = 0;
        while j < N {
            if !taken[j] && (best == N || ranked[j].0 < ranked[best].0) {
                best = j;
            }
            j += 1;
        }
        taken[best] = true;
        out[i] = ranked[best].1;
        i += 1;
    }
    out
}

macro_rules! define_kinds {
    ([] $( $variant:ident ($ty:ident) {
        key: $key:ident, singular: $singular:literal, schema: $schema:ident, build: $rank:literal,
        admin: $path:literal, endpoint: [$($endpoint:ident)?],
        refs: [$($reffield:literal),*], unique: [$($uniq:ident),*],
        fks: [$($fkfield:ident -> $fkparent:ident $rule:ident),*],
        nests: [$($nchild:ident . $nfield:ident as $nseg:literal),* $(,)?],
    } )*) => {
        /// One entity kind.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $($variant),*
        }

        /// Every kind in table order (the [`crate::Config`] lists' order).
        pub const TABLE: &[Kind] = &[$(Kind::$variant),*];

        /// Every kind, in the order entities are built (parents before children).
        pub const ALL: [Kind; TABLE.len()] = by_rank([$(($rank, Kind::$variant)),*]);

        impl Kind {
            /// The top-level key in a declarative file, and the [`crate::Config`] list.
            pub fn key(self) -> &'static str {
                match self {
                    $(Kind::$variant => stringify!($key)),*
                }
            }

            /// Kong's singular name, used in error reports.
            pub fn singular(self) -> &'static str {
                match self {
                    $(Kind::$variant => $singular),*
                }
            }

            /// The Admin API collection path (`key-auths` for `keyauth_credentials`, ...).
            pub const fn admin_path(self) -> &'static str {
                match self {
                    $(Kind::$variant => $path),*
                }
            }

            /// The field besides `id` that `/{path}/{key}` accepts (Kong's `endpoint_key`).
            pub const fn endpoint_key(self) -> Option<&'static str> {
                match self {
                    $(Kind::$variant => field_name!($($endpoint)?)),*
                }
            }

            /// Kinds nested under this one, in the order the declarative format reads them.
            pub fn nests(self) -> &'static [Nest] {
                match self {
                    $(Kind::$variant => &[$(Nest {
                        child: Kind::$nchild,
                        field: stringify!($nfield),
                        segment: $nseg,
                    }),*]),*
                }
            }

            /// Foreign keys of this kind with Kong's delete rules.
            pub fn references(self) -> &'static [ForeignKey] {
                match self {
                    $(Kind::$variant => &[$(ForeignKey {
                        field: stringify!($fkfield),
                        parent: Kind::$fkparent,
                        on_delete: on_delete!($rule),
                    }),*]),*
                }
            }

            /// Fields unique among entities of this kind (besides `id`).
            pub fn unique_fields(self) -> &'static [&'static str] {
                match self {
                    $(Kind::$variant => &[$(stringify!($uniq)),*]),*
                }
            }

            /// Fields by which entities of this kind can be referenced besides `id`.
            pub fn name_fields(self) -> &'static [&'static str] {
                match self {
                    $(Kind::$variant => &[$($reffield),*]),*
                }
            }

            fn build_schema(self) -> Schema {
                match self {
                    $(Kind::$variant => super::schemas::$schema()),*
                }
            }
        }
    };
}

crate::entity_kinds!(define_kinds);

impl Kind {
    pub fn from_key(key: &str) -> Option<Kind> {
        TABLE.iter().copied().find(|k| k.key() == key)
    }

    /// The entity schema, built once per process (validation asks for it once per entity).
    pub fn schema(self) -> &'static Schema {
        static SCHEMAS: std::sync::LazyLock<Vec<Schema>> =
            std::sync::LazyLock::new(|| TABLE.iter().map(|k| k.build_schema()).collect());
        // `TABLE` is the declaration order, so the discriminant indexes the list.
        &SCHEMAS[self as usize]
    }
}
