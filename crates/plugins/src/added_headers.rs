//! The headers plugins add to whatever response the client gets ([`crate::RequestCtx::response_headers`]),
//! e.g. rate-limiting's `RateLimit-*` or a correlation id, made in `rewrite` or `access` and put on the
//! response head by the proxy once it has one.
//!
//! A short list, not a `HeaderMap`: a plugin adds a few, and the proxy puts each on the response head once.
//! A map would hash every name twice (into it, then into the response's) and allocate its table per request.
//! A number (a counter's remaining count, a reset time) stays a number until it is written: the HTTP/1.1
//! writer formats it into the head's text, and only a head in a map gets a `HeaderValue` made of it.
//! The list knows the lengths of the names it holds ([`Lengths`]): a name of a length none has is
//! known to be absent without a look at the entries, which is what most lookups are (each upstream
//! field and each of Kong's headers asks whether a plugin replaced it; each insert, whether it replaces).

use http::header::{HeaderMap, HeaderName, HeaderValue};

/// The entries allocated at the first insert.
const FIRST_ROOM: usize = 8;

/// Headers for the response. The values of one name are kept together, so that putting them on the
/// response moves each once.
#[derive(Debug, Default, Clone)]
pub struct AddedHeaders {
    list: Vec<Added>,
    lengths: Lengths,
}

/// The lengths of the names in a list, as bits (length modulo 64): a name whose bit is clear is not in
/// it. Kept on each insert, made again after a removal.
#[derive(Debug, Default, Clone, Copy)]
struct Lengths(u64);

impl Lengths {
    fn bit(len: usize) -> u64 {
        1 << (len % 64)
    }

    fn add(&mut self, name: &HeaderName) {
        self.0 |= Lengths::bit(name.as_str().len());
    }

    /// Whether a name `len` bytes long may be in the list.
    fn may_hold(self, len: usize) -> bool {
        self.0 & Lengths::bit(len) != 0
    }

    fn of(list: &[Added]) -> Lengths {
        let mut lengths = Lengths::default();
        list.iter().for_each(|a| lengths.add(&a.name));
        lengths
    }
}

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
        AddedHeaders::default()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
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
        if self.contains(&name) {
            self.remove(&name);
        }
        if self.list.capacity() == 0 {
            // Room for what a plugin usually adds (rate-limiting: five), in one allocation.
            self.list.reserve_exact(FIRST_ROOM);
        }
        self.lengths.add(&name);
        self.list.push(Added {
            name,
            value,
            further: false,
        });
    }

    /// Adds `value` under `name`, beside what was added under it before.
    pub fn append(&mut self, name: HeaderName, value: HeaderValue) {
        let found = match self.contains(&name) {
            true => self.list.iter().rposition(|a| a.name == name),
            false => None,
        };
        match found {
            Some(last) => self.list.insert(
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
        self.list.retain(|a| a.name != name);
        self.lengths = Lengths::of(&self.list);
    }

    /// The first value added under `name`.
    pub fn get(&self, name: &str) -> Option<HeaderValue> {
        if !self.lengths.may_hold(name.len()) {
            return None;
        }
        let found = self.list.iter().find(|a| a.name == name)?;
        Some(found.value.clone().into_header())
    }

    /// Adds another list's headers: each of its names replaces what was added under it before.
    pub fn extend(&mut self, other: AddedHeaders) {
        for added in other.list {
            match added.further {
                true => self.append(added.name, added.value.into_header()),
                false => self.insert_value(added.name, added.value),
            }
        }
    }

    /// Whether a header was added under `name`.
    pub fn contains(&self, name: &HeaderName) -> bool {
        self.lengths.may_hold(name.as_str().len()) && self.list.iter().any(|a| a.name == *name)
    }

    /// [`AddedHeaders::contains`] for a name as received (any case).
    pub fn contains_name(&self, name: &[u8]) -> bool {
        self.lengths.may_hold(name.len())
            && (self.list.iter()).any(|a| a.name.as_str().as_bytes().eq_ignore_ascii_case(name))
    }

    /// Writes them as HTTP/1.1 field lines, for a head written without a map (the writer leaves out the
    /// response's own fields of these names, as [`AddedHeaders::apply`] replaces them).
    pub fn write_lines(&self, out: &mut Vec<u8>) {
        let mut number = itoa::Buffer::new();
        for added in &self.list {
            let value = match &added.value {
                Value::Header(v) => v.as_bytes(),
                Value::Number(n) => crate::header_numbers::number_text(*n, &mut number),
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
        headers.reserve(self.list.len());
        for added in self.list {
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
    fn lookups_find_what_the_list_holds_after_every_change() {
        let mut added = AddedHeaders::new();
        let (a, b) = (
            HeaderName::from_static("x-aa"),
            HeaderName::from_static("x-bb"),
        );
        let c = HeaderName::from_static("x-c");
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
}
