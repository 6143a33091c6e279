use super::*;
use sluice_model::declarative;

/// A service with these routes (fixed timestamps: a parse stamps entities without them with its time).
fn config(routes: &[(&str, &str)]) -> Config {
    let mut yaml = String::from(
        "_format_version: \"3.0\"\nservices:\n- name: s\n  url: http://127.0.0.1:9\n  created_at: 1\n  updated_at: 1\n  routes:\n",
    );
    for (name, path) in routes {
        yaml.push_str(&format!(
            "  - {{name: {name}, paths: [{path}], created_at: 1, updated_at: 1}}\n"
        ));
    }
    declarative::parse(&yaml, &sluice_plugins::Registry::builtin()).unwrap()
}

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
                    .unwrap()
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
    let a = config(&[("a", "/a"), ("b", "/b")]);
    assert_eq!(diff(&a, &a.clone()), Some(Vec::new()));
}

#[test]
fn a_changed_an_added_and_a_deleted_route_patch_into_the_new_config() {
    let old = config(&[("a", "/a"), ("b", "/b"), ("c", "/c")]);
    let new = config(&[("a", "/a"), ("c", "/c2"), ("d", "/d")]);
    let changes = diff(&old, &new).unwrap();
    assert_eq!(
        summary(&changes),
        [
            "routes upsert \"c\"",
            "routes upsert \"d\"",
            "routes delete"
        ]
    );
    let mut got = patched(&old, &changes);
    got.hash = new.hash.clone();
    assert_eq!(got, new);
}

#[test]
fn a_reordered_or_inserted_route_needs_the_whole_config() {
    let old = config(&[("a", "/a"), ("b", "/b")]);
    assert_eq!(diff(&old, &config(&[("b", "/b"), ("a", "/a")])), None);
    assert_eq!(
        diff(&old, &config(&[("a", "/a"), ("x", "/x"), ("b", "/b")])),
        None
    );
}
