//! Config-hash golden vectors: configs and the hashes Kong's own config_helper.lua computes for them
//! (run under LuaJIT by tests/luajit.rs, which also checks that these goldens still match Kong). Shared
//! by the unit tests (`src/hash/tests.rs`) and the LuaJIT comparison.

use serde_json::{json, Value};

/// One vector: a name, the config table, and Kong's hashes in the order
/// config, routes, services, plugins, upstreams, targets ("-" where Kong sends no group hash).
pub struct Vector {
    pub name: &'static str,
    pub config: Value,
    pub kong: [&'static str; 6],
}

fn v(name: &'static str, config: Value, kong: [&'static str; 6]) -> Vector {
    Vector { name, config, kong }
}

pub fn vectors() -> Vec<Vector> {
    vec![
        v(
            "empty object",
            json!({}),
            ["2da3c26e4dbd6dd6ea3ab60a3dd7fb3e", Z, Z, Z, Z, Z],
        ),
        v(
            "null",
            Value::Null,
            ["5bf07a8b7343015026657d1108d8206e", "-", "-", "-", "-", "-"],
        ),
        v(
            "string",
            json!("abc"),
            ["900150983cd24fb0d6963f7d28e17f72", "-", "-", "-", "-", "-"],
        ),
        v(
            "top-level array",
            json!([1, 2, 3]),
            ["4068a8c788c1e9b902dde92aa293697c", Z, Z, Z, Z, Z],
        ),
        v(
            "format version only",
            json!({"_format_version": "3.0", "_transform": false}),
            ["3ba837da99e14dfab883d867101d37f6", Z, Z, Z, Z, Z],
        ),
        v(
            "typical",
            typical(),
            [
                "2ed4aae3bb886dd963a57329c6340c08",
                "b0aad6321b547f03743d24aaf163dc94",
                "30045eaed605a6c364fb15f8e7762460",
                "ec8842e478429eb0df06a28ff49bc657",
                "79dd14788d595273dbb1b96f3f74d506",
                "19067bb2a7b8c47277d7e25f267a267d",
            ],
        ),
        v(
            "array lengths",
            array_lengths(),
            ["64ccc458cec05fad0cbba68698cda332", Z, Z, Z, Z, Z],
        ),
        v(
            "key order",
            key_order(),
            ["2a89528501a62c164db45d6771db71e0", Z, Z, Z, Z, Z],
        ),
        v(
            "numbers",
            numbers(),
            ["557b1293a362373150471742e735f8e1", Z, Z, Z, Z, Z],
        ),
        v(
            "null and empty groups",
            json!({"routes": null, "services": [], "plugins": {}, "x": null}),
            [
                "77f9bcdcbba87bf6032465051bd75305",
                "5bf07a8b7343015026657d1108d8206e",
                "99914b932bd37a50b983c5e7c90ae93b",
                "99914b932bd37a50b983c5e7c90ae93b",
                Z,
                Z,
            ],
        ),
        v(
            "large (folds past 1 MB)",
            large(5000),
            [
                "fd09a615e2ee449f6f3db272cd582b31",
                "0cf7a77fdf8d827f0b8c88ca12fee4c1",
                "3bcaeaf169fc35cedda9bcbd427777dd",
                Z,
                Z,
                Z,
            ],
        ),
    ]
}

/// The empty-config hash, for brevity.
const Z: &str = "00000000000000000000000000000000";

fn typical() -> Value {
    json!({
        "_format_version": "3.0",
        "_transform": false,
        "services": [{
            "id": "0855b320-0dd2-547d-891d-601e9b38647f",
            "name": "echo", "protocol": "http", "host": "echo.internal", "port": 8080, "path": null,
            "retries": 5, "connect_timeout": 60000, "write_timeout": 60000, "read_timeout": 60000,
            "tags": [], "enabled": true, "tls_verify": null, "ca_certificates": null,
            "created_at": 1700000000, "updated_at": 1700000000
        }],
        "routes": [{
            "id": "481a9539-f49c-51b6-b2e2-fe99ee68866c",
            "name": "échos", "service": {"id": "0855b320-0dd2-547d-891d-601e9b38647f"},
            "paths": ["/echo"], "methods": ["GET", "POST"],
            "hosts": ["a.example", "b.example", "c.example", "d.example", "e.example", "f.example"],
            "protocols": ["http", "https"], "strip_path": true, "preserve_host": false,
            "regex_priority": 0, "https_redirect_status_code": 426, "path_handling": "v0",
            "headers": {"x-version": ["1", "2"]}, "snis": null, "tags": ["a", "b"]
        }],
        "plugins": [{
            "id": "ac1c3e2d-8c9f-5b7c-a10c-6f9e2d0e4a11",
            "name": "rate-limiting", "enabled": true, "route": null, "service": null, "consumer": null,
            "protocols": ["grpc", "grpcs", "http", "https"],
            "config": {"minute": 5, "hour": null, "policy": "local", "fault_tolerant": true,
                       "limit_by": "consumer", "sync_rate": -1, "error_code": 429,
                       "error_message": "API rate limit exceeded", "ratio": 0.5, "tiny": 1e-5}
        }],
        "upstreams": [{"id": "3f3d7a3e-9f0c-4b1e-8a6e-0a1b2c3d4e5f", "name": "up", "slots": 10000,
                       "algorithm": "round-robin", "hash_on": "none",
                       "healthchecks": {"active": {"healthy": {"interval": 0, "successes": 0}},
                                        "threshold": 0}}],
        "targets": [{"id": "6a8e5c1d-2b3f-4d5e-9f6a-7b8c9d0e1f2a", "target": "10.0.0.1:80", "weight": 100,
                     "upstream": {"id": "3f3d7a3e-9f0c-4b1e-8a6e-0a1b2c3d4e5f"}}],
        "consumers": [{"id": "9b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e", "username": "alice", "custom_id": null}],
        "keyauth_credentials": [{"key": "secret", "consumer": {"id": "9b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"}}]
    })
}

fn array_lengths() -> Value {
    let mut m = serde_json::Map::new();
    for n in 0..8usize {
        m.insert(
            format!("len{n}"),
            Value::Array((0..n).map(|i| json!(i)).collect()),
        );
    }
    m.insert(
        "nested".into(),
        json!([[1, 2], [[]], [{}], [null, null], [true, "x", 1.5, null, {"k": []}, 7]]),
    );
    Value::Object(m)
}

fn key_order() -> Value {
    json!({"b": 1, "a": 2, "B": 3, "_": 4, "a_b": 5, "ab": 6, "a b": 7, "é": 8, "z": 9, "10": 10, "9": 11,
           "": 12, "A": {"y": 1, "x": 2}})
}

fn numbers() -> Value {
    json!({"ints": [0, 1, -1, 42, 99999999999999_i64, 100000000000000_i64, 123456789012345_i64,
                    9007199254740993_i64, 18446744073709551615_u64, -9223372036854775808_i64],
           "floats": [0.1, 1.5, -2.25, 0.3, 1e-5, 0.0001, 1e21, 1e100, 1.2345678901234567, 5e-324,
                      10000000000000.5, 10000000000002.5, 99999999999999.5, 1.0, -0.0],
           "mixed": [1, 1.0, 2.5]})
}

/// `n` routes with a service each: about 300 bytes per route once serialized, so 5000 routes cross the
/// 1 MB fold several times, mid-entity.
pub fn large(n: usize) -> Value {
    let services: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("00000000-0000-4000-8000-{i:012}"), "name": format!("svc-{i}"),
                        "host": format!("host-{i}.internal"), "port": 8000 + (i % 1000), "protocol": "http",
                        "retries": 5, "connect_timeout": 60000, "tags": null}))
        .collect();
    let routes: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("10000000-0000-4000-8000-{i:012}"), "name": format!("route-{i}"),
                        "paths": [format!("/r{i}")], "methods": ["GET", "POST"], "strip_path": i % 2 == 0,
                        "service": {"id": format!("00000000-0000-4000-8000-{i:012}")},
                        "protocols": ["http", "https"], "regex_priority": i, "tags": []}))
        .collect();
    json!({"_format_version": "3.0", "services": services, "routes": routes})
}
