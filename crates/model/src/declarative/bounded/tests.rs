use super::*;
use crate::declarative::{json, to_document, yaml};

fn example(name: &str) -> String {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn json_documents_are_the_ones_serde_json_builds() {
    for text in [
        r#"{"a": [1, -2, 3.5, 18446744073709551615, -9223372036854775808, null, true, "x"]}"#,
        r#"{"dup": 1, "z": 2, "dup": 3, "unicode": "\u00e9\ud83d\ude00", "e": "a\"b\\c"}"#,
        r#"{"b": {}, "c": [], "d": [[], {}, [{"x": [1]}]], "big": 1e300, "neg": -0.0}"#,
        &example("routing.json"),
    ] {
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(to_document(text), Ok(expected), "{text}");
    }
}

#[test]
fn nesting_deeper_than_the_limit_is_refused() {
    let json = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let block = |depth: usize| -> String {
        (0..depth)
            .map(|i| format!("{}a:\n", "  ".repeat(i)))
            .collect()
    };
    assert!(to_document(&format!("{{\"a\": {}}}", json(MAX_DEPTH - 1))).is_ok());
    assert!(to_document(&block(MAX_DEPTH)).is_ok());
    for text in [
        format!("{{\"a\": {}}}", json(MAX_DEPTH)),
        format!("{{\"a\": {}}}", json(1_000_000)),
        block(MAX_DEPTH + 1),
        format!("{}x", "- ".repeat(MAX_DEPTH + 1)),
    ] {
        let err = to_document(&text).unwrap_err();
        assert!(
            err.starts_with("failed parsing declarative configuration: ")
                && err.contains(&format!("nested deeper than {MAX_DEPTH}")),
            "{err}"
        );
    }
}

/// The budget stops a document where it crosses it, in both readers, whatever makes it expensive.
#[test]
fn a_document_over_its_budget_is_refused() {
    let zeros = format!("[{}0]", "0,".repeat(9_999));
    let singles = format!("[{}[0]]", "[0],".repeat(9_999));
    let strings = format!("{{\"k\": \"{}\"}}", "v".repeat(60_000));
    for (text, enough) in [
        (&zeros, 1_400_000),
        (&singles, 2_400_000),
        (&strings, 70_000),
    ] {
        assert!(json::read(text, &Budget::new(enough)).is_ok());
        assert!(yaml::read(text, &Budget::new(enough)).is_ok());
        let err = json::read(text, &Budget::new(enough / 2)).unwrap_err();
        assert!(err.to_string().contains(TOO_MUCH_MEMORY), "{err}");
        assert_eq!(err.classify(), serde_json::error::Category::Data);
        let err = yaml::read(text, &Budget::new(enough / 2)).unwrap_err();
        assert!(err.contains(TOO_MUCH_MEMORY), "{err}");
    }
    // Through to_document, with the budget of the text's own size: not refused by the JSON reader
    // and then read again as YAML.
    let huge = format!("{{\"a\": [{}0]}}", "0,".repeat(3_000_000));
    let err = to_document(&huge).unwrap_err();
    assert!(err.contains(TOO_MUCH_MEMORY), "{err}");
}

#[test]
fn repeated_aliases_are_refused_by_what_they_expand_to() {
    // 100 KB of text that would expand to 100 MB.
    let anchor = format!("a: &big \"{}\"\n", "x".repeat(100_000));
    let text = format!("{anchor}b: [{}*big]\n", "*big, ".repeat(999));
    let err = to_document(&text).unwrap_err();
    assert!(err.contains(TOO_MUCH_MEMORY), "{err}");
    // The classic: nine levels of nine aliases.
    let mut laughs = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let aliases = format!("*l{}, ", i - 1).repeat(9);
        laughs.push_str(&format!(
            "l{i}: &l{i} [{}]\n",
            aliases.trim_end_matches(", ")
        ));
    }
    let err = to_document(&laughs).unwrap_err();
    assert!(err.contains(TOO_MUCH_MEMORY), "{err}");
}

/// The room [`BYTES_PER_TEXT_BYTE`] leaves: Kong documents take well under half of it.
#[test]
fn kong_documents_fit_their_budget_with_room() {
    for name in ["kong.yml", "routing.json", "tls-and-metrics.yml"] {
        let text = example(name);
        let budget = Budget::new(usize::MAX);
        yaml::read(&text, &budget).unwrap();
        let used = usize::MAX - budget.left();
        assert!(
            used < text.len() * BYTES_PER_TEXT_BYTE / 2,
            "{name}: {used} bytes for {} of text",
            text.len()
        );
    }
}

/// The densest ordinary document, a long list of one-field consumers (with JSON's quotes and without
/// them), fits in half its budget.
#[test]
fn a_long_list_of_small_entities_fits() {
    let yaml: String = (0..100_000)
        .map(|i| format!("- username: c{i}\n"))
        .collect();
    let yaml = format!("_format_version: \"3.0\"\nconsumers:\n{yaml}");
    let json: Vec<String> = (0..100_000)
        .map(|i| format!("{{\"username\":\"c{i}\"}}"))
        .collect();
    let json = format!(
        "{{\"_format_version\":\"3.0\",\"consumers\":[{}]}}",
        json.join(",")
    );
    for text in [yaml, json] {
        let half = Budget::new(text.len() * BYTES_PER_TEXT_BYTE / 2);
        assert!(yaml::read(&text, &half).is_ok());
    }
}
