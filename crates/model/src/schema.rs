//! A small declarative schema language, in the spirit of Kong's schema DSL.
//!
//! Entities and plugin configs describe their fields once (type, required, default, rules); [`Schema::validate`]
//! then checks a JSON value against it, collecting *every* error with its dotted field path (`paths.1`,
//! `config.redis.port`, 1-based array indexes as Kong prints them), and returns the value normalized: defaults
//! filled in, unset optional fields as `null`, fields in schema order. Validation never panics on any input.

use serde_json::{Map, Value};

mod entity_checks;
mod field_error;
mod infer;
mod kong_json;

pub use entity_checks::{EntityCheck, Then, When};
pub use field_error::FieldError;
#[cfg(test)]
mod tests;
mod validate;

/// A cross-field check run after every field of a record validated cleanly; sees the normalized record.
pub type RecordCheck = fn(&Map<String, Value>) -> Result<(), Vec<FieldError>>;

/// Defaults that depend on other fields, as Kong's subschemas give them (a grpc route's `strip_path`):
/// called with the fields as given and the record as normalized, before the record checks.
pub type Subschema = fn(&Map<String, Value>, &mut Map<String, Value>);

/// A custom value check; the message becomes the field's error.
pub type ValueCheck = fn(&Value) -> Result<(), String>;

/// The fields of a record (an entity or a plugin's `config`) and its cross-field checks.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Field names and definitions, in output order.
    pub fields: Vec<(&'static str, Field)>,
    /// Checks over the whole record, run only when every field is valid.
    pub checks: Vec<RecordCheck>,
    /// Kong's entity checkers declared as data, run with [`Schema::checks`] and shown in `GET /schemas`.
    pub entity_checks: Vec<EntityCheck>,
    /// Kong's subschema defaults, applied once the fields are normalized.
    pub subschema: Option<Subschema>,
}

/// The type of a field.
#[derive(Debug, Clone)]
pub enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    /// An ordered list.
    Array(Box<Field>),
    /// A list without duplicates (duplicates are removed, first one kept).
    Set(Box<Field>),
    /// String keys to values of one field type.
    Map(Box<Field>),
    /// A nested record.
    Record(Schema),
    /// Any JSON value, unchecked.
    Any,
}

/// A rule on a field's value, checked after its type.
#[derive(Debug, Clone)]
pub enum Rule {
    /// The value (a string) must be one of these.
    OneOf(&'static [&'static str]),
    /// The value (an integer) must be one of these.
    OneOfInt(&'static [i64]),
    /// The number must lie within these inclusive bounds.
    Between(f64, f64),
    /// The number must be strictly greater.
    Gt(f64),
    /// A string's length (or an array's or map's number of elements) must be at least this. A string
    /// field without it must not be empty, as in Kong.
    LenMin(usize),
    /// A string's length must be at most this.
    LenMax(usize),
    /// A custom check.
    Custom(ValueCheck),
    /// Each key of a map is a string meeting this field's rules (Kong's `keys`), checked first.
    Keys(Box<Field>),
}

/// One field: its kind, whether it is required, its default and its rules.
#[derive(Debug, Clone)]
pub struct Field {
    pub kind: Kind,
    pub required: bool,
    pub default: Option<Value>,
    pub rules: Vec<Rule>,
    /// Left out of the normalized record when not given (instead of `null`): a field of a newer Kong than
    /// the one the schemas follow, so that a config not using it exports nothing the older Kong refuses.
    pub only_when_set: bool,
}

impl Field {
    fn of(kind: Kind) -> Self {
        Field {
            kind,
            required: false,
            default: None,
            rules: Vec::new(),
            only_when_set: false,
        }
    }
    pub fn string() -> Self {
        Field::of(Kind::String)
    }
    pub fn integer() -> Self {
        Field::of(Kind::Integer)
    }
    pub fn number() -> Self {
        Field::of(Kind::Number)
    }
    pub fn boolean() -> Self {
        Field::of(Kind::Boolean)
    }
    pub fn any() -> Self {
        Field::of(Kind::Any)
    }
    pub fn array(element: Field) -> Self {
        Field::of(Kind::Array(Box::new(element)))
    }
    pub fn set(element: Field) -> Self {
        Field::of(Kind::Set(Box::new(element)))
    }
    /// String keys mapping to `value`s.
    pub fn map(value: Field) -> Self {
        Field::of(Kind::Map(Box::new(value)))
    }
    /// A nested record; when absent it is filled from its fields' defaults.
    pub fn record(schema: Schema) -> Self {
        Field::of(Kind::Record(schema))
    }
    /// Absent or null is an error (`required field missing`) unless a default exists.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// Used when the field is absent or null.
    pub fn default(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self
    }
    pub fn one_of(mut self, values: &'static [&'static str]) -> Self {
        self.rules.push(Rule::OneOf(values));
        self
    }
    /// See [`Field::only_when_set`](Field#structfield.only_when_set); such a field has no default here,
    /// its user applies Kong's.
    pub fn only_when_set(mut self) -> Self {
        self.only_when_set = true;
        self
    }
    /// Kong's `one_of` on an integer field.
    pub fn one_of_int(mut self, values: &'static [i64]) -> Self {
        self.rules.push(Rule::OneOfInt(values));
        self
    }
    pub fn between(mut self, min: f64, max: f64) -> Self {
        self.rules.push(Rule::Between(min, max));
        self
    }
    pub fn gt(mut self, min: f64) -> Self {
        self.rules.push(Rule::Gt(min));
        self
    }
    /// Kong's `len_min`. A string without one takes no `""` (Kong's implicit `len_min = 1`);
    /// `len_min(0)` lets it be empty.
    pub fn len_min(mut self, n: usize) -> Self {
        self.rules.push(Rule::LenMin(n));
        self
    }
    pub fn len_max(mut self, n: usize) -> Self {
        self.rules.push(Rule::LenMax(n));
        self
    }
    /// Kong's `keys` of a map: each key must meet `key`'s rules (a string's implicit `len_min` too).
    pub fn keys(mut self, key: Field) -> Self {
        self.rules.push(Rule::Keys(Box::new(key)));
        self
    }
    pub fn check(mut self, f: ValueCheck) -> Self {
        self.rules.push(Rule::Custom(f));
        self
    }
}

impl Schema {
    /// A schema with these fields and no record checks.
    pub fn new(fields: Vec<(&'static str, Field)>) -> Self {
        Schema {
            fields,
            checks: Vec::new(),
            entity_checks: Vec::new(),
            subschema: None,
        }
    }

    /// Sets the defaults a subschema (chosen by another field) gives.
    pub fn with_subschema(mut self, subschema: Subschema) -> Self {
        self.subschema = Some(subschema);
        self
    }

    /// Adds a cross-field check.
    pub fn with_check(mut self, check: RecordCheck) -> Self {
        self.checks.push(check);
        self
    }

    /// Adds Kong's entity checkers.
    pub fn with_entity_checks(mut self, checks: impl IntoIterator<Item = EntityCheck>) -> Self {
        self.entity_checks.extend(checks);
        self
    }

    /// Validates `input` (an object, or null for "all defaults") and returns it normalized, or every error found.
    pub fn validate(&self, input: &Value) -> Result<Value, Vec<FieldError>> {
        self.validate_with(input, &[])
    }

    /// [`Schema::validate`] of `input` with the `overrides` fields set, as if they had been inserted
    /// into it (an entity's id and resolved references), without copying or changing the input.
    pub fn validate_with(
        &self,
        input: &Value,
        overrides: &[(&str, Value)],
    ) -> Result<Value, Vec<FieldError>> {
        let mut errors = Vec::new();
        let root = validate::Path::Root;
        let out = validate::record_with(self, input, overrides, &root, &mut errors);
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }
}
