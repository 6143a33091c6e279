use super::*;

#[test]
fn identifiers_are_written_as_kong_writes_them_into_keys() {
    let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
    assert_eq!(
        Identifier::Id(id).text(),
        "01234567-89ab-cdef-0123-456789abcdef"
    );
    for ip in [
        "0.0.0.0",
        "127.0.0.1",
        "10.20.255.9",
        "::1",
        "2001:db8::8:800:200c:417a",
    ] {
        let parsed: std::net::IpAddr = ip.parse().unwrap();
        assert_eq!(Identifier::Ip(parsed).text(), ip);
    }
    assert_eq!(Identifier::Text(b"tenant-a").text(), "tenant-a");
    assert_eq!(Identifier::Text(b"t\xffa").text(), "t\u{fffd}a");
}
