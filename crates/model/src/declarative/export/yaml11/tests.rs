use super::for_yaml11;
use crate::{Config, Consumer};

/// Strings that YAML 1.2 (serde_yaml, Sluice's reader) writes plain but Kong's lyaml (YAML 1.1) reads
/// as a boolean or a number come out quoted; plain values that are what they look like, quoted values,
/// block scalars and keys that need nothing are left as they are.
#[test]
fn yaml_1_1_lookalikes_are_quoted() {
    let serde_yaml_text = "\
consumers:
- username: on
  custom_id: '0123'
  tags:
  - 1_000
  - 10:30
  - Off
  - y
  - plain
  - 1_0.5
  created_at: 1795776653
  enabled: true
  on: no
  body: |-
    on: no
    - yes
  after: YES
- |-
  - off
- 1:2:3.5
";
    let want = "\
consumers:
- username: 'on'
  custom_id: '0123'
  tags:
  - '1_000'
  - '10:30'
  - 'Off'
  - y
  - plain
  - '1_0.5'
  created_at: 1795776653
  enabled: true
  'on': 'no'
  body: |-
    on: no
    - yes
  after: 'YES'
- |-
  - off
- '1:2:3.5'
";
    assert_eq!(for_yaml11(serde_yaml_text), want);
}

/// A whole export: a consumer named `on` is exported so that a YAML 1.1 reader gets the string back.
#[test]
fn an_export_quotes_what_kong_would_misread() {
    let config = Config {
        consumers: vec![Consumer {
            id: uuid::Uuid::nil(),
            username: Some("on".into()),
            custom_id: None,
            tags: Some(vec!["10:30".into()]),
            created_at: 0,
            updated_at: 0,
        }],
        ..Config::default()
    };
    let text = crate::declarative::export_yaml(&config);
    assert!(text.contains("username: 'on'"), "{text}");
    assert!(text.contains("- '10:30'"), "{text}");
}
