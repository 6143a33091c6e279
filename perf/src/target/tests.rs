use super::*;

#[test]
fn parses_targets() {
    let table: &[(&str, Option<Target>)] = &[
        ("nginx", Some(Target::Nginx)),
        ("nginx-lua", Some(Target::NginxLua)),
        ("bin:/x/sluice", Some(Target::Bin("/x/sluice".into()))),
        ("git:HEAD~1", Some(Target::Git("HEAD~1".into()))),
        ("git:", None),
        ("bin:", None),
        ("haproxy", None),
    ];
    for (s, want) in table {
        assert_eq!(Target::parse(s).ok(), *want, "{s}");
        if let Some(t) = want {
            assert_eq!(&t.label(), s);
        }
    }
    assert!(Target::Nginx.is_peer() && !Target::Git("x".into()).is_peer());
}
