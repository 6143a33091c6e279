//! Unit tests of `address`: Kong's host rules and messages.

use super::*;
use serde_json::json;

#[test]
fn hosts_follow_kongs_rules_and_messages() {
    for good in [
        "example.com",
        "logs-01.loggly.com",
        "a_b.test",
        "-lead.test",
        "trailing.dot.",
        "localhost",
        "127.0.0.1",
        "01.2.3.4",
        "::1",
        "2001:db8::7",
        "[2001:db8::7]",
    ] {
        assert_eq!(check_host(&json!(good)), Ok(()), "{good}");
    }
    for (bad, expected) in [
        ("example.com:80", "must not have a port"),
        ("127.0.0.1:80", "must not have a port"),
        ("127.0.0.1:99999", "must not have a port"),
        ("[::1]:8000", "must not have a port"),
        ("", "invalid value: "),
        ("a b", "invalid value: a b"),
        ("dash-.test", "invalid value: dash-.test"),
        ("a..b", "invalid value: a..b"),
        ("1.2.3", "invalid value: 1.2.3"),
        ("256.1.1.1", "invalid value: 256.1.1.1"),
        ("1234", "invalid value: 1234"),
        ("host:", "invalid value: host:"),
        ("host:http", "invalid value: host:http"),
        ("[::1]x", "invalid value: [::1]x"),
        ("::ffff:1.2.3.4", "invalid value: ::ffff:1.2.3.4"),
        ("fe80::1%eth0", "invalid value: fe80::1%eth0"),
        ("ünï.test", "invalid value: ünï.test"),
    ] {
        assert_eq!(check_host(&json!(bad)), Err(expected.to_string()), "{bad}");
    }
}
