//! syslog's schema, facility codes and message, byte for byte.

use super::*;

fn load(plugin_config: &str) -> Result<sluice_model::Config, String> {
    crate::logging::address::parse_plugin("syslog", plugin_config)
}

#[test]
fn fills_kongs_defaults_and_refuses_what_kong_refuses() {
    let config = load("{}").unwrap();
    let typed: Config = typed_config(&config.plugins[0]).unwrap();
    assert_eq!(typed.facility, "user");
    let info = Severities::new("info", "info", "info", "info").unwrap();
    assert_eq!(typed.severities, info, "every severity at info");
    for (bad, expected) in [
        ("{log_level: error}", "log_level"),
        ("{server_errors_severity: fatal}", "server_errors_severity"),
        ("{facility: local8}", "facility"),
        ("{facility: security}", "facility"),
        (
            "{custom_fields_by_lua: {f: 'return 1'}}",
            "does not run Lua",
        ),
        ("{host: a.test}", "host"),
    ] {
        let err = load(bad).expect_err(bad);
        assert!(err.contains(expected), "{bad}: {err}");
    }
}

#[test]
fn facilities_have_syslog_h_codes() {
    let code = |name: &str| FACILITIES.iter().position(|f| *f == name);
    for (name, expected) in [
        ("kern", 0),
        ("user", 1),
        ("mail", 2),
        ("daemon", 3),
        ("auth", 4),
        ("syslog", 5),
        ("lpr", 6),
        ("news", 7),
        ("uucp", 8),
        ("cron", 9),
        ("authpriv", 10),
        ("ftp", 11),
        ("local0", 16),
        ("local7", 23),
    ] {
        assert_eq!(code(name), Some(expected), "{name}");
    }
}

#[test]
fn the_message_is_glibcs_with_kongs_ident_and_the_pid() {
    let stamp = chrono::NaiveDate::from_ymd_opt(2024, 3, 5)
        .and_then(|d| d.and_hms_opt(7, 8, 9))
        .unwrap();
    let mut out = Vec::new();
    // local3 (19) at warning (4): 19 * 8 + 4.
    message(
        &mut out,
        19,
        4,
        stamp.format("%b %e %H:%M:%S"),
        4242,
        b"{\"a\":1}",
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "<156>Mar  5 07:08:09 kong[4242]: {\"a\":1}"
    );
    let mut out = Vec::new();
    let later = chrono::NaiveDate::from_ymd_opt(2024, 11, 26)
        .and_then(|d| d.and_hms_opt(23, 59, 0))
        .unwrap();
    message(&mut out, 1, 6, later.format("%b %e %H:%M:%S"), 1, b"{}");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "<14>Nov 26 23:59:00 kong[1]: {}"
    );
}
