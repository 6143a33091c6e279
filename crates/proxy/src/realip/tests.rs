//! Unit tests of `realip`.

use super::*;

fn trust(header: &str, recursive: bool) -> Trust {
    Trust::new(&ProxySettings {
        trusted_ips: vec!["10.0.0.0/8".parse().unwrap()],
        real_ip_header: header.into(),
        real_ip_recursive: recursive,
        ..ProxySettings::default()
    })
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn untrusted_peers_are_the_client() {
    let mut h = HeaderMap::new();
    h.insert("x-real-ip", "7.7.7.7".parse().unwrap());
    assert_eq!(
        trust("x-real-ip", false).client_ip(&h, ip("8.8.8.8")),
        ip("8.8.8.8")
    );
    assert_eq!(
        trust("x-real-ip", false).client_ip(&h, ip("10.1.1.1")),
        ip("7.7.7.7")
    );
    let nobody = Trust::new(&ProxySettings::default());
    assert!(!nobody.is_trusted(ip("127.0.0.1")));
    assert_eq!(nobody.client_ip(&h, ip("10.1.1.1")), ip("10.1.1.1"));
}

#[test]
fn forwarded_for_lists_take_the_last_or_walk_trusted_hops() {
    let mut h = HeaderMap::new();
    h.insert(
        "x-forwarded-for",
        "1.1.1.1, 7.7.7.7, 10.0.0.2".parse().unwrap(),
    );
    let peer = ip("10.0.0.1");
    assert_eq!(
        trust("x-forwarded-for", false).client_ip(&h, peer),
        ip("10.0.0.2")
    );
    assert_eq!(
        trust("x-forwarded-for", true).client_ip(&h, peer),
        ip("7.7.7.7")
    );
    h.insert("x-forwarded-for", "10.0.0.5, 10.0.0.2".parse().unwrap());
    assert_eq!(
        trust("x-forwarded-for", true).client_ip(&h, peer),
        ip("10.0.0.5")
    );
    h.insert("x-forwarded-for", "garbage".parse().unwrap());
    assert_eq!(trust("x-forwarded-for", true).client_ip(&h, peer), peer);
}
