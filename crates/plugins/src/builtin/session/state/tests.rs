//! Unit tests of session semantics with a chosen clock: touches, renewals, timeouts, the `remember` cookie,
//! several audiences, and entries written without a subject.

use super::*;
use serde_json::json;

fn settings(timeouts: Timeouts, remember: bool) -> Settings {
    Settings {
        keys: Keys::new("secret"),
        attrs: Attributes::new(None, "/", "Lax", false, true),
        audience: "default".into(),
        cookie_name: "session".into(),
        timeouts,
        remember: remember.then(|| {
            let t = Timeouts {
                idling: 0.0,
                rolling: 604_800.0,
                absolute: 2_592_000.0,
            };
            ("remember".to_string(), t)
        }),
        request_headers: Vec::new(),
        response_headers: Vec::new(),
    }
}

const T0: u64 = 1_800_000_000;
const DEFAULTS: Timeouts = Timeouts {
    idling: 900.0,
    rolling: 3600.0,
    absolute: 86400.0,
};

/// A `Cookie` request header with the cookies the session sent, merged over `jar`'s.
fn send(jar: &mut Vec<(String, String)>, out: Outgoing) -> HeaderMap {
    for (name, line) in out.0 {
        jar.retain(|(n, _)| *n != name);
        let value = line.split(';').next().unwrap()[name.len() + 1..].to_string();
        if !line.contains("Max-Age=0") {
            jar.push((name, value));
        }
    }
    let cookie: Vec<String> = jar.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let mut headers = HeaderMap::new();
    if !cookie.is_empty() {
        headers.insert("cookie", cookie.join("; ").parse().unwrap());
    }
    headers
}

fn login(st: &Settings, jar: &mut Vec<(String, String)>) -> HeaderMap {
    let (mut s, opened) = st.start(&HeaderMap::new(), T0);
    assert!(opened.is_err());
    s.set_data("c-id", "cred-id", "alice");
    st.save(&mut s, &HeaderMap::new(), T0).unwrap();
    send(jar, s.out)
}

#[test]
fn an_idle_session_is_touched_after_a_minute_and_expires_when_not() {
    let st = settings(DEFAULTS, false);
    let mut jar = Vec::new();
    let first = login(&st, &mut jar);
    let (mut s, opened) = st.start(&first, T0 + 61);
    opened.unwrap();
    assert_eq!(s.data(), Some(("c-id", "cred-id")));
    st.refresh(&mut s, T0 + 61).unwrap();
    assert_eq!(s.out.0.len(), 1, "touched");
    let id = s.meta().unwrap().header.sid().to_vec();
    let touched = send(&mut jar, s.out);
    // 61 + 899 s: idle 899 s since the touch, still open (same session id); the first cookie idled out.
    let (s, opened) = st.start(&touched, T0 + 960);
    opened.unwrap();
    assert_eq!(s.meta().unwrap().header.sid(), id.as_slice());
    let (_, opened) = st.start(&first, T0 + 960);
    assert_eq!(opened, Err("session idling timeout exceeded"));
}

#[test]
fn renewal_after_three_quarters_of_the_rolling_timeout_keeps_the_creation_time() {
    let t = Timeouts {
        idling: 0.0,
        rolling: 100.0,
        absolute: 150.0,
    };
    let st = settings(t, false);
    let mut jar = Vec::new();
    let first = login(&st, &mut jar);
    let (mut s, _) = st.start(&first, T0 + 75);
    st.refresh(&mut s, T0 + 75).unwrap();
    assert!(s.out.0.is_empty(), "75 s is not past 3/4");
    let (mut s, _) = st.start(&first, T0 + 76);
    st.refresh(&mut s, T0 + 76).unwrap();
    let renewed = send(&mut jar, s.out);
    assert_eq!(
        st.start(&first, T0 + 101).1,
        Err("session rolling timeout exceeded")
    );
    let (s, opened) = st.start(&renewed, T0 + 140);
    opened.unwrap();
    assert_eq!(s.meta().unwrap().header.creation(), T0);
    assert_eq!(
        st.start(&renewed, T0 + 151).1,
        Err("session absolute timeout exceeded")
    );
}

#[test]
fn the_remember_cookie_restores_an_expired_session() {
    let st = settings(DEFAULTS, true);
    let mut jar = Vec::new();
    login(&st, &mut jar);
    assert_eq!(jar.len(), 2);
    jar.retain(|(n, _)| n == "remember");
    let headers = send(&mut jar, Outgoing::default());
    let (s, opened) = st.start(&headers, T0 + 5000);
    opened.unwrap();
    assert_eq!(s.data(), Some(("c-id", "cred-id")));
    let names: Vec<&str> = s.out.0.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["remember", "session"]);
    // A logout clears both.
    let mut s = s;
    st.logout(&mut s, &headers, T0 + 5000).unwrap();
    assert!(s.out.0.iter().all(|(_, l)| l.ends_with("Max-Age=0")));
    assert!(send(&mut jar, s.out).is_empty());
}

#[test]
fn audiences_share_a_cookie_and_entries_without_a_subject_open() {
    let st = settings(DEFAULTS, false);
    let mut other = settings(DEFAULTS, false);
    other.audience = "other".into();
    // An entry as Kong's library writes it without a subject: `[data, audience]`.
    let (mut s, _) = st.start(&HeaderMap::new(), T0);
    s.entries = vec![json!([["c-id", "cred-id"], "default"])];
    st.save(&mut s, &HeaderMap::new(), T0).unwrap();
    let mut jar = Vec::new();
    let headers = send(&mut jar, s.out);
    let (mut s, opened) = other.start(&headers, T0 + 1);
    assert_eq!(opened, Err("missing session audience"));
    s.set_data("c2", "cred2", "bob");
    other.save(&mut s, &headers, T0 + 1).unwrap();
    let headers = send(&mut jar, s.out);
    let (mut mine, opened) = st.start(&headers, T0 + 2);
    opened.unwrap();
    assert_eq!(mine.data(), Some(("c-id", "cred-id")));
    mine.set_data("c-id", "cred-id", "alice");
    assert_eq!(mine.entry()[2], "alice");
    let (theirs, opened) = other.start(&headers, T0 + 2);
    opened.unwrap();
    assert_eq!(theirs.data(), Some(("c2", "cred2")));
}
