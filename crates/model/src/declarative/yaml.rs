//! YAML text → a document, built from the parser's events one at a time.
//!
//! serde_yaml (archived) kept every event of a document in memory before building anything, about 130
//! bytes per event: an 8 MB YAML sequence took 455 MB. Here libyaml's events ([`sluice_yaml`], the
//! same libyaml serde_yaml runs on) are taken as it scans, so only the document itself is held, under
//! the [`Budget`], and an alias is charged for the copy it makes. Scalars mean what they meant through
//! serde_yaml ([`scalar::resolve`]), so every document reads as before.
//!
//! (saphyr-parser was tried first: it keeps every token of a flow collection that could be a mapping
//! key until the collection ends, 270 bytes of memory per byte of `[0,0,...]`. libyaml-safer, a
//! rewrite of libyaml in safe Rust, came next: CI's fuzzer found it panicking on inputs C reads.)

use super::bounded::{too_deep, Array, Budget, Object, MAX_DEPTH};
use serde_json::Value;
use sluice_yaml::{Event, ScalarStyle};
use std::borrow::Cow;
use std::collections::HashMap;

pub(super) mod scalar;
#[cfg(test)]
mod tests;

/// The one document in `text` (null when there is none), or why it cannot be read.
pub fn read(text: &str, budget: &Budget) -> Result<Value, String> {
    let mut builder = Builder {
        budget,
        open: Vec::new(),
        anchors: HashMap::new(),
        root: None,
    };
    for event in sluice_yaml::Parser::new(text.as_bytes()) {
        let (event, start, _) = event.map_err(|e| e.to_string())?;
        builder
            .event(event)
            .map_err(|e| format!("{e} at {start}"))?;
    }
    Ok(builder.root.unwrap_or(Value::Null))
}

/// A node an anchor names, for its aliases.
enum Anchored {
    /// A scalar is read again at each alias (as a key it is its text, as a value its meaning).
    Scalar {
        text: String,
        plain: bool,
        tag: Option<String>,
    },
    /// A collection is copied at each alias: what it cost and how deep it nests come along.
    Node {
        value: Value,
        cost: usize,
        depth: usize,
    },
}

/// An array or object still open, with its anchor, what the budget had left when it opened, and how
/// deep the nodes in it go.
struct Open {
    node: Node,
    anchor: Option<String>,
    left_at_start: usize,
    depth: usize,
}

enum Node {
    Array(Array),
    /// An object and the key whose value comes next.
    Object(Object, Option<String>),
}

struct Builder<'b> {
    budget: &'b Budget,
    open: Vec<Open>,
    anchors: HashMap<String, Anchored>,
    root: Option<Value>,
}

impl Builder<'_> {
    fn event(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::Scalar {
                anchor,
                tag,
                value,
                style,
                ..
            } => {
                let plain = style == ScalarStyle::Plain;
                if let Some(anchor) = anchor {
                    let stored = Anchored::Scalar {
                        text: self.budget.string(&value)?,
                        plain,
                        tag: tag.clone(),
                    };
                    self.anchors.insert(anchor, stored);
                }
                self.scalar(Cow::Owned(value), plain, tag.as_deref())
            }
            Event::Alias { anchor } => match self.anchors.get(&anchor) {
                Some(Anchored::Scalar { text, plain, tag }) => {
                    let (text, plain, tag) = (text.clone(), *plain, tag.clone());
                    self.scalar(Cow::Owned(text), plain, tag.as_deref())
                }
                Some(Anchored::Node { value, cost, depth }) => {
                    if self.open.len() + depth > MAX_DEPTH {
                        return Err(too_deep());
                    }
                    let (value, cost, depth) = (value.clone(), *cost, *depth);
                    self.budget.charge(cost)?;
                    self.close(value, depth)
                }
                None => Err(format!("unknown anchor {anchor:?}")),
            },
            Event::SequenceStart { anchor, tag, .. } => {
                self.start(Node::Array(Array::default()), anchor, tag)
            }
            Event::MappingStart { anchor, tag, .. } => {
                self.start(Node::Object(Object::default(), None), anchor, tag)
            }
            Event::SequenceEnd | Event::MappingEnd => self.end(),
            Event::DocumentStart if self.root.is_some() => Err(
                "deserializing from YAML containing more than one document is not supported".into(),
            ),
            _ => Ok(()),
        }
    }

    /// A scalar (or an alias to one) where the next key or value goes.
    fn scalar(&mut self, text: Cow<'_, str>, plain: bool, tag: Option<&str>) -> Result<(), String> {
        if let Some(Open {
            node: Node::Object(_, key @ None),
            ..
        }) = self.open.last_mut()
        {
            *key = Some(self.budget.string(&text)?);
            return Ok(());
        }
        let value = scalar::resolve(&text, plain, tag)?;
        if let Value::String(s) = &value {
            self.budget.charge_string(s)?;
        }
        self.close(value, 0)
    }

    fn start(
        &mut self,
        node: Node,
        anchor: Option<String>,
        tag: Option<String>,
    ) -> Result<(), String> {
        if tag.is_some_and(|t| t.starts_with('!')) {
            return Err("invalid type: enum, expected any valid JSON value".into());
        }
        if let Some(Open {
            node: Node::Object(_, None),
            ..
        }) = self.open.last()
        {
            let what = if matches!(node, Node::Array(_)) {
                "sequence"
            } else {
                "map"
            };
            return Err(format!("invalid type: {what}, expected a string"));
        }
        if self.open.len() >= MAX_DEPTH {
            return Err(too_deep());
        }
        self.open.push(Open {
            node,
            anchor,
            left_at_start: self.budget.left(),
            depth: 0,
        });
        Ok(())
    }

    fn end(&mut self) -> Result<(), String> {
        let open = self
            .open
            .pop()
            .ok_or("the end of a collection never opened")?;
        let value = match open.node {
            Node::Array(array) => array.finish(self.budget),
            Node::Object(object, _) => object.finish(self.budget)?,
        };
        let depth = open.depth + 1;
        if let Some(anchor) = open.anchor {
            // The anchor keeps a copy of its own.
            let cost = open.left_at_start.saturating_sub(self.budget.left());
            self.budget.charge(cost)?;
            let stored = Anchored::Node {
                value: value.clone(),
                cost,
                depth,
            };
            self.anchors.insert(anchor, stored);
        }
        self.close(value, depth)
    }

    /// Puts a finished node (nesting `depth` levels) where it goes: into the innermost open collection,
    /// or as the document.
    fn close(&mut self, value: Value, depth: usize) -> Result<(), String> {
        let Some(parent) = self.open.last_mut() else {
            self.root = Some(value);
            return Ok(());
        };
        parent.depth = parent.depth.max(depth);
        match &mut parent.node {
            Node::Array(array) => array.push(self.budget, value)?,
            Node::Object(object, key) => {
                let key = key.take().ok_or("invalid type: map, expected a string")?;
                object.push(self.budget, key, value)?;
            }
        }
        Ok(())
    }
}
