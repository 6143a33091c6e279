//! [`FieldError`]: one schema error, and where Kong reports it once the record that raised it is
//! nested in a larger one: a record's custom validator on the record itself, its entity checks under
//! the record's `@entity`, a plugin's entity checks on the plugin's `@entity`.

/// One error on one field. `field` is a dotted path relative to the validated value; `@entity` marks an error
/// about the whole entity (a cross-field check), as Kong does.
#[derive(Debug, Clone)]
pub struct FieldError {
    /// Dotted path, e.g. `paths.1` or `config.second`; `@entity` for entity-level checks.
    pub field: String,
    /// Kong-style message, e.g. `required field missing`.
    pub message: String,
    /// Where an `@entity` error goes when nested.
    scope: Scope,
}

/// What an `@entity` error is about, which decides where nesting puts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// A field, or an entity error already placed.
    Field,
    /// The record as a whole, as Kong's `custom_validator` on a record field: nested, it is the record's.
    Record,
    /// One of the record's `entity_checks`: nested, it sits under the record's `@entity`.
    Check,
    /// One of a plugin's `entity_checks`, raised by its config's checks: it stays the plugin's `@entity`.
    Plugin,
}

/// Errors compare by place and message.
impl PartialEq for FieldError {
    fn eq(&self, other: &Self) -> bool {
        self.field == other.field && self.message == other.message
    }
}

impl Eq for FieldError {}

impl FieldError {
    /// An error on `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
            scope: Scope::Field,
        }
    }

    fn at_entity(message: impl Into<String>, scope: Scope) -> Self {
        FieldError {
            scope,
            ..FieldError::new("@entity", message)
        }
    }

    /// An error about the whole record (field `@entity`); nested, it becomes the record field's own
    /// error, as Kong reports a record's `custom_validator`.
    pub fn entity(message: impl Into<String>) -> Self {
        FieldError::at_entity(message, Scope::Record)
    }

    /// An error of one of the record's Kong `entity_checks`: `@entity`, and `record.@entity` nested.
    pub fn entity_check(message: impl Into<String>) -> Self {
        FieldError::at_entity(message, Scope::Check)
    }

    /// An error of one of a plugin's `entity_checks` (over `config.*` fields), raised from its config's
    /// checks: the plugin's `@entity` however it is nested.
    pub fn plugin_check(message: impl Into<String>) -> Self {
        FieldError::at_entity(message, Scope::Plugin)
    }

    /// The same error nested under `prefix` (`prefix.field`; an `@entity` error as its scope says).
    pub fn nested(self, prefix: &str) -> Self {
        let field = match (self.field.as_str(), self.scope) {
            ("@entity", Scope::Record) => prefix.to_string(),
            ("@entity", Scope::Plugin) => return self,
            _ => format!("{prefix}.{}", self.field),
        };
        FieldError {
            field,
            message: self.message,
            scope: Scope::Field,
        }
    }
}
