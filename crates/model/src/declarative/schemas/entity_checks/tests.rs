use super::super::service;
use serde_json::json;

fn errors(input: serde_json::Value) -> Vec<(String, String)> {
    match service().validate(&input) {
        Ok(_) => Vec::new(),
        Err(e) => e.into_iter().map(|e| (e.field, e.message)).collect(),
    }
}

/// Kong 3.9 refuses the upstream TLS fields on a service that is not `https` or `tls`, `false` and `[]`
/// included, with a field message and a conditional message for each.
#[test]
fn tls_fields_only_on_a_tls_service() {
    for protocol in ["http", "grpc", "grpcs", "tcp", "udp"] {
        let e = errors(json!({"protocol": protocol, "host": "a.test", "port": 443,
            "tls_verify": false, "ca_certificates": []}));
        let field = |f: &str| e.iter().any(|(k, m)| k == f && m == "value must be null");
        assert!(
            field("tls_verify") && field("ca_certificates"),
            "{protocol}: {e:?}"
        );
        let conditional = e
            .iter()
            .filter(|(_, m)| m == "failed conditional validation given value of field 'protocol'")
            .count();
        assert_eq!(conditional, 2, "{protocol}: {e:?}");
    }
    for protocol in ["https", "tls"] {
        let e = errors(json!({"protocol": protocol, "host": "a.test", "port": 443,
            "tls_verify": true, "tls_verify_depth": 2, "ca_certificates": [],
            "client_certificate": {"id": "c0a1e7d2-2a8d-4c3b-9f10-de0000000001"}}));
        assert!(e.is_empty(), "{protocol}: {e:?}");
    }
    assert!(errors(json!({"protocol": "http", "host": "a.test", "tls_verify": null})).is_empty());
}
