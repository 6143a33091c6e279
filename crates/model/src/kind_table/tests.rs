use crate::declarative::kinds::{Kind, OnDelete, ALL, TABLE};
use crate::Config;

/// Every derived list has every kind of the table, and the table is consistent with itself.
#[test]
fn every_kind_is_in_every_derived_list() {
    // The build order is a permutation of the table, parents before children.
    let mut sorted = ALL.to_vec();
    sorted.sort();
    assert_eq!(sorted, TABLE);
    let rank = |k: Kind| ALL.iter().position(|x| *x == k).unwrap();
    for kind in TABLE {
        for fk in kind.references() {
            assert!(
                rank(fk.parent) < rank(*kind),
                "{kind:?} is built before its parent {:?}",
                fk.parent
            );
        }
        // A kind nests under its parent only through one of its own foreign keys.
        for nest in kind.nests() {
            assert!(
                nest.child
                    .references()
                    .iter()
                    .any(|fk| fk.field == nest.field && fk.parent == *kind),
                "{kind:?} nests {:?} by {}, which is not a foreign key of it",
                nest.child,
                nest.field
            );
        }
        assert_eq!(Kind::from_key(kind.key()), Some(*kind));
        let _ = kind.schema();
    }
    // The config's lists, its counts and its store records cover every kind.
    let counts = Config::default().counts();
    let keys: Vec<&str> = counts.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, TABLE.iter().map(|k| k.key()).collect::<Vec<_>>());
    // Kong's delete rules: credentials, plugins, targets and SNIs go with their parent; a service with
    // routes cannot be deleted.
    let rule = |k: Kind, field: &str| {
        k.references()
            .iter()
            .find(|f| f.field == field)
            .unwrap()
            .on_delete
    };
    assert_eq!(rule(Kind::Route, "service"), OnDelete::Restrict);
    assert_eq!(rule(Kind::Plugin, "route"), OnDelete::Cascade);
    assert_eq!(rule(Kind::KeyAuth, "consumer"), OnDelete::Cascade);
    assert_eq!(rule(Kind::Target, "upstream"), OnDelete::Cascade);
    assert_eq!(rule(Kind::Sni, "certificate"), OnDelete::Cascade);
}
