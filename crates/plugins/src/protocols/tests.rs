//! `protocols` on plugin entities: which requests a chain runs a plugin for.

use super::Protocols;
use crate::testing::{block_on, compile, request};
use crate::RequestCtx;

#[test]
fn names_to_sets() {
    let all = Protocols::from_names(&["grpc", "grpcs", "http", "https"]);
    assert_eq!(all, Protocols::ALL);
    let https = Protocols::from_names(&["https"]);
    assert!(https.allows(Protocols::HTTPS) && !https.allows(Protocols::HTTP));
    assert!(Protocols::from_names(&["tcp", "tls"]).is_empty());
}

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: s
  url: http://127.0.0.1:1
  routes:
  - name: r
    paths: [/]
    plugins:
    - name: request-termination
      protocols: [https, grpcs]
      config: {status_code: 418}
    - name: correlation-id
      protocols: [tcp]
"#;

/// The status the chain answers with for a request over `scheme` (None: proxied).
fn answer(scheme: &'static str, content_type: &str) -> Option<u16> {
    let (_, compiled) = compile(CONFIG);
    let chain = compiled.route_chain(0);
    assert_eq!(chain.len(), 1, "a tcp-only instance is not loaded");
    let head = request("POST", "/", &[("content-type", content_type)]);
    let mut ctx = RequestCtx::detached(head, compiled.credentials());
    ctx.scheme = scheme;
    block_on(chain.access(&mut ctx)).map(|r| r.status.as_u16())
}

#[test]
fn plugins_run_only_for_their_protocols() {
    assert_eq!(answer("https", "text/plain"), Some(418));
    assert_eq!(answer("http", "text/plain"), None);
    assert_eq!(answer("https", "application/grpc+proto"), Some(418));
    assert_eq!(answer("http", "application/grpc"), None);
}
