//! Strict JSON text → a document, under the [`Budget`] and depth limit of [`super::bounded`].
//!
//! serde_json parses; [`Node`] builds the same `Value` that `serde_json::Value::deserialize` would, but
//! through [`Array`] and [`Object`], so the parse stops where the document outgrows its budget.

use super::bounded::{too_deep, Array, Budget, Object, MAX_DEPTH};
use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// The document in `text`. Refusals for size or depth are `Category::Data` errors; malformed JSON is
/// `Syntax` or `Eof`.
pub fn read(text: &str, budget: &Budget) -> Result<Value, serde_json::Error> {
    let mut json = serde_json::Deserializer::from_str(text);
    let doc = Node { budget, depth: 0 }.deserialize(&mut json)?;
    json.end()?;
    Ok(doc)
}

/// One node (and its children) of the document.
#[derive(Clone, Copy)]
struct Node<'a> {
    budget: &'a Budget,
    /// Arrays and objects around this node.
    depth: usize,
}

impl<'a> Node<'a> {
    fn child<E: Error>(&self) -> Result<Node<'a>, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(too_deep()));
        }
        Ok(Node {
            budget: self.budget,
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The same `Value` for each input as `serde_json::Value`'s own visitor gives.
impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(self.budget.string(value).map_err(E::custom)?))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let child = self.child()?;
        let mut array = Array::default();
        while let Some(item) = seq.next_element_seed(child)? {
            array.push(self.budget, item).map_err(A::Error::custom)?;
        }
        Ok(array.finish(self.budget))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let child = self.child()?;
        let mut object = Object::default();
        while let Some(key) = map.next_key_seed(Key(self.budget))? {
            let value = map.next_value_seed(child)?;
            object
                .push(self.budget, key, value)
                .map_err(A::Error::custom)?;
        }
        object.finish(self.budget).map_err(A::Error::custom)
    }
}

/// An object's key, charged to the budget.
struct Key<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string key")
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<String, E> {
        self.0.string(value).map_err(E::custom)
    }
}
