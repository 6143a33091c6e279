//! The headers plugins add to whatever response the client gets ([`crate::RequestCtx::response_headers`]),
//! e.g. rate-limiting's `RateLimit-*` or a correlation id, made in `rewrite` or `access` and put on the
//! response head by the proxy once it has one.
//!
//! A short list, not a `HeaderMap`: a plugin adds a few, and the proxy puts each on the response head once.
//! A map would hash every name twice (into it, then into the response's) and allocate its table per request.
//! A number (a counter's remaining count, a reset time) stays a number until it is written: the HTTP/1.1
//! writer formats it into the head's text, and only a head in a map gets a `HeaderValue` made of it.

use http::header::{HeaderMap, HeaderName, HeaderValue};

/// The entries allocated at the first insert.
const FIRST_ROOM: usize = 8;

/// Headers for the response. The values of one name are kept together, so that putting them on the
/// response moves each once.
#[derive(Debug, Default, Clone)]
pub struct AddedHeaders(Vec<Added>);

#[derive(Debug, Clone)]
struct Added {
    name: HeaderName,
    value: Value,
    /// A further value of the name of the entry before.
    further: bool,
}

/// A value as a plugin gave it.
#[derive(Debug, Clone)]
enum Value {
    Header(HeaderValue),
    /// Made into text only where it is written ([`AddedHeaders::write_lines`], [`AddedHeaders::apply`]).
    Number(u64),
}

impl Value {
    fn into_header(self) -> HeaderValue {
        match self {
            Value::Header(v) => v,
            Value::Number(n) => crate::header_number(n),
        }
    }
}

impl AddedHeaders {
    pub fn new() -> AddedHeaders {
        AddedHeaders(Vec::new())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets `name` to `value`, replacing what was added under that name before.
    pub fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        self.insert_value(name, Value::Header(value));
    }

    /// Sets `name` to the number `n` (its text made when the head is written).
    pub fn insert_number(&mut self, name: HeaderName, n: u64) {
        self.insert_value(name, Value::Number(n));
    }

    fn insert_value(&mut self, name: HeaderName, value: Value) {
        // Usually a new name: a look, not a `retain` that moves every entry.
        if self.0.iter().any(|a| a.name == name) {
            self.remove(&name);
        }
        if self.0.capacity() == 0 {
            // Room for what a plugin usually adds (rate-limiting: five), in one allocation.
            self.0.reserve_exact(FIRST_ROOM);
        }
        self.0.push(Added {
            name,
            value,
            further: false,
        });
    }

    /// Adds `value` under `name`, beside what was added under it before.
    pub fn append(&mut self, name: HeaderName, value: HeaderValue) {
        match self.0.iter().rposition(|a| a.name == name) {
            Some(last) => self.0.insert(
                last + 1,
                Added {
                    name,
                    value: Value::Header(value),
                    further: true,
                },
            ),
            None => self.insert(name, value),
        }
    }

    /// Takes back what was added under `name`.
    pub fn remove(&mut self, name: &HeaderName) {
        self.0.retain(|a| a.name != name);
    }

    /// The first value added under `name`.
    pub fn get(&self, name: &str) -> Option<HeaderValue> {
        let found = self.0.iter().find(|a| a.name == name)?;
        Some(found.value.clone().into_header())
    }

    /// Adds another list's headers: each of its names replaces what was added under it before.
    pub fn extend(&mut self, other: AddedHeaders) {
        for added in other.0 {
            match added.further {
                true => self.append(added.name, added.value.into_header()),
                false => self.insert_value(added.name, added.value),
            }
        }
    }

    /// Whether a header was added under `name`.
    pub fn contains(&self, name: &HeaderName) -> bool {
        self.0.iter().any(|a| a.name == *name)
    }

    /// Whether some name added is one `f` picks (one pass, for a writer that would otherwise ask
    /// [`AddedHeaders::contains`] of each of its own names).
    pub fn any_name(&self, f: impl Fn(&HeaderName) -> bool) -> bool {
        self.0.iter().any(|a| f(&a.name))
    }

    /// Writes them as HTTP/1.1 field lines, for a head written without a map (the writer leaves out the
    /// response's own fields of these names, as [`AddedHeaders::apply`] replaces them).
    pub fn write_lines(&self, out: &mut Vec<u8>) {
        let mut number = itoa::Buffer::new();
        for added in &self.0 {
            let value = match &added.value {
                Value::Header(v) => v.as_bytes(),
                Value::Number(n) => number.format(*n).as_bytes(),
            };
            let name = added.name.as_str().as_bytes();
            out.reserve(name.len() + value.len() + 4);
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Puts them on a response head: each name replaces the response's own values.
    pub fn apply(self, headers: &mut HeaderMap) {
        headers.reserve(self.0.len());
        for added in self.0 {
            let value = added.value.into_header();
            if added.further {
                headers.append(added.name, value);
            } else {
                headers.insert(added.name, value);
            }
        }
    }
}

/// Setting a header where a plugin may set one: the headers it adds in `access`, or a response head.
pub trait SetHeader {
    /// Sets `name` to `value`, replacing its values before.
    fn set(&mut self, name: HeaderName, value: HeaderValue);

    /// Sets `name` to the number `n`.
    fn set_number(&mut self, name: HeaderName, n: u64) {
        self.set(name, crate::header_number(n));
    }
}

impl SetHeader for AddedHeaders {
    fn set(&mut self, name: HeaderName, value: HeaderValue) {
        self.insert(name, value);
    }

    /// Kept a number until the head is written.
    fn set_number(&mut self, name: HeaderName, n: u64) {
        self.insert_number(name, n);
    }
}

impl SetHeader for HeaderMap {
    fn set(&mut self, name: HeaderName, value: HeaderValue) {
        self.insert(name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(v: &'static str) -> HeaderValue {
        HeaderValue::from_static(v)
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
}
