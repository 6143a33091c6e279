use super::*;
use crate::hybrid::testing::parsed as config;
use sluice_model::declarative;

/// `(kind, op)` of each change, with the route's name for upserts.
fn summary(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(|c| match &c.op {
            Op::Upsert { entity } => format!("{} upsert {}", c.kind, entity["name"]),
            Op::Delete => format!("{} delete", c.kind),
        })
        .collect()
}

/// Patches `old` with `changes` as a data plane does.
fn patched(old: &Config, changes: &[Change]) -> Config {
    let mut config = old.clone();
    for c in changes {
        let kind = declarative::kinds::Kind::from_key(&c.kind).unwrap();
        match &c.op {
            Op::Upsert { entity } => {
                declarative::upsert_entity(&mut config, kind, &serde_json::to_vec(entity).unwrap())
                    .unwrap();
            }
            Op::Delete => {
                assert!(declarative::remove_entity(
                    &mut config,
                    kind,
                    c.id.parse().unwrap()
                ))
            }
        }
    }
    config
}

#[test]
fn an_unchanged_config_has_no_changes() {
    let a = config(&["/a", "/b"]);
    assert_eq!(diff(&a, &a.clone()), Some(Vec::new()));
}

#[test]
fn a_changed_an_added_and_a_deleted_route_patch_into_the_new_config() {
    let old = config(&["/a", "/b", "/c"]);
    let mut new = config(&["/a", "/c", "/d"]);
    new.routes[1].paths = Some(vec!["/c2".into()]);
    let changes = diff(&old, &new).unwrap();
    assert_eq!(
        summary(&changes),
        [
            "routes upsert \"rc\"",
            "routes upsert \"rd\"",
            "routes delete"
        ]
    );
    let mut got = patched(&old, &changes);
    got.hash = new.hash.clone();
    assert_eq!(got, new);
}

#[test]
fn a_reordered_or_inserted_route_needs_the_whole_config() {
    let old = config(&["/a", "/b"]);
    assert_eq!(diff(&old, &config(&["/b", "/a"])), None);
    assert_eq!(diff(&old, &config(&["/a", "/x", "/b"])), None);
}
