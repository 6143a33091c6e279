//! Table tests for host splitting and name patterns.

use super::*;

#[test]
fn strips_the_port_and_lowers_the_case() {
    assert_eq!(bare_host("Example.COM:8000"), "example.com");
    assert_eq!(bare_host("[::1]:8000"), "[::1]");
    assert_eq!(bare_host("[::1]"), "[::1]");
    assert_eq!(bare_host("plain"), "plain");
}

#[test]
fn splits_at_the_first_colon_only_before_a_number() {
    let cases: &[(&str, (&str, Option<u16>))] = &[
        ("a.org", ("a.org", None)),
        ("a.org:321", ("a.org", Some(321))),
        ("a.org:", ("a.org:", None)),
        ("a.org:23h", ("a.org:23h", None)),
        ("example.*:123", ("example.*", Some(123))),
        // Kong keeps a bracketed IPv6 literal with a port whole: only one colon is looked at.
        ("[::1]:80", ("[::1]:80", None)),
        ("[::1]", ("[::1]", None)),
        ("", ("", None)),
    ];
    for (value, want) in cases {
        assert_eq!(split_host_port(value), *want, "{value}");
    }
}

#[test]
fn name_patterns() {
    // (pattern, sni?, name, matches)
    let cases: &[(&str, bool, &str, bool)] = &[
        ("Example.COM", false, "example.com", true),
        ("*.sni.test", true, "foo.sni.test", true),
        ("*.sni.test", true, "a.b.sni.test", true),
        ("*.sni.test", true, "sni.test", false),
        ("*.sni.test", true, ".sni.test", false),
        ("shop.*", false, "shop.example.net", true),
        ("shop.*", false, "shop.", false),
        ("fqdn.test.", true, "fqdn.test", true),
        ("fqdn.test.", false, "fqdn.test", false),
        ("Foo.*", true, "foo.bar", true),
        ("*.sni.test.", true, "x.sni.test", true),
    ];
    for (pattern, sni, name, want) in cases {
        let m = if *sni {
            NameMatcher::sni(pattern)
        } else {
            NameMatcher::new(pattern)
        };
        assert_eq!(m.matches(name), *want, "{pattern} ~ {name}");
    }
}

#[test]
fn a_route_port_must_equal_the_request_port() {
    let any = HostMatcher::new("a.org");
    let port = HostMatcher::new("a.org:321");
    assert!(any.matches("a.org", 321) && any.matches("a.org", 8000));
    assert!(port.matches("a.org", 321));
    assert!(!port.matches("a.org", 8000));
    assert!(!port.matches("b.org", 321));
}
