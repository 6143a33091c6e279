use super::*;

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// What serde_yaml 0.9 made of `text`: the reading every document must keep.
fn before(text: &str) -> Option<Value> {
    serde_yaml::from_str(text).ok()
}

fn now(text: &str) -> Result<Value, String> {
    read(text, &Budget::of(text))
}

fn same_as_before(text: &str) {
    match before(text) {
        Some(expected) => assert_eq!(now(text), Ok(expected), "{text}"),
        None => assert!(now(text).is_err(), "{text}: serde_yaml refused it"),
    }
}

#[test]
fn scalars_read_as_serde_yaml_read_them() {
    for text in [
        "a: [1, -2, +3, 0x1f, -0x1f, 0o17, 0b101, 007, -007, 0, -0, 1_000, 0x]\n",
        "b: [3.5, -1e3, 1e400, .5, 5., .inf, -.Inf, +.INF, .nan, .NaN, inf, nan, 1.2.3]\n",
        "c: [~, null, Null, NULL, nULL, '', true, True, TRUE, tRUE, yEs, oN, y, n, Y, N]\n",
        "d: ['1', \"2\", 'true', \"null\", x]\n",
        "e: 18446744073709551615\nf: 18446744073709551616\ng: -9223372036854775809\n",
        "h: 340282366920938463463374607431768211455\n",
        "i: [!!str 12, !!int '7', !!float '1', !!bool 'true', !!null '', !!str true]\n",
        "j: !!int x\n",
        "k: !!bool y\n",
        "l: !local 1\n",
        "m: !local [1]\n",
        "n: !!seq [1]\no: !!map {a: 1}\n",
        "lit: |\n  a\n   b\n\n  c\nfold: >\n  a\n  b\n\n  c\nkeep: |+\n  x\n\nstrip: >-\n  y\n",
        "multi: this is\n  a plain scalar\n  on lines\nq: \"esc \\t \\u00e9 \\x41 \\n\"\nr: 'it''s'\n",
        "s: http://x:8000/a#b\nt: a: b\n",
    ] {
        same_as_before(text);
    }
}

/// Kong reads declarative files with lyaml (YAML 1.1): plain yes/no/on/off are booleans; quoted, strings.
#[test]
fn yaml_1_1_booleans_read_as_kong_reads_them() {
    let text = "a: [yes, Yes, YES, on, On, ON, no, No, NO, off, Off, OFF, 'on', \"no\"]\nstrip_path: off\n";
    let v = now(text).expect("valid YAML");
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    let on = Value::String("on".into());
    let no = Value::String("no".into());
    let expected = [&t, &t, &t, &t, &t, &t, &f, &f, &f, &f, &f, &f, &on, &no];
    assert_eq!(
        v["a"]
            .as_array()
            .expect("a list")
            .iter()
            .collect::<Vec<_>>(),
        expected
    );
    assert_eq!(v["strip_path"], f);
}

/// libyaml-safer 0.3.0, the parser before, panicked on a block scalar at the end of input without a
/// final line break (the fuzzer's `|\n -`); every such ending reads as serde_yaml read it.
#[test]
fn block_scalars_at_the_end_of_the_input_read_as_serde_yaml_read_them() {
    let place = ["", "a: ", "- ", "a:\n  - ", "a: &x ", "? "];
    let header = ["|", ">", "|-", "|+", ">-", ">+", "|2", "|+1", ">2-"];
    let body = [
        "",
        " ",
        "\n",
        "\n ",
        "\n  b",
        "\n  b  ",
        "\n  b\n",
        "\n  b\n\n",
        "\n  b\n  ",
        "\n  b\n\n  c",
        "\n -",
        "\r\n  b",
        "\n  b\r",
        "\n   b\n  c",
        "\n  # c",
    ];
    for place in place {
        for header in header {
            for body in body {
                same_as_before(&format!("{place}{header}{body}"));
            }
        }
    }
    same_as_before("a: |\n  b\nc: d");
    same_as_before("|1\n b\n   ");
    same_as_before("[!a,]");
    same_as_before("{a: !x,}");
    same_as_before("\"a\\");
    same_as_before("a: 'b'");
    same_as_before("a: \"b");
}

#[test]
fn keys_anchors_and_documents_read_as_serde_yaml_read_them() {
    for text in [
        "1: a\ntrue: b\n~: c\n0x10: d\n'q': e\n? x\n: f\n",
        "a: 1\na: 2\nb: 3\n",
        "? [a]\n: b\n",
        "? {a: 1}\n: b\n",
        "base: &b {host: x, port: 80}\nuse: *b\nlist: [*b, *b]\n",
        "s: &s 012\nt: *s\n*s : u\n",
        "n: &n 5\nkeyed: {*n : x}\n",
        "merge: &m {a: 1}\nother:\n  <<: *m\n  b: 2\n",
        "",
        "# only a comment\n",
        "---\na: 1\n...\n",
        "---\na: 1\n---\nb: 2\n",
        "--- 5\n",
        "- a\n- b\n",
        "a: [1, 2\n",
        "a: b: c\n",
        "\ta: 1\n",
        "d: [x, |\n    y\n  ]\n",
        "a: &x 1\nb: *y\n",
        "a: &x [1, *x]\n",
        "a:\n  - 1\n - 2\n",
    ] {
        same_as_before(text);
    }
}

/// Every declarative document in the repository (examples, fuzz seeds and the YAML in tests) reads as
/// it did through serde_yaml.
#[test]
fn the_repositorys_documents_read_as_before() {
    let mut texts: Vec<String> = Vec::new();
    for dir in ["examples", "fuzz/corpus/declarative"] {
        for entry in std::fs::read_dir(repo(dir)).unwrap() {
            texts.push(std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
    }
    let mut sources = vec![repo("crates")];
    while let Some(path) = sources.pop() {
        if path.is_dir() {
            sources.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let code = std::fs::read_to_string(&path).unwrap();
            // Raw string literals holding a document.
            for piece in code.split("r#\"").skip(1) {
                let Some((literal, _)) = piece.split_once("\"#") else {
                    continue;
                };
                if literal.contains("_format_version") {
                    texts.push(literal.to_string());
                }
            }
        }
    }
    assert!(texts.len() > 50, "only {} documents found", texts.len());
    for text in &texts {
        same_as_before(text);
    }
}

#[test]
fn aliases_are_charged_for_their_copies_and_their_depth() {
    let nested = format!("{}1{}", "[".repeat(60), "]".repeat(60));
    let text = format!("a: &a {nested}\nb: *a\nc: [[*a]]\n");
    assert!(now(&text).is_ok());
    let deeper = format!(
        "a: &a {nested}\nb: {}*a{}\n",
        "[".repeat(40),
        "]".repeat(40)
    );
    let err = now(&deeper).unwrap_err();
    assert!(err.contains("nested deeper than 100"), "{err}");
    // A node cannot be an alias of itself.
    assert!(now("a: &a [1, *a]\n").is_err());
    let copies = format!(
        "a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [{}]\n",
        "*a, ".repeat(50)
    );
    assert!(read(&copies, &Budget::new(60_000)).is_ok());
    let err = read(&copies, &Budget::new(30_000)).unwrap_err();
    assert!(err.contains("too much memory"), "{err}");
}
