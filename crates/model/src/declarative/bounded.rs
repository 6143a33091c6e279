//! What a parsed declarative document may cost: a memory budget proportional to its text, and a depth
//! limit, shared by the JSON ([`super::json`]) and YAML ([`super::yaml`]) readers.
//!
//! A parsed document costs far more than its text: every node is an 80-byte `serde_json::Value` (with
//! `preserve_order`), so a 17 MB body of `[0,0,...]` took 646 MB, and a YAML alias can repeat a whole
//! subtree. The readers build arrays and objects through [`Array`] and [`Object`], which charge the
//! [`Budget`] for what they allocate as they go and trim their spare capacity when they close, so the
//! parse stops with an error once the document would outgrow the budget, and memory and time stay
//! proportional to the text.

use serde_json::{Map, Value};
use std::cell::Cell;
use std::mem::size_of;

/// The deepest nesting of arrays and objects accepted. Kong's documents nest about ten levels
/// (services → routes → plugins → config → a record field); serde_json and serde_yaml stop at 128.
pub const MAX_DEPTH: usize = 100;

/// How many bytes of parsed document a byte of text may become. Kong documents take 10 to 14 times their
/// text (`sluice-perf gen-config`'s configs of 10,000 routes, JSON and YAML), and the densest, a long
/// list of one-field consumers (`- username: c1`), about 15 at its peak; a text made only to be
/// expensive (`[0,0,...]` takes 40, `[[0],[0],...]` 100, aliases without end) is refused once it
/// reaches this.
pub const BYTES_PER_TEXT_BYTE: usize = 32;

/// What every document may take whatever its size, so small documents are never refused for their shape.
const FLOOR: usize = 4 << 20;

/// Why a document was refused for its size.
pub const TOO_MUCH_MEMORY: &str =
    "the document takes too much memory for its size (many tiny values or repeated aliases)";

/// Why a document was refused for its depth.
pub fn too_deep() -> String {
    format!("arrays and objects nested deeper than {MAX_DEPTH}")
}

/// The bytes a document may still allocate.
pub struct Budget(Cell<usize>);

impl Budget {
    /// The budget of a document parsed from `text`: [`BYTES_PER_TEXT_BYTE`] per byte, and a floor.
    pub fn of(text: &str) -> Budget {
        Budget::new(
            text.len()
                .saturating_mul(BYTES_PER_TEXT_BYTE)
                .saturating_add(FLOOR),
        )
    }

    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Budget {
        Budget(Cell::new(bytes))
    }

    /// Takes `bytes` from the budget, or fails with [`TOO_MUCH_MEMORY`] when fewer are left.
    pub fn charge(&self, bytes: usize) -> Result<(), &'static str> {
        let left = self.0.get().checked_sub(bytes).ok_or(TOO_MUCH_MEMORY)?;
        self.0.set(left);
        Ok(())
    }

    /// Gives back `bytes` that were freed.
    fn refund(&self, bytes: usize) {
        self.0.set(self.0.get().saturating_add(bytes));
    }

    /// What is left.
    pub fn left(&self) -> usize {
        self.0.get()
    }

    /// A string of the document (a value or a key), charged with what the allocator takes for it.
    pub fn string(&self, text: &str) -> Result<String, &'static str> {
        self.charge_string(text)?;
        Ok(text.to_owned())
    }

    /// Charges for a string of the document made elsewhere.
    pub fn charge_string(&self, text: &str) -> Result<(), &'static str> {
        self.charge(heap(text.len()))
    }
}

/// What a heap block of `len` bytes takes from the allocator (glibc: 8 bytes of header, 16-byte steps,
/// 32 at least).
fn heap(len: usize) -> usize {
    match len {
        0 => 0,
        _ => (len + 8).div_ceil(16).max(2) * 16,
    }
}

/// Makes room for one more item in `items`, charging the slots first: a vector doubles (4 slots at
/// least), so the budget stops the growth before the allocation, not after.
fn grow<T>(items: &mut Vec<T>, budget: &Budget) -> Result<(), &'static str> {
    if items.len() == items.capacity() {
        let more = items.capacity().max(4);
        budget.charge(more * size_of::<T>())?;
        items.reserve_exact(more);
    }
    Ok(())
}

/// An array being read.
#[derive(Default)]
pub struct Array(Vec<Value>);

impl Array {
    /// Appends `item`, charging the slots the array allocates to hold it.
    pub fn push(&mut self, budget: &Budget, item: Value) -> Result<(), &'static str> {
        grow(&mut self.0, budget)?;
        self.0.push(item);
        Ok(())
    }

    /// The finished array, its spare slots freed.
    pub fn finish(mut self, budget: &Budget) -> Value {
        budget.refund((self.0.capacity() - self.0.len()) * size_of::<Value>());
        self.0.shrink_to_fit();
        Value::Array(self.0)
    }
}

/// An object being read: its entries in order, made into a map of their exact size when it closes.
#[derive(Default)]
pub struct Object(Vec<(String, Value)>);

/// One entry of a finished object's `IndexMap`: hash, key, value, and its slot in the index table.
const ENTRY: usize = size_of::<u64>() + size_of::<String>() + size_of::<Value>() + 9;

impl Object {
    /// Appends an entry (a later one with the same key replaces the value, as `Map::insert` does).
    pub fn push(&mut self, budget: &Budget, key: String, value: Value) -> Result<(), &'static str> {
        grow(&mut self.0, budget)?;
        self.0.push((key, value));
        Ok(())
    }

    /// The finished object, in a map allocated for its entries.
    pub fn finish(self, budget: &Budget) -> Result<Value, &'static str> {
        budget.charge(self.0.len() * ENTRY)?;
        let mut map = Map::with_capacity(self.0.len());
        budget.refund(self.0.capacity() * size_of::<(String, Value)>());
        for (key, value) in self.0 {
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests;
