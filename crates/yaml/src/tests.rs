//! Unit tests: the events of small documents, errors with their marks, and the inputs the previous
//! parser (libyaml-safer) panicked on.

use super::*;

fn events(text: &str) -> Result<Vec<Event>, Error> {
    Parser::new(text.as_bytes())
        .map(|e| e.map(|(event, _, _)| event))
        .collect()
}

fn plain(value: &str) -> Event {
    Event::Scalar {
        anchor: None,
        tag: None,
        value: value.into(),
        style: ScalarStyle::Plain,
    }
}

#[test]
fn a_mapping_reads_as_its_events() {
    use Event::*;
    assert_eq!(
        events("a: &x [1, !!str 2]\nb: *x\n").unwrap(),
        vec![
            StreamStart,
            DocumentStart,
            MappingStart {
                anchor: None,
                tag: None
            },
            plain("a"),
            SequenceStart {
                anchor: Some("x".into()),
                tag: None
            },
            plain("1"),
            Scalar {
                anchor: None,
                tag: Some("tag:yaml.org,2002:str".into()),
                value: "2".into(),
                style: ScalarStyle::Plain,
            },
            SequenceEnd,
            plain("b"),
            Alias { anchor: "x".into() },
            MappingEnd,
            DocumentEnd,
            StreamEnd,
        ]
    );
    assert_eq!(events("").unwrap(), vec![StreamStart, StreamEnd]);
}

#[test]
fn an_error_says_what_and_where_and_ends_the_events() {
    let mut parser = Parser::new(b"a: 'b\n");
    let err = parser.find_map(Result::err).unwrap();
    assert_eq!(
        err.to_string(),
        "found unexpected end of stream at line 2 column 1, \
         while scanning a quoted scalar at line 1 column 4"
    );
    assert!(parser.next().is_none());
}

#[test]
fn marks_count_bytes_lines_and_columns() {
    let marks: Vec<_> = Parser::new("a: é\nb: c\n".as_bytes())
        .map(Result::unwrap)
        .filter(|(e, _, _)| matches!(e, Event::Scalar { .. }))
        .map(|(_, start, end)| (start.index, start.line, start.column, end.index))
        .collect();
    assert_eq!(
        marks,
        vec![(0, 0, 0, 1), (3, 0, 3, 5), (6, 1, 0, 7), (9, 1, 3, 10)]
    );
}

/// libyaml-safer 0.3.0 panicked on each of these; C libyaml reads them (or refuses them) calmly.
#[test]
fn inputs_the_safe_rewrite_panicked_on_are_read() {
    let literal = |value: &str| Event::Scalar {
        anchor: None,
        tag: None,
        value: value.into(),
        style: ScalarStyle::Literal,
    };
    assert_eq!(events("|\n -").unwrap()[2], literal("-"));
    assert_eq!(events("a: |\n  b").unwrap()[4], literal("b"));
    assert!(events("[!a,]").is_ok());
    assert!(events("\"a\\").is_err());
}
