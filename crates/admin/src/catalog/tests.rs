//! Unit tests of `catalog`.

use super::*;
use sluice_model::Ref;
use sluice_model::Sni;

fn sni(n: u128, name: &str) -> Sni {
    Sni {
        id: Uuid::from_u128(n),
        name: name.into(),
        certificate: Ref {
            id: Uuid::from_u128(99),
        },
        tags: None,
        created_at: 0,
        updated_at: 0,
    }
}

#[test]
fn find_uses_id_for_uuids_and_the_endpoint_key_otherwise() {
    let a = sni(1, "a.test");
    // A name that looks like a UUID is only ever matched as an id, as in Kong.
    let tricky = sni(2, &Uuid::from_u128(1).to_string());
    let items: Vec<&dyn AdminEntity> = vec![&a, &tricky];
    assert_eq!(find(&items, "a.test").map(|e| e.id()), Some(a.id));
    assert_eq!(
        find(&items, &Uuid::from_u128(1).to_string()).map(|e| e.id()),
        Some(a.id)
    );
    assert_eq!(
        find(&items, &Uuid::from_u128(3).to_string()).map(|e| e.id()),
        None
    );
    assert_eq!(find(&items, "b.test").map(|e| e.id()), None);
    assert_eq!(a.foreign("certificate"), Some(Uuid::from_u128(99)));
    assert_eq!(a.foreign("service"), None);
}

#[test]
fn relations_name_existing_collections_and_fields() {
    for r in RELATIONS {
        assert!(collection(r.parent).is_some(), "{}", r.parent);
        assert!(collection(r.child).is_some(), "{}", r.child);
        assert_eq!(
            relation(r.parent, r.segment).map(|x| x.child),
            Some(r.child)
        );
    }
    let paths: Vec<&str> = COLLECTIONS.iter().map(|c| c.path).collect();
    let mut unique = paths.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(paths.len(), unique.len());
}

/// The catalog is derived from the model's kind table: one collection per kind, one relation per nesting.
#[test]
fn the_catalog_has_every_kind_and_nesting() {
    use sluice_model::declarative::kinds::TABLE;
    assert_eq!(COLLECTIONS.len(), TABLE.len());
    for kind in TABLE {
        let c = collection(kind.admin_path()).expect("collection");
        assert_eq!(c.schema, kind.key());
        assert_eq!(c.endpoint_key, kind.endpoint_key());
        for nest in kind.nests() {
            let r = relation(kind.admin_path(), nest.segment).expect("relation");
            assert_eq!((r.child, r.field), (nest.child.admin_path(), nest.field));
        }
    }
    assert_eq!(
        RELATIONS.len(),
        TABLE.iter().map(|k| k.nests().len()).sum::<usize>()
    );
}
