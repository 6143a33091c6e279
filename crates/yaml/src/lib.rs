//! YAML text → libyaml's parse events, one at a time, through a safe interface.
//!
//! Kong reads its declarative files with libyaml, and so did Sluice through serde_yaml. The reader in
//! `sluice-model` builds its document from these events under a memory budget, so only the document is
//! held, never the whole event stream. The events come from unsafe-libyaml, the line-by-line Rust
//! translation of C libyaml that serde_yaml runs on: the same grammar, the same error messages, and
//! C libyaml's long fuzzing history. (libyaml-safer, a rewrite in safe Rust, was used before: it
//! panics on inputs C reads, such as a block scalar without a final line break or `[!a,]`.)
//!
//! This crate is the one place in the workspace that calls libyaml's `unsafe fn`s. Every call is in
//! [`Parser`]; what goes out is owned data.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use unsafe_libyaml as unsafe_sys;

/// A position in the input; `line` and `column` count from 0, as libyaml's do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    /// Bytes from the start of the input.
    pub index: u64,
    pub line: u64,
    pub column: u64,
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} column {}", self.line + 1, self.column + 1)
    }
}

/// How a scalar was written; only a plain one is resolved to a number, boolean or null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// One parse event. Tags are resolved (`!!str` arrives as `tag:yaml.org,2002:str`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias {
        anchor: String,
    },
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        value: String,
        style: ScalarStyle,
    },
    SequenceStart {
        anchor: Option<String>,
        tag: Option<String>,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<String>,
        tag: Option<String>,
    },
    MappingEnd,
}

/// Why the input is not YAML, with libyaml's words and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub problem: String,
    pub mark: Mark,
    /// What was being read when the problem was found, and where that began.
    pub context: Option<(String, Mark)>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.problem, self.mark)?;
        if let Some((context, mark)) = &self.context {
            write!(f, ", {context} at {mark}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// The events of `input`, in order, ending after [`Event::StreamEnd`] or the first error.
pub struct Parser<'t> {
    /// Boxed: libyaml is handed its address once and keeps working on it.
    sys: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    done: bool,
    /// libyaml reads `input` through a pointer for as long as the parser lives.
    input: PhantomData<&'t [u8]>,
}

impl<'t> Parser<'t> {
    pub fn new(input: &'t [u8]) -> Self {
        let mut sys = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` writes every field of the struct it is given (it zeroes it
        // first), and fails only when an allocation fails, which aborts in Rust before returning. The
        // input pointer and length describe `input`, which outlives the parser (`'t`); libyaml only
        // reads through it.
        let ok = unsafe {
            let parser = sys.as_mut_ptr();
            let ok = unsafe_sys::yaml_parser_initialize(parser).ok;
            if ok {
                unsafe_sys::yaml_parser_set_input_string(
                    parser,
                    input.as_ptr(),
                    input.len() as u64,
                );
            }
            ok
        };
        assert!(ok, "libyaml could not initialize a parser");
        Parser {
            sys,
            done: false,
            input: PhantomData,
        }
    }

    /// The parser's error, read after `yaml_parser_parse` failed.
    fn error(&self) -> Error {
        // SAFETY: the parser was initialized in `new`; libyaml sets `problem` and `context` to null
        // or to static NUL-terminated strings.
        let parser = unsafe { self.sys.assume_init_ref() };
        let text = |ptr: *const std::os::raw::c_char| {
            // SAFETY: see above: null or a static C string.
            (!ptr.is_null()).then(|| {
                unsafe { CStr::from_ptr(ptr) }
                    .to_string_lossy()
                    .into_owned()
            })
        };
        Error {
            problem: text(parser.problem)
                .unwrap_or_else(|| "libyaml failed without a reason".into()),
            mark: mark(parser.problem_mark),
            context: text(parser.context).map(|c| (c, mark(parser.context_mark))),
        }
    }
}

impl Iterator for Parser<'_> {
    /// The event with where it starts and where it ends.
    type Item = Result<(Event, Mark, Mark), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut raw = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialized in `new` and its input outlives it; `yaml_parser_parse`
        // zeroes the event first and, when it succeeds, fills it.
        let ok =
            unsafe { unsafe_sys::yaml_parser_parse(self.sys.as_mut_ptr(), raw.as_mut_ptr()).ok };
        if !ok {
            self.done = true;
            return Some(Err(self.error()));
        }
        // SAFETY: filled by the successful parse above; `owned` copies out what the event points to,
        // and the event is then given back to libyaml exactly once.
        let (event, start, end) = unsafe {
            let event = raw.assume_init_mut();
            let owned = owned(event);
            let marks = (mark(event.start_mark), mark(event.end_mark));
            unsafe_sys::yaml_event_delete(event);
            (owned, marks.0, marks.1)
        };
        self.done = matches!(event, Some(Event::StreamEnd) | None);
        event.map(|e| Ok((e, start, end)))
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialized in `new` and deleted only here, once.
        unsafe { unsafe_sys::yaml_parser_delete(self.sys.as_mut_ptr()) }
    }
}

fn mark(m: unsafe_sys::yaml_mark_t) -> Mark {
    Mark {
        index: m.index,
        line: m.line,
        column: m.column,
    }
}

/// A copy of `event`'s data; `None` for libyaml's empty event (after the stream has ended).
///
/// # Safety
/// `event` is a successfully parsed event: the union member its type names is the one set, and its
/// pointers are null or point to NUL-terminated strings (the scalar's value to `length` bytes).
unsafe fn owned(event: &unsafe_sys::yaml_event_t) -> Option<Event> {
    let text = |ptr: *const u8| {
        // SAFETY: per this function's contract.
        (!ptr.is_null()).then(|| {
            unsafe { CStr::from_ptr(ptr.cast()) }
                .to_string_lossy()
                .into_owned()
        })
    };
    Some(match event.type_ {
        unsafe_sys::YAML_STREAM_START_EVENT => Event::StreamStart,
        unsafe_sys::YAML_STREAM_END_EVENT => Event::StreamEnd,
        unsafe_sys::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
        unsafe_sys::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
        unsafe_sys::YAML_ALIAS_EVENT => Event::Alias {
            anchor: text(event.data.alias.anchor).unwrap_or_default(),
        },
        unsafe_sys::YAML_SCALAR_EVENT => {
            let s = &event.data.scalar;
            let value = std::slice::from_raw_parts(s.value, s.length as usize);
            Event::Scalar {
                anchor: text(s.anchor),
                tag: text(s.tag),
                value: String::from_utf8_lossy(value).into_owned(),
                style: match s.style {
                    unsafe_sys::YAML_SINGLE_QUOTED_SCALAR_STYLE => ScalarStyle::SingleQuoted,
                    unsafe_sys::YAML_DOUBLE_QUOTED_SCALAR_STYLE => ScalarStyle::DoubleQuoted,
                    unsafe_sys::YAML_LITERAL_SCALAR_STYLE => ScalarStyle::Literal,
                    unsafe_sys::YAML_FOLDED_SCALAR_STYLE => ScalarStyle::Folded,
                    _ => ScalarStyle::Plain,
                },
            }
        }
        unsafe_sys::YAML_SEQUENCE_START_EVENT => Event::SequenceStart {
            anchor: text(event.data.sequence_start.anchor),
            tag: text(event.data.sequence_start.tag),
        },
        unsafe_sys::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
        unsafe_sys::YAML_MAPPING_START_EVENT => Event::MappingStart {
            anchor: text(event.data.mapping_start.anchor),
            tag: text(event.data.mapping_start.tag),
        },
        unsafe_sys::YAML_MAPPING_END_EVENT => Event::MappingEnd,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
