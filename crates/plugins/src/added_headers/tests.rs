//! [`AddedHeaders`]: replacing and appending by name, numbers kept as numbers, lookups by name.

use super::*;

fn value(v: &'static str) -> HeaderValue {
    HeaderValue::from_static(v)
}

fn name(n: &'static str) -> HeaderName {
    HeaderName::from_static(n)
}

#[test]
fn insert_replaces_append_adds_and_apply_replaces_the_responses_own() {
    let mut added = AddedHeaders::new();
    let (a, b) = (
        HeaderName::from_static("x-a"),
        HeaderName::from_static("x-b"),
    );
    added.insert(a.clone(), value("1"));
    added.insert(a.clone(), value("2"));
    added.append(b.clone(), value("3"));
    added.append(b.clone(), value("4"));
    assert_eq!(added.get("x-a"), Some(value("2")));
    let mut head = HeaderMap::new();
    head.insert(a.clone(), value("upstream"));
    head.insert(b.clone(), value("upstream"));
    head.insert("x-c", value("kept"));
    added.apply(&mut head);
    let all = |n: &str| head.get_all(n).iter().cloned().collect::<Vec<_>>();
    assert_eq!(all("x-a"), [value("2")]);
    assert_eq!(all("x-b"), [value("3"), value("4")]);
    assert_eq!(all("x-c"), [value("kept")]);
}

#[test]
fn a_number_is_written_as_text_and_put_in_a_map_alike() {
    let mut added = AddedHeaders::new();
    added.insert_number(HeaderName::from_static("x-big"), 999_999_937);
    added.insert_number(HeaderName::from_static("x-small"), 7);
    let mut lines = Vec::new();
    added.write_lines(&mut lines);
    assert_eq!(lines, b"x-big: 999999937\r\nx-small: 7\r\n");
    assert_eq!(added.get("x-big"), Some(value("999999937")));
    let mut head = HeaderMap::new();
    added.apply(&mut head);
    assert_eq!(head["x-big"], "999999937");
    assert_eq!(head["x-small"], "7");
}

#[test]
fn numbers_set_together_are_what_setting_them_one_by_one_makes() {
    let (a, b, c) = (name("x-a"), name("x-bb"), name("x-c"));
    let fields = [(&a, 1), (&b, 2), (&c, 3)];
    let mut before = AddedHeaders::new();
    before.insert(b.clone(), value("old"));
    before.insert(name("x-d"), value("kept"));
    for start in [AddedHeaders::new(), before] {
        let (mut together, mut one_by_one) = (start.clone(), start);
        together.insert_numbers(&fields);
        for (name, n) in fields {
            one_by_one.insert_number(name.clone(), n);
        }
        let (mut x, mut y) = (Vec::new(), Vec::new());
        together.write_lines(&mut x);
        one_by_one.write_lines(&mut y);
        assert_eq!(String::from_utf8(x).unwrap(), String::from_utf8(y).unwrap());
        assert!(together.contains(&a) && together.contains_name(b"X-BB"));
    }
}

#[test]
fn lookups_find_what_the_list_holds_after_every_change() {
    let mut added = AddedHeaders::new();
    let (a, b, c) = (name("x-aa"), name("x-bb"), name("x-c"));
    assert!(!added.contains(&a) && !added.contains_name(b"X-AA"));
    added.insert_number(a.clone(), 1);
    added.append(b.clone(), value("2"));
    added.insert(c.clone(), value("3"));
    assert!(added.contains(&a) && added.contains(&b) && added.contains(&c));
    assert!(added.contains_name(b"X-Bb") && !added.contains_name(b"x-ab"));
    assert_eq!(added.get("X-AA"), Some(value("1")));
    added.remove(&a);
    assert!(!added.contains(&a) && added.get("x-aa").is_none() && added.contains(&b));
    added.remove(&b);
    assert!(!added.contains_name(b"x-bb") && added.contains(&c));
    added.append(a.clone(), value("4"));
    added.append(a.clone(), value("5"));
    let mut head = HeaderMap::new();
    added.apply(&mut head);
    let all: Vec<_> = head.get_all("x-aa").iter().cloned().collect();
    assert_eq!(all, [value("4"), value("5")]);
}

#[test]
fn a_list_extends_by_name_with_every_value() {
    let mut added = AddedHeaders::new();
    added.insert(HeaderName::from_static("x-a"), value("old"));
    added.insert(HeaderName::from_static("x-b"), value("kept"));
    let mut more = AddedHeaders::new();
    more.insert(HeaderName::from_static("x-a"), value("new"));
    more.append(HeaderName::from_static("x-a"), value("newer"));
    added.extend(more);
    let mut head = HeaderMap::new();
    added.apply(&mut head);
    let all: Vec<_> = head.get_all("x-a").iter().cloned().collect();
    assert_eq!(all, [value("new"), value("newer")]);
    assert_eq!(head.get("x-b"), Some(&value("kept")));
}
