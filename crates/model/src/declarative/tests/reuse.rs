//! A load reusing the previous load's entities gives exactly the config (or the errors) a load from
//! scratch gives, and takes the previous entities only where their input did not change.

use super::*;
use crate::declarative::{parse_value_reusing, to_document, Previous, Reusable};

/// Nested entities, references by name at the top level, plugin configs, credentials whose stored value
/// depends on their parent's id (basic-auth), and one with a generated key.
const BASE: &str = r#"
_format_version: "3.0"
services:
- name: svc
  url: http://example.com
  routes:
  - name: r1
    paths: [/r1]
    plugins:
    - name: limits
      config: {second: 5}
  - name: r2
    paths: [/r2]
- name: other
  url: http://other.example.com
routes:
- name: top
  service: other
  paths: [/top]
plugins:
- name: limits
  route: top
  config: {second: 7}
- name: guard
  service: svc
upstreams:
- name: up
  targets:
  - target: 10.0.0.1
consumers:
- username: ann
  custom_id: ann-1
  keyauth_credentials:
  - key: ann-key
  - {}
  basicauth_credentials:
  - username: ann
    password: pw
"#;

fn load(text: &str, previous: Option<Previous<'_>>) -> Result<(Config, Reusable), ConfigErrors> {
    parse_value_reusing(to_document(text).unwrap(), &TestRegistry::new(), previous)
}

/// The base config loaded, with every timestamp set to 1 so that copies of its entities show.
fn base() -> (Config, Reusable) {
    base_of(BASE)
}

fn base_of(text: &str) -> (Config, Reusable) {
    let (mut c, reusable) = load(text, None).unwrap();
    macro_rules! stamp {
        ($($list:ident),*; $($created:ident),*) => {
            $(for e in &mut c.$list {
                (e.created_at, e.updated_at) = (1, 1);
            })*
            $(for e in &mut c.$created {
                e.created_at = 1;
            })*
        };
    }
    stamp!(services, routes, plugins, consumers, upstreams; keyauth_credentials, basicauth_credentials);
    for t in &mut c.targets {
        (t.created_at, t.updated_at) = (1.0, 1.0);
    }
    (c, reusable)
}

/// Loads `text` reusing the base, and from scratch; the two must agree once each went through
/// `keep_unchanged_stamps` against the base, as the loader does (the reused entities have the base's
/// timestamps already). Returns the reusing load's config and which of its entities were copies.
fn same_as_from_scratch(text: &str) -> (Config, Vec<(&'static str, usize)>) {
    same_as_from_scratch_after(BASE, text)
}

fn same_as_from_scratch_after(base: &str, text: &str) -> (Config, Vec<(&'static str, usize)>) {
    let (live, reusable) = base_of(base);
    let previous = Previous {
        config: &live,
        reusable: &reusable,
    };
    let reused = load(text, Some(previous));
    let scratch = load(text, None);
    match (reused, scratch) {
        (Ok((mut reused, _)), Ok((mut scratch, _))) => {
            let copies = copied(&reused);
            crate::stamps::keep_unchanged_stamps(&mut reused, &live);
            crate::stamps::keep_unchanged_stamps(&mut scratch, &live);
            let mut expected = scratch;
            // Generated keys are random on every load: take the reusing load's to compare the rest.
            for (e, r) in expected
                .keyauth_credentials
                .iter_mut()
                .zip(&reused.keyauth_credentials)
            {
                if e.key.len() == 32 && e.key != "ann-key" {
                    e.key.clone_from(&r.key);
                    e.created_at = r.created_at;
                }
            }
            assert_eq!(reused, expected, "{text}");
            assert_eq!(reused.hash(), expected.hash());
            (reused, copies)
        }
        (Err(reused), Err(scratch)) => {
            assert_eq!(reused, scratch, "{text}");
            panic!("expected a valid config:\n{reused}")
        }
        (reused, scratch) => panic!("reuse {:?} vs scratch {:?}", reused.err(), scratch.err()),
    }
}

/// Entities of the reusing load taken from the base (timestamp 1), by kind.
fn copied(c: &Config) -> Vec<(&'static str, usize)> {
    let n = |stamps: Vec<i64>| stamps.into_iter().filter(|s| *s == 1).count();
    vec![
        (
            "services",
            n(c.services.iter().map(|e| e.created_at).collect()),
        ),
        ("routes", n(c.routes.iter().map(|e| e.created_at).collect())),
        (
            "plugins",
            n(c.plugins.iter().map(|e| e.created_at).collect()),
        ),
        (
            "consumers",
            n(c.consumers.iter().map(|e| e.created_at).collect()),
        ),
        (
            "keyauth",
            n(c.keyauth_credentials.iter().map(|e| e.created_at).collect()),
        ),
        (
            "basicauth",
            n(c.basicauth_credentials
                .iter()
                .map(|e| e.created_at)
                .collect()),
        ),
        (
            "targets",
            n(c.targets.iter().map(|e| e.created_at as i64).collect()),
        ),
    ]
}

fn counts(
    services: usize,
    routes: usize,
    plugins: usize,
    rest: [usize; 4],
) -> Vec<(&'static str, usize)> {
    let [consumers, keyauth, basicauth, targets] = rest;
    vec![
        ("services", services),
        ("routes", routes),
        ("plugins", plugins),
        ("consumers", consumers),
        ("keyauth", keyauth),
        ("basicauth", basicauth),
        ("targets", targets),
    ]
}

#[test]
fn the_same_config_again_is_all_copies_but_the_generated_key() {
    let (c, copies) = same_as_from_scratch(BASE);
    assert_eq!(copies, counts(2, 3, 3, [1, 1, 1, 1]));
    let (live, _) = base();
    assert_eq!(c.hash(), live.hash());
    assert_ne!(
        c.keyauth_credentials[1].key,
        live.keyauth_credentials[1].key
    );
}

#[test]
fn a_changed_entity_is_validated_again_and_the_rest_copied() {
    let (c, copies) = same_as_from_scratch(&BASE.replace("[/r2]", "[/r2, /r2b]"));
    assert_eq!(c.routes[1].paths, Some(vec!["/r2".into(), "/r2b".into()]));
    assert_eq!(copies, counts(2, 2, 3, [1, 1, 1, 1]));
    let (c, copies) = same_as_from_scratch(&BASE.replace("{second: 5}", "{second: 6}"));
    assert_eq!(c.plugins[0].config["second"], 6);
    assert_eq!(copies, counts(2, 3, 2, [1, 1, 1, 1]));
}

#[test]
fn entities_whose_references_resolve_elsewhere_are_validated_again() {
    // The service `top` names gets another id: `top` changes, the plugin naming `top` does not.
    let (_, copies) = same_as_from_scratch(&BASE.replace("other", "another"));
    assert_eq!(copies, counts(1, 2, 3, [1, 1, 1, 1]));
    // The same, `top` itself as given unchanged.
    let with_id =
        |id: &str| BASE.replace("- name: other\n", &format!("- name: other\n  id: {id}\n"));
    let (from, to) = (
        "8e1bd1f4-1a0e-4b38-9b61-3c1a2e000001",
        "8e1bd1f4-1a0e-4b38-9b61-3c1a2e000002",
    );
    let (c, copies) = same_as_from_scratch_after(&with_id(from), &with_id(to));
    assert_eq!(c.routes[2].service.unwrap().id.to_string(), to);
    assert_eq!(copies, counts(1, 2, 3, [1, 1, 1, 1]));
    // The consumer's id changes: its credentials (the basic-auth password is hashed with it) too.
    let (_, copies) = same_as_from_scratch(&BASE.replace("- username: ann", "- username: anna"));
    assert_eq!(copies, counts(2, 3, 3, [0, 0, 0, 1]));
    // Moved routes: the plugin nested under r1 has a path-derived id.
    let moved = BASE.replace(
        "  - name: r1\n    paths: [/r1]\n    plugins:\n    - name: limits\n      config: {second: 5}\n  - name: r2\n    paths: [/r2]\n",
        "  - name: r2\n    paths: [/r2]\n  - name: r1\n    paths: [/r1]\n    plugins:\n    - name: limits\n      config: {second: 5}\n",
    );
    assert_ne!(moved, BASE);
    same_as_from_scratch(&moved);
    // Without `_transform`, passwords are kept as given.
    let plain = BASE.replace(
        "_format_version: \"3.0\"",
        "_format_version: \"3.0\"\n_transform: false",
    );
    let (c, copies) = same_as_from_scratch(&plain);
    assert_eq!(c.basicauth_credentials[0].password, "pw");
    // Nothing is copied: the key covers `_transform`.
    assert!(copies.iter().all(|(_, n)| *n == 0), "{copies:?}");
}

#[test]
fn removed_and_added_entities() {
    let (_, copies) = same_as_from_scratch(&BASE.replace(
        "  - name: r1\n    paths: [/r1]\n    plugins:\n    - name: limits\n      config: {second: 5}\n",
        "",
    ));
    assert_eq!(copies, counts(2, 2, 2, [1, 1, 1, 1]));
    let (c, copies) = same_as_from_scratch(&BASE.replace(
        "  - target: 10.0.0.1\n",
        "  - target: 10.0.0.1\n  - target: 10.0.0.2\n",
    ));
    assert_eq!(c.targets.len(), 2);
    assert_eq!(copies, counts(2, 3, 3, [1, 1, 1, 1]));
}

#[test]
fn errors_are_the_same_with_reused_entities() {
    let (live, reusable) = base();
    let errors = |text: &str| {
        let previous = Previous {
            config: &live,
            reusable: &reusable,
        };
        let reused = load(text, Some(previous)).err().expect("expected errors");
        let scratch = load(text, None).err().expect("expected errors");
        assert_eq!(reused, scratch, "{text}");
        reused.to_string()
    };
    // The service a reused route names is gone.
    let gone = BASE.replace("- name: other\n  url: http://other.example.com\n", "");
    assert!(errors(&gone).contains("could not find service 'other'"));
    // A new route takes the name of a reused one: the later of the two is in error.
    let twice = BASE.replace(
        "  - name: r2\n    paths: [/r2]\n",
        "  - name: r2\n    paths: [/r2]\n  - name: top\n    paths: [/x]\n",
    );
    assert!(errors(&twice).contains("uniqueness violation"));
    // An error elsewhere: reused entities after it are not built, their errors still reported.
    let bad = BASE.replace("{second: 5}", "{second: -1}").replace(
        "  - name: r2\n    paths: [/r2]\n",
        "  - name: r2\n    paths: [/r2]\n  - name: r2\n    paths: [/r3]\n",
    );
    let shown = errors(&bad);
    assert!(
        shown.contains("second") && shown.contains("uniqueness violation"),
        "{shown}"
    );
}
