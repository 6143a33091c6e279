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

    /// Sets each name of `fields` to its number, as [`AddedHeaders::insert_number`] does one after the
    /// other; the names are distinct. Onto an empty list (usually: one plugin adds headers) no name is
    /// looked for and the room is made once (rate-limiting's five headers).
    pub fn insert_numbers(&mut self, fields: &[(&HeaderName, u64)]) {
        if !self.list.is_empty() {
            for (name, n) in fields {
                self.insert_number((*name).clone(), *n);
            }
            return;
        }
        debug_assert!((1..fields.len()).all(|i| fields[..i].iter().all(|(a, _)| *a != fields[i].0)));
        self.list.reserve_exact(fields.len().max(FIRST_ROOM));
        for (name, n) in fields {
            self.lengths.add(name);
            self.list.push(Added {
                name: (*name).clone(),
                value: Value::Number(*n),
                further: false,
            });
        }
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
        let may_hold = self.lengths.may_hold(name.as_str().len());
        match may_hold
            .then(|| self.list.iter().rposition(|a| a.name == name))
            .flatten()
        {
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
}

impl SetHeader for AddedHeaders {
    fn set(&mut self, name: HeaderName, value: HeaderValue) {
        self.insert(name, value);
    }
}

impl SetHeader for HeaderMap {
    fn set(&mut self, name: HeaderName, value: HeaderValue) {
        self.insert(name, value);
    }
}

#[cfg(test)]
mod tests;
