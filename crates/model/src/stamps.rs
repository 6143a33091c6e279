//! Load-time timestamps kept across reloads. A declarative entity without `created_at`/`updated_at` is
//! stamped with the load's time ([`crate::declarative`]), so loading the same entities again would give
//! every one of them new timestamps: each reload would look like a change of the whole config, to the
//! snapshot compiler (which reuses the compiled forms of unchanged routes), to the store, and to a hybrid
//! control plane, which would send every data plane all of it. [`keep_unchanged_stamps`] gives an entity
//! that is the same as the live one in all but its timestamps the live one's timestamps, so only what
//! changed looks changed. (An edit of a timestamp alone is therefore not taken; timestamps are not
//! something a declarative file changes.)

use crate::declarative::Copies;
use crate::entities::*;
use std::collections::HashMap;
use uuid::Uuid;

/// An entity's id and the timestamps it carries.
trait Stamped: PartialEq {
    /// `created_at`, and `updated_at` where the kind has one.
    type Stamps: Copy;
    fn id(&self) -> Uuid;
    fn stamps(&self) -> Self::Stamps;
    fn set_stamps(&mut self, stamps: Self::Stamps);
}

macro_rules! stamped {
    ($stamps:ty: $($ty:ident),*; |$e:ident| $get:expr, |$s:ident| $set:expr) => {$(
        impl Stamped for $ty {
            type Stamps = $stamps;
            fn id(&self) -> Uuid {
                self.id
            }
            fn stamps(&self) -> $stamps {
                let $e = self;
                $get
            }
            fn set_stamps(&mut self, $s: $stamps) {
                let $e = self;
                $set
            }
        }
    )*};
}

stamped!((i64, i64): Service, Route, Upstream, Consumer, Plugin, Certificate, Sni, CaCertificate;
    |e| (e.created_at, e.updated_at), |s| (e.created_at, e.updated_at) = s);
stamped!((f64, f64): Target; |e| (e.created_at, e.updated_at), |s| (e.created_at, e.updated_at) = s);
stamped!(i64: KeyAuthCredential, BasicAuthCredential, HmacAuthCredential, Acl, JwtSecret,
    OAuth2Credential; |e| e.created_at, |s| e.created_at = s);

/// Gives each entity of `next` that equals its namesake (same kind and id) in `live` but for its
/// timestamps the live one's timestamps.
pub fn keep_unchanged_stamps(next: &mut Config, live: &Config) {
    keep_unchanged_stamps_but(next, live, &Copies::default());
}

/// [`keep_unchanged_stamps`], skipping the entities `copies` marks as copies of `live`'s (they have its
/// timestamps already).
pub fn keep_unchanged_stamps_but(next: &mut Config, live: &Config, copies: &Copies) {
    use crate::declarative::kinds::Kind;
    macro_rules! each_kind {
        ([] $( $variant:ident ($ty:ident) { key: $key:ident, $($rest:tt)* } )*) => {
            $( keep(&mut next.$key, &live.$key, copies.of(Kind::$variant)); )*
        };
    }
    crate::entity_kinds!(each_kind);
}

fn keep<T: Stamped>(next: &mut [T], live: &[T], copies: &[bool]) {
    if live.is_empty() || next.is_empty() || copies.iter().filter(|c| **c).count() == next.len() {
        return;
    }
    let by_id: HashMap<Uuid, &T> = live.iter().map(|e| (e.id(), e)).collect();
    for (i, entity) in next.iter_mut().enumerate() {
        if copies.get(i).copied().unwrap_or(false) {
            continue;
        }
        let Some(old) = by_id.get(&entity.id()) else {
            continue;
        };
        // Compared with the live stamps in place (no copy of either entity); put back if it differs.
        let own = entity.stamps();
        entity.set_stamps(old.stamps());
        if entity != *old {
            entity.set_stamps(own);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declarative::parse;
    use crate::PluginDef;

    struct NoPlugins;
    impl crate::PluginRegistry for NoPlugins {
        fn plugin(&self, _: &str) -> Option<&PluginDef> {
            None
        }
        fn names(&self) -> Vec<&'static str> {
            Vec::new()
        }
    }

    #[test]
    fn unchanged_entities_keep_their_timestamps_and_changed_ones_do_not() {
        let doc = |path: &str| {
            format!(
                "_format_version: '3.0'\nservices:\n- name: s\n  url: http://u\n  routes:\n  \
                 - {{name: a, paths: [/a]}}\n  - {{name: b, paths: [{path}]}}\n"
            )
        };
        let mut live = parse(&doc("/b"), &NoPlugins).unwrap();
        for route in &mut live.routes {
            route.created_at = 1;
            route.updated_at = 2;
        }
        live.services[0].created_at = 3;
        let mut next = parse(&doc("/b2"), &NoPlugins).unwrap();
        keep_unchanged_stamps(&mut next, &live);
        assert_eq!(next.services[0].created_at, 3);
        assert_eq!(
            (next.routes[0].created_at, next.routes[0].updated_at),
            (1, 2)
        );
        // Route b changed: it keeps the new load's stamps.
        assert_ne!(next.routes[1].created_at, 1);
        assert_eq!(next.routes[1].paths, Some(vec!["/b2".to_string()]));
    }
}
