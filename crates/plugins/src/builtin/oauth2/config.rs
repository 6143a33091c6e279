//! The oauth2 plugin's config: Kong's schema (fields, defaults, the rule that one flow be enabled, scopes
//! required by `mandatory_scope`), and the refusal on a node without a database, where codes and tokens
//! cannot be kept (Kong fails there on the first token it tries to store, with the message used here).

use serde::Deserialize;
use serde_json::{Map, Value};
use sluice_model::schema::{Field, FieldError, Schema};

/// Kong's message when a DB-less node is asked to store a token.
pub const NO_DATABASE: &str = "cannot create 'oauth2_tokens' entities when not using a database";

/// The typed config.
#[derive(Debug, Deserialize)]
pub struct Config {
    /// A plain-HTTP request counts as HTTPS when a trusted proxy says it terminated TLS
    /// (`X-Forwarded-Proto: https` from a peer in `trusted_ips`).
    pub accept_http_if_already_terminated: bool,
    /// Scope names a client may ask for.
    pub scopes: Option<Vec<String>>,
    /// A client must ask for at least one scope.
    pub mandatory_scope: bool,
    /// What the application's backend proves itself with (`/oauth2/authorize`, password grant); generated
    /// when the plugin is created without one.
    pub provision_key: Option<String>,
    /// Seconds a token lasts; 0: forever (and no refresh token).
    pub token_expiration: f64,
    pub enable_authorization_code: bool,
    pub enable_implicit_grant: bool,
    pub enable_client_credentials: bool,
    pub enable_password_grant: bool,
    /// Remove the token from the request before proxying.
    pub hide_credentials: bool,
    /// Consumer (id or username) used when authentication fails, instead of a 401.
    pub anonymous: Option<String>,
    /// Tokens and codes are valid on every service whose plugin also has this set.
    pub global_credentials: bool,
    /// The header carrying the token (and a client's Basic credentials).
    pub auth_header_name: Option<String>,
    /// Seconds a token (and so its refresh token) is kept; 0: forever.
    pub refresh_token_ttl: f64,
    /// A refresh renews the token in place and keeps its refresh token.
    pub reuse_refresh_token: bool,
    /// `none`, `lax` (PKCE for public clients) or `strict` (for every client).
    pub pkce: Option<String>,
    /// The realm of `WWW-Authenticate`.
    pub realm: Option<String>,
}

/// Kong's schema; `database`: the node keeps codes and tokens in one (the plugin is refused otherwise).
pub fn schema(database: bool) -> Schema {
    let flag = || Field::boolean().required().default(false);
    Schema::new(vec![
        ("scopes", Field::array(Field::string())),
        ("mandatory_scope", flag()),
        ("provision_key", Field::string()),
        ("token_expiration", Field::number().required().default(7200)),
        ("enable_authorization_code", flag()),
        ("enable_implicit_grant", flag()),
        ("enable_client_credentials", flag()),
        ("enable_password_grant", flag()),
        ("hide_credentials", flag()),
        ("accept_http_if_already_terminated", flag()),
        ("anonymous", Field::string()),
        ("global_credentials", flag()),
        ("auth_header_name", Field::string().default("authorization")),
        (
            "refresh_token_ttl",
            Field::number()
                .required()
                .default(1209600)
                .between(0.0, 100000000.0),
        ),
        ("reuse_refresh_token", flag()),
        (
            "pkce",
            Field::string()
                .default("lax")
                .one_of(&["none", "lax", "strict"]),
        ),
        ("realm", Field::string()),
    ])
    .with_check(match database {
        true => check,
        false => refuse_without_database,
    })
}

fn refuse_without_database(_: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    Err(vec![FieldError::entity(NO_DATABASE)])
}

/// Kong's record checks: one flow enabled, and `scopes` given when `mandatory_scope` is true.
fn check(m: &Map<String, Value>) -> Result<(), Vec<FieldError>> {
    let on = |f: &str| m[f].as_bool() == Some(true);
    let flows = [
        "enable_authorization_code",
        "enable_implicit_grant",
        "enable_client_credentials",
        "enable_password_grant",
    ];
    let mut errors = Vec::new();
    if !flows.iter().any(|f| on(f)) {
        errors.push(FieldError::entity(format!(
            "at least one of these fields must be true: {}",
            flows.join(", ")
        )));
    }
    if on("mandatory_scope") && m["scopes"].is_null() {
        errors.push(FieldError::new("scopes", "required field missing"));
        errors.push(FieldError::entity(
            "failed conditional validation given value of field 'mandatory_scope'",
        ));
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors),
    }
}
