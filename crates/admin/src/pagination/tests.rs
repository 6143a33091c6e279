//! Unit tests of `pagination`.

use super::*;
use sluice_model::Consumer;

fn consumers(n: usize) -> Vec<Consumer> {
    (0..n)
        .map(|i| Consumer {
            id: uuid::Uuid::from_u128(i as u128 + 1),
            username: Some(format!("c{i}")),
            custom_id: None,
            tags: Some(vec![
                if i % 2 == 0 { "even" } else { "odd" }.to_string(),
                format!("n{i}"),
            ]),
            created_at: 0,
            updated_at: 0,
        })
        .collect()
}

fn names(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["username"].as_str().map(String::from))
        .collect()
}

fn dyns(items: &[Consumer]) -> Vec<&dyn AdminEntity> {
    items.iter().map(|c| c as &dyn AdminEntity).collect()
}

#[test]
fn walks_every_page_then_stops_with_next_null() {
    let items = consumers(7);
    let items = dyns(&items);
    let mut q = ListQuery::parse(Some("size=3")).unwrap();
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let body = q.page("/consumers", &items);
        pages += 1;
        seen.extend(names(&body));
        let Some(next) = body["next"].as_str() else {
            assert!(body.get("offset").is_none(), "no offset on the last page");
            break;
        };
        assert!(next.starts_with("/consumers?offset="));
        assert!(next.ends_with("&size=3"));
        assert_eq!(
            body["offset"].as_str().map(query::escape).as_deref(),
            next.split(['=', '&']).nth(1)
        );
        q = ListQuery::parse(next.split_once('?').map(|(_, q)| q)).unwrap();
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, (0..7).map(|i| format!("c{i}")).collect::<Vec<_>>());
}

#[test]
fn exact_multiple_of_size_has_no_empty_trailing_page() {
    let items = consumers(4);
    let q = ListQuery::parse(Some("size=4")).unwrap();
    let body = q.page("/consumers", &dyns(&items));
    assert_eq!(names(&body).len(), 4);
    assert_eq!(body["next"], Value::Null);
}

#[test]
fn size_is_checked_like_kong() {
    for bad in ["0", "1001", "-1", "2.5"] {
        assert_eq!(
            ListQuery::parse(Some(&format!("size={bad}"))),
            Err(ApiError::InvalidSize(
                "size must be an integer between 1 and 1000".into()
            )),
            "{bad}"
        );
    }
    assert_eq!(
        ListQuery::parse(Some("size=abc")),
        Err(ApiError::InvalidSize("size must be a number".into()))
    );
    assert_eq!(
        ListQuery::parse(Some("size=1000")).map(|q| q.size),
        Ok(1000)
    );
    assert_eq!(ListQuery::parse(None).map(|q| q.size), Ok(100));
}

#[test]
fn foreign_offsets_are_refused() {
    for bad in [
        "x",
        "|potato|",
        "c2x1Y2U6",
        &URL_SAFE_NO_PAD.encode("other:5"),
    ] {
        assert_eq!(
            ListQuery::parse(Some(&format!("offset={bad}"))),
            Err(ApiError::InvalidOffset(bad.to_string())),
            "{bad}"
        );
    }
    let token = encode_offset(42);
    assert_eq!(
        ListQuery::parse(Some(&format!("offset={token}"))).map(|q| q.start),
        Ok(42)
    );
}

#[test]
fn tags_and_or_filter_and_carry_into_next() {
    let items = consumers(10);
    let items = dyns(&items);
    let and = ListQuery::parse(Some("tags=even,n4")).unwrap();
    assert_eq!(names(&and.page("/consumers", &items)), vec!["c4"]);
    let or = ListQuery::parse(Some("tags=n1%2Fn4")).unwrap();
    assert_eq!(names(&or.page("/consumers", &items)), vec!["c1", "c4"]);
    let paged = ListQuery::parse(Some("tags=odd&size=2")).unwrap();
    let body = paged.page("/consumers", &items);
    assert_eq!(names(&body), vec!["c1", "c3"]);
    let next = body["next"].as_str().unwrap_or_default();
    assert!(next.contains("&tags=odd&size=2"), "{next}");
}

#[test]
fn bad_tag_filters_are_refused_with_kongs_messages() {
    let msg = |q: &str| match ListQuery::parse(Some(q)) {
        Err(ApiError::InvalidOption {
            option: "tags",
            message,
        }) => message,
        other => panic!("{q}: {other:?}"),
    };
    assert_eq!(msg("tags=a,b/c"), "invalid filter syntax");
    assert_eq!(msg("tags=a,,b"), "invalid filter syntax");
    assert_eq!(msg("tags="), "cannot be null");
    assert_eq!(msg("tags=a,b,c,d,e,f"), "cannot query more than 5 tags");
}
