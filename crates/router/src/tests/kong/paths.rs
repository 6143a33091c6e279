//! The spec's path precedence cases: "[uri prefix]", "[uri regex]", and the blocks after its main loop
//! on routes with regex and prefix paths or prefixes of several lengths (split routes).

use super::*;

/// Route fields as [`r`] takes them.
type Fields<'a> = &'a [(&'a str, &'a [&'a str])];

#[test]
fn uri_prefix() {
    // does not supersede another route with a longer [uri] (alone, with methods, with hosts)
    let gpp: &[&str] = &["POST", "PUT", "GET"];
    let variants: [(Fields<'_>, bool); 3] = [
        (&[], true),
        (&[("methods", gpp)], false),
        (&[("hosts", &["domain.org"])], false),
    ];
    for (extra, long_first) in variants {
        let (long, short) = if long_first { (1, 2) } else { (2, 1) };
        let with = |n, p: &'static [&'static str]| {
            let mut fields = extra.to_vec();
            fields.push(("paths", p));
            r(n, &fields)
        };
        check(
            vec![
                with(long, &["/my-route/hello"]),
                with(short, &["/my-route"]),
            ],
            &[
                get("domain.org", "/my-route/hello", Some(long)),
                get("domain.org", "/my-route/hello/world", Some(long)),
                get("domain.org", "/my-route", Some(short)),
                get("domain.org", "/my-route/world", Some(short)),
            ],
        );
    }
    // ... when a better [uri] match exists for another [host]
    check(
        vec![
            r(1, &[("hosts", &["example.com"]), ("paths", &["/my-route"])]),
            r(
                2,
                &[("hosts", &["example.com"]), ("paths", &["/my-route/hello"])],
            ),
            r(
                3,
                &[
                    ("hosts", &["example.net"]),
                    ("paths", &["/my-route/hello/world"]),
                ],
            ),
        ],
        &[
            get("example.com", "/my-route/hello/world", Some(2)),
            get(
                "example.com",
                "/my-route/hello/world/and/goodnight",
                Some(2),
            ),
        ],
    );
    // only matches [uri prefix] as a prefix (anchored mode)
    check(
        vec![
            r(1, &[("paths", &["/something/my-route"])]),
            r(2, &[("hosts", &["example.com"]), ("paths", &["/my-route"])]),
        ],
        &[get("example.com", "/something/my-route", Some(1))],
    );
}

#[test]
fn uri_regex() {
    check(
        vec![r(1, &[("paths", &["~/users/\\d+/profile"])])],
        &[get("d.org", "/users/123/profile", Some(1))],
    );
    check(
        vec![
            r(1, &[("paths", &["~/route/persons/\\d{3}"])]),
            r(2, &[("paths", &["~/route/persons/\\d{3}/following"])]),
            r(3, &[("paths", &["~/route/persons/\\d{3}/[a-z]+"])]),
        ],
        &[get("d.org", "/route/persons/456", Some(1))],
    );
    check(
        vec![
            r(1, &[("paths", &["/route/persons"])]),
            r(2, &[("paths", &["~/route/persons/\\d+/profile"])]),
        ],
        &[get("d.org", "/route/persons/123/profile", Some(2))],
    );
    check(
        vec![
            r(1, &[("paths", &["/route/fixture"])]),
            r(2, &[("paths", &["~/route/(fixture)"])]),
        ],
        &[get("d.org", "/route/fixture", Some(2))],
    );
    check(
        vec![
            r(1, &[("hosts", &["route.com"]), ("paths", &["/pat"])]),
            r(
                2,
                &[
                    ("hosts", &["route.com"]),
                    ("paths", &["/path"]),
                    ("methods", &["POST"]),
                ],
            ),
            r(3, &[("hosts", &["route.com"]), ("paths", &["~/(path)"])]),
        ],
        &[get("route.com", "/path", Some(3))],
    );
    // matches from the beginning of the request URI
    check(
        vec![r(1, &[("paths", &["~/prefix/[0-9]+"])])],
        &[
            get("d.org", "/prefix/123", Some(1)),
            get("d.org", "/extra/prefix/123", None),
        ],
    );
}

/// The blocks after the main loop: "[both regex and prefix with regex_priority]", "[both regex and
/// prefix]", "[overlapping prefixes]", "[can create route with multiple paths and no service]".
#[test]
fn regex_and_prefix_splits() {
    let mut two = r(2, &[("paths", &["/"]), ("hosts", &["domain-2.org"])]);
    two.regex_priority = 5;
    check(
        vec![
            r(1, &[("paths", &["/.*"]), ("hosts", &["domain-1.org"])]),
            two,
            r(3, &[("paths", &["/v1"]), ("hosts", &["domain-2.org"])]),
        ],
        &[get("domain-2.org", "/v1", Some(3))],
    );
    let h: &[&str] = &["domain-1.org"];
    check(
        vec![
            r(
                1,
                &[("paths", &["~/some/thing/else", "/foo"]), ("hosts", h)],
            ),
            r(2, &[("paths", &["/foo/bar"]), ("hosts", h)]),
        ],
        &[
            get("domain-1.org", "/some/thing/else", Some(1)),
            get("domain-1.org", "/foo/bar", Some(2)),
        ],
    );
    check(
        vec![
            r(1, &[("paths", &["/foo", "/foo/bar/baz"]), ("hosts", h)]),
            r(2, &[("paths", &["/foo/bar"]), ("hosts", h)]),
        ],
        &[
            get("domain-1.org", "/foo", Some(1)),
            get("domain-1.org", "/foo/bar", Some(2)),
            get("domain-1.org", "/foo/bar/baz", Some(1)),
        ],
    );
    assert!(Router::build(vec![r(1, &[("paths", &["/foo", "/foo/bar/baz"])])]).is_ok());
    // Kong's derived ids: UUID v5 of "<id>#<group>" in its namespace.
    let id = uuid::Uuid::from_u128(crate::priority::split_id(kong_id(1), 2));
    assert_eq!(id.get_version_num(), 5);
    assert_ne!(id.as_u128(), crate::priority::split_id(kong_id(1), 1));
}
