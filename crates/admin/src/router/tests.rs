//! Unit tests of `router`.

use super::*;

fn admin(path: &str) -> Option<Endpoint<'_>> {
    route(Listener::Admin, &segments(path))
}

fn describe(e: Option<Endpoint<'_>>) -> String {
    match e {
        None => "none".into(),
        Some(Endpoint::Root) => "root".into(),
        Some(Endpoint::Status) => "status".into(),
        Some(Endpoint::Ready) => "ready".into(),
        Some(Endpoint::Dns) => "dns".into(),
        Some(Endpoint::Metrics) => "metrics".into(),
        Some(Endpoint::Config) => "config".into(),
        Some(Endpoint::PluginsEnabled) => "plugins-enabled".into(),
        Some(Endpoint::Endpoints) => "endpoints".into(),
        Some(Endpoint::Timers) => "timers".into(),
        Some(Endpoint::Schema(e)) => format!("schema {e}"),
        Some(Endpoint::PluginSchema(p)) => format!("plugin schema {p}"),
        Some(Endpoint::Validate(e)) => format!("validate {e}"),
        Some(Endpoint::Tags(t)) => format!("tags {t:?}"),
        Some(Endpoint::List(s)) => format!("list {}{}", s.coll.path, parent(&s)),
        Some(Endpoint::Item(s, k)) => format!("item {}/{k}{}", s.coll.path, parent(&s)),
        Some(Endpoint::Owner(c, k, r)) => format!("owner {}/{k} -> {}", c.path, r.parent),
        Some(Endpoint::UpstreamHealth(u)) => format!("health {u}"),
        Some(Endpoint::SetTargetHealth(u, t, h)) => format!("set {u}/{t} healthy={h}"),
        Some(Endpoint::ProxyCache(p, k)) => format!("proxy-cache {p:?} {k:?}"),
        Some(Endpoint::OAuth2Tokens(k)) => format!("oauth2-tokens {k:?}"),
        Some(Endpoint::DataPlanes) => "data-planes".into(),
        Some(Endpoint::ClusteringStatus) => "clustering-status".into(),
    }
}

fn parent(s: &Scope<'_>) -> String {
    s.parent
        .map(|p| format!(" of {}/{} by {}", p.coll.path, p.key, p.relation.field))
        .unwrap_or_default()
}

#[test]
fn admin_paths_map_to_endpoints() {
    let table = [
        ("/", "root"),
        ("/status", "status"),
        ("/status/ready", "none"),
        ("/status/dns", "dns"),
        ("/metrics", "metrics"),
        ("/config/", "config"),
        ("/clustering/data-planes", "data-planes"),
        ("/clustering/status", "clustering-status"),
        ("/endpoints", "endpoints"),
        ("/schemas/routes", "schema routes"),
        ("/schemas/routes/validate", "validate routes"),
        ("/schemas/plugins/cors", "plugin schema cors"),
        ("/schemas/plugins/validate", "validate plugins"),
        ("/plugins/enabled", "plugins-enabled"),
        ("/tags/foo", "tags Some(\"foo\")"),
        ("/proxy-cache", "proxy-cache None None"),
        ("/proxy-cache/abc", "proxy-cache None Some(\"abc\")"),
        (
            "/proxy-cache/p1/caches/abc",
            "proxy-cache Some(\"p1\") Some(\"abc\")",
        ),
        ("/oauth2_tokens", "oauth2-tokens None"),
        ("/oauth2_tokens/t", "oauth2-tokens Some(\"t\")"),
        ("/oauth2/c", "item oauth2/c"),
        ("/services", "list services"),
        ("/services/s1", "item services/s1"),
        ("/key-auths/k", "item key-auths/k"),
        (
            "/services/s1/routes",
            "list routes of services/s1 by service",
        ),
        (
            "/services/s1/routes/r1",
            "item routes/r1 of services/s1 by service",
        ),
        (
            "/consumers/c/key-auth",
            "list key-auths of consumers/c by consumer",
        ),
        ("/consumers/c/acls", "list acls of consumers/c by consumer"),
        (
            "/upstreams/u/targets",
            "list targets of upstreams/u by upstream",
        ),
        ("/upstreams/u/health", "health u"),
        (
            "/upstreams/u/targets/10.0.0.1:80/healthy",
            "set u/10.0.0.1:80 healthy=true",
        ),
        ("/upstreams/u/targets/t/unhealthy", "set u/t healthy=false"),
        ("/upstreams/u/targets/t/sick", "none"),
        (
            "/upstreams/u/targets/all",
            "list targets of upstreams/u by upstream",
        ),
        (
            "/upstreams/u/targets/t:80",
            "item targets/t:80 of upstreams/u by upstream",
        ),
        (
            "/certificates/c/snis",
            "list snis of certificates/c by certificate",
        ),
        ("/routes/r/service", "owner routes/r -> services"),
        ("/plugins/p/consumer", "owner plugins/p -> consumers"),
        ("/key-auths/k/consumer", "owner key-auths/k -> consumers"),
        ("/targets", "none"),
        ("/targets/t", "none"),
        ("/nope", "none"),
        ("/services/s/nope", "none"),
        ("/services/s/routes/r/extra", "none"),
    ];
    for (path, want) in table {
        assert_eq!(describe(admin(path)), want, "{path}");
    }
}

#[test]
fn status_listener_serves_only_status_paths() {
    let status = |p: &str| describe(route(Listener::Status, &segments(p)));
    assert_eq!(status("/status"), "status");
    assert_eq!(status("/status/ready"), "ready");
    assert_eq!(status("/status/dns"), "dns");
    assert_eq!(status("/metrics"), "metrics");
    assert_eq!(status("/"), "none");
    assert_eq!(status("/services"), "none");
    assert_eq!(status("/config"), "none");
}

#[test]
fn methods_follow_the_endpoint_kind() {
    let has = |p: &str, m: Method| admin(p).is_some_and(|e| e.methods().contains(&m));
    assert!(has("/services", Method::POST));
    assert!(!has("/services", Method::DELETE));
    assert!(has("/services/s", Method::DELETE));
    assert!(!has("/services/s", Method::POST));
    assert!(has("/config", Method::POST));
    assert!(!has("/status", Method::POST));
    assert!(has("/status", Method::OPTIONS));
}
