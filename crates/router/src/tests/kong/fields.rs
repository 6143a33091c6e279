//! How single fields match: header names and values ("[headers]" names are case-insensitive, values in a
//! case-insensitive way, "should always add lower()", "[cache hit should be case sensitive]"), "[wildcard
//! sni]", hosts with ports and the listening port, "check empty route fields", "raw string" and "check regex
//! with '\\'", "normalization stopgap measurements", and "gracefully handles invalid utf-8 sequences".

use super::*;

#[test]
fn header_names_and_values() {
    // names are case-insensitive (and `_` is `-`: Kong reads nginx's `$http_*` variables)
    let names = || {
        vec![
            r(1, &[("h:USER_AGENT", &["foo", "bar"])]),
            r(2, &[("h:user_agent", &["baz"])]),
        ]
    };
    check(
        names(),
        &[
            with_headers(&[("user-agent", "foo")], Some(1)),
            with_headers(&[("user-agent", "baz")], Some(2)),
            // nginx drops request headers with `_` in their names (underscores_in_headers off)
            with_headers(&[("user_agent", "foo")], None),
        ],
    );
    // values in a case-insensitive way
    let values = vec![
        r(1, &[("h:user_agent", &["foo", "bar"])]),
        r(2, &[("h:user_agent", &["BAZ"])]),
    ];
    check(
        values,
        &[
            with_headers(&[("user-agent", "FOO")], Some(1)),
            with_headers(&[("user-agent", "baz")], Some(2)),
        ],
    );
    // should always add lower(): a `~*` regex is lowered too and runs on the lowered value
    check(
        vec![r(1, &[("methods", &["GET"]), ("h:test", &["~*Quote"])])],
        &[
            with_headers(&[("test", "QUOTE")], Some(1)),
            with_headers(&[("test", "a quote")], Some(1)),
            with_headers(&[("test", "quota")], None),
        ],
    );
    // cache hit should be case sensitive: "Quote" accepts QUOTE and QuoTe alike
    let quote = &[("test1", "QUOTE")];
    let mixed = &[("test1", "QuoTe")];
    check(
        vec![r(1, &[("paths", &["/foo"]), ("h:test1", &["Quote"])])],
        &[
            Req {
                headers: quote,
                ..get("", "/foo", Some(1))
            },
            Req {
                headers: mixed,
                ..get("", "/foo", Some(1))
            },
        ],
    );
    // Lowering the pattern, as Kong does, changes escapes: `\D` becomes `\d`.
    check(
        vec![r(1, &[("h:x-id", &["~*^\\D+$"])])],
        &[
            with_headers(&[("x-id", "123")], Some(1)),
            with_headers(&[("x-id", "abc")], None),
        ],
    );
}

/// `GET /` over TLS with server name `sni`.
const fn tls(sni: &'static str, want: Option<usize>) -> Req {
    Req {
        sni: Some(sni),
        ..get("any.test", "/", want)
    }
}

#[test]
fn wildcard_sni() {
    let routes = || {
        vec![
            r(1, &[("snis", &["*.sni.test"])]),
            r(2, &[("snis", &["sni.*"])]),
        ]
    };
    check(
        routes(),
        &[
            // matches leftmost wildcards; rightmost wildcards; doesn't match wildcard
            tls("foo.sni.test", Some(1)),
            tls("foo.bar.sni.test", Some(1)),
            tls("sni.foo", Some(2)),
            tls("sni.foo.bar", Some(2)),
            tls("bar.sni.foo", None),
            tls("foo.sni.test.bar", None),
            // http (no server name): SNIs are not considered (Kong: `net.protocol != "https" || ...`)
            get("any.test", "/", Some(2)),
        ],
    );
    // A plain SNI, and a fully qualified one (the trailing dot is not part of the name).
    check(
        vec![
            r(1, &[("snis", &["www.example.org"])]),
            r(2, &[("snis", &["fqdn.test."])]),
        ],
        &[
            tls("www.example.org", Some(1)),
            tls("fqdn.test", Some(2)),
            tls("other.org", None),
        ],
    );
}

#[test]
fn host_ports_and_the_listening_port() {
    // "should use 'net.dst.port'": a route host with a port compares the Host port, else the listening one
    let routes = || vec![r(1, &[("hosts", &["www.example.com:8000"])])];
    check(
        routes(),
        &[
            get("www.example.com:80", "/", None),
            get("www.example.com:8000", "/", Some(1)),
            at_port("www.example.com", 8000, Some(1)),
            at_port("www.example.com", 8443, None),
        ],
    );
    // Kong splits Host at its first colon: a bracketed IPv6 literal with a port stays whole.
    check(
        vec![
            r(1, &[("hosts", &["[::1]"])]),
            r(2, &[("hosts", &["[::2]:321"])]),
        ],
        &[
            get("[::1]", "/", Some(1)),
            get("[::1]:8000", "/", None),
            get("[::2]:321", "/", Some(2)),
            at_port("[::2]", 321, None),
        ],
    );
}

#[test]
fn empty_route_fields() {
    // An empty list is no condition at all: the route is GET /foo whichever field is empty.
    let fields: [(&str, &[&str]); 3] =
        [("methods", &["GET"]), ("paths", &["/foo"]), ("hosts", &[])];
    check(
        vec![r(1, &fields), r(2, &[("snis", &[]), ("paths", &["/bar"])])],
        &[
            get("x.org", "/foo", Some(1)),
            req("POST", "x.org", "/foo", None),
            get("x.org", "/bar", Some(2)),
            Req {
                sni: Some("a.test"),
                ..get("x.org", "/bar", Some(2))
            },
        ],
    );
    let only_method = vec![r(1, &[("methods", &["GET"]), ("paths", &[])])];
    check(only_method, &[get("x.org", "/anything", Some(1))]);
}

#[test]
fn regex_paths_with_quotes_and_backslashes() {
    check(
        vec![
            r(1, &[("methods", &["GET"]), ("paths", &["~/\\\"/*$"])]),
            r(2, &[("methods", &["GET"]), ("paths", &["~/\\\"#/*$"])]),
            r(3, &[("methods", &["GET"]), ("paths", &["~/\\\\/*$"])]),
            r(4, &[("methods", &["GET"]), ("paths", &["~/\\d+"])]),
        ],
        &[
            get("h", "/\"//", Some(1)),
            get("h", "/\"#/", Some(2)),
            get("h", "/\\/", Some(3)),
            get("h", "/42", Some(4)),
            get("h", "/x", None),
        ],
    );
}

/// "normalization stopgap measurements": route paths are used as written (not decoded); the request path
/// arrives already normalized by the proxy, so only what the router receives is matched.
#[test]
fn route_paths_are_not_normalized() {
    let routes = vec![
        r(0, &[("paths", &["/plain/a.b.c"])]),
        r(1, &[("paths", &["/plain/a.b%58c"])]),
        r(2, &[("paths", &["~/reg%65x/\\d+"])]),
        r(3, &[("paths", &["~/regex-meta/%5Cd\\+%2E"])]),
        r(4, &[("paths", &["~/regex-reserved%2Fabc"])]),
    ];
    check(
        routes,
        &[
            get("example.com", "/plain/a.b.c", Some(0)),
            get("example.com", "/plain/a.bXc", None),
            get("example.com", "/plain/a.b%58c", Some(1)),
            get("example.com", "/plain/aab.c", None),
            get("example.com", "/regex/123", None),
            get("example.com", "/reg%65x/123", Some(2)),
            get("example.com", "/regex/\\d+", None),
            get("example.com", "/regex-meta/123a", None),
            get("example.com", "/regex-meta/\\d+.", None),
            get("example.com", "/regex-meta/%5Cd+%2E", Some(3)),
            get("example.com", "/regex-reserved/abc", None),
            get("example.com", "/regex-reserved%2Fabc", Some(4)),
        ],
    );
}
