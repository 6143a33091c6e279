//! Which instances a stream route's sessions run: Kong's subsystem filter, precedence and protocols.

use crate::testing::compile;
use sluice_router::stream::StreamProtocols;

const CONFIG: &str = r#"
_format_version: "3.0"
services:
- name: s
  url: tcp://127.0.0.1:9
  routes:
  - name: tcp
    protocols: [tcp]
    destinations: [{port: 5000}]
    plugins:
    - name: file-log
      protocols: [tcp]
      config: {path: /tmp/sluice-stream-route.log}
    - name: prometheus
      protocols: [tcp, udp]
      config: {status_code_metrics: true}
  - name: udp
    protocols: [udp]
    destinations: [{port: 5001}]
  - name: web
    paths: [/]
    protocols: [http]
plugins:
- name: file-log
  protocols: [udp, tcp]
  config: {path: /tmp/sluice-stream-global.log}
- name: http-log
  config: {http_endpoint: "http://127.0.0.1:9/"}
- name: tcp-log
  protocols: [tls]
  config: {host: 127.0.0.1, port: 9}
"#;

#[test]
fn stream_routes_run_the_most_specific_stream_instances() {
    let (config, compiled) = compile(CONFIG);
    let index = |name: &str| {
        config
            .routes
            .iter()
            .position(|r| r.name.as_deref() == Some(name))
    };
    // The route's file-log overrides the global one; http-log lists no stream protocol (Kong's default
    // protocols are HTTP's), so Kong's stream subsystem never loads it.
    let tcp = compiled.stream(index("tcp"));
    assert_eq!(tcp.log.names(), ["file-log", "tcp-log"]);
    let (protocols, flags) = tcp.metrics.expect("prometheus applies");
    assert!(protocols.intersects(StreamProtocols::UDP) && flags.status_code);
    let udp = compiled.stream(index("udp"));
    assert_eq!(udp.log.names(), ["file-log", "tcp-log"]);
    assert!(udp.metrics.is_none());
    // The HTTP route's chain has http-log alone: the instances listing only stream protocols are not
    // loaded in the HTTP subsystem.
    let web = compiled.route_chain(index("web").unwrap());
    assert_eq!(web.len(), 1);
}

#[test]
fn http_only_configs_compile_no_stream_plugins() {
    let (config, compiled) = compile(
        r#"
_format_version: "3.0"
services:
- name: s
  url: tcp://127.0.0.1:9
  routes:
  - name: tcp
    protocols: [tcp]
    destinations: [{port: 5000}]
plugins:
- name: file-log
  config: {path: /tmp/sluice-stream-none.log}
"#,
    );
    assert!(compiled.stream(Some(0)).log.is_empty());
    assert!(compiled.stream(None).log.is_empty());
    assert_eq!(config.routes.len(), 1);
}
