//! Kong's services rule for the upstream TLS fields: `client_certificate`, `tls_verify`,
//! `tls_verify_depth` and `ca_certificates` are only for a service that speaks TLS to its upstream
//! (`https` or `tls`). Kong refuses them, even `false` or `[]`, on any other protocol. A config that had
//! them would export a document Kong does not load back.

use crate::schema::FieldError;
use serde_json::{Map, Value};

/// Each TLS field set on a non-TLS service: Kong's field message and one conditional message per field,
/// as its `conditional` entity checks give them.
pub(super) fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    const FIELDS: [&str; 4] = [
        "client_certificate",
        "tls_verify",
        "tls_verify_depth",
        "ca_certificates",
    ];
    if matches!(m["protocol"].as_str(), Some("https" | "tls")) {
        return Ok(());
    }
    let mut errors = Vec::new();
    for field in FIELDS.into_iter().filter(|f| !m[*f].is_null()) {
        errors.push(FieldError::new(field, "value must be null"));
        errors.push(FieldError::entity(
            "failed conditional validation given value of field 'protocol'",
        ));
    }
    errors.is_empty().then_some(()).ok_or(errors)
}

#[cfg(test)]
mod tests;
