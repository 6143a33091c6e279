//! `basic-auth` (priority 1100): `Authorization: Basic` username and password identify the consumer.

use super::auth;
use crate::credentials::{ConsumerHeaders, Credentials, Identified};
use crate::ctx::{CredentialRef, RequestCtx};
use crate::plugin::{Flow, Plugin, Registered};
use crate::registry::{typed_config, BuildCtx, Builtin};
use base64::Engine;
use serde::Deserialize;
use sha1::{Digest, Sha1};
use sluice_model::schema::{Field, Schema};
use sluice_model::{BasicAuthCredential, Consumer};
use std::sync::Arc;
use subtle::ConstantTimeEq;

#[derive(Debug, Deserialize)]
struct Config {
    /// Consumer (id or username) used when no valid credentials are given, instead of a 401.
    anonymous: Option<String>,
    /// Remove `Authorization` before proxying.
    hide_credentials: bool,
    /// The realm of `WWW-Authenticate`.
    realm: String,
}

pub fn builtin() -> Builtin {
    let config = Schema::new(vec![
        ("anonymous", Field::string()),
        ("hide_credentials", Field::boolean().default(false)),
        ("realm", Field::string().default("service")),
    ]);
    Builtin::new("basic-auth", 1100, config, build).no_consumer()
}

fn build(_: &BuildCtx<'_>, entity: &sluice_model::Plugin) -> Result<Arc<dyn Plugin>, String> {
    let config: Config = typed_config(entity)?;
    Ok(register(BasicAuth { config }))
}

struct BasicAuth {
    config: Config,
}

/// A decoded `user:password` up to this long is decoded on the stack (this runs on every authenticated
/// request); a longer one into a vector.
const ON_STACK: usize = 256;

/// The decoded credentials of an `Authorization: Basic` header.
// The stack variant is the point (no allocation); a value lives in one frame and is never moved around.
#[allow(clippy::large_enum_variant)]
enum Decoded {
    Stack([u8; ON_STACK], usize),
    Heap(Vec<u8>),
}

impl Decoded {
    fn of(encoded: &str) -> Option<Decoded> {
        let engine = &base64::engine::general_purpose::STANDARD;
        let mut buf = [0u8; ON_STACK];
        match engine.decode_slice(encoded, &mut buf) {
            Ok(len) => Some(Decoded::Stack(buf, len)),
            Err(base64::DecodeSliceError::OutputSliceTooSmall) => {
                engine.decode(encoded).ok().map(Decoded::Heap)
            }
            Err(base64::DecodeSliceError::DecodeError(_)) => None,
        }
    }

    /// `(username, password)`, when the text is UTF-8 with a `:`.
    fn split(&self) -> Option<(&str, &str)> {
        let bytes = match self {
            Decoded::Stack(buf, len) => &buf[..*len],
            Decoded::Heap(v) => v.as_slice(),
        };
        std::str::from_utf8(bytes).ok()?.split_once(':')
    }
}

/// The header carrying Basic credentials (`Authorization`, else `Proxy-Authorization`), its whole value
/// and the encoded credentials in it, or None when absent or malformed.
fn credentials(headers: &http::HeaderMap) -> Option<(http::HeaderName, &str, &str)> {
    for name in [
        http::header::AUTHORIZATION,
        http::header::PROXY_AUTHORIZATION,
    ] {
        let Some(value) = headers.get(&name).and_then(|v| v.to_str().ok()) else {
            continue;
        };
        let (scheme, encoded) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            continue;
        }
        return Some((name, value, encoded.trim()));
    }
    None
}

/// The credential and consumer that `encoded` (base64 of `user:password`) names, when the password is the
/// credential's.
fn verify<'s>(
    store: &'s Credentials,
    encoded: &str,
) -> Option<(
    &'s Identified<BasicAuthCredential>,
    (&'s Consumer, &'s ConsumerHeaders),
)> {
    let decoded = Decoded::of(encoded)?;
    let (user, pass) = decoded.split()?;
    let found = store.basic(user)?;
    let (consumer, headers) = store.consumer_with_headers(&found.credential.consumer.id)?;
    let stored = found.credential.password.as_bytes();
    same_hash(&hash(pass, headers.id.as_bytes()), stored).then_some((found, (consumer, headers)))
}

/// Kong's stored form, `sha1(password .. consumer_id)` as lower-case hex, built on the stack (this runs on
/// every authenticated request). `consumer_id` is the id's hyphenated text.
fn hash(password: &str, consumer_id: &[u8]) -> [u8; 40] {
    let mut h = Sha1::new();
    h.update(password.as_bytes());
    h.update(consumer_id);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 40];
    for (i, b) in h.finalize().iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    out
}

/// Whether `stored` is `computed`, in time independent of where they differ: compared eight bytes at a
/// time (`subtle` per byte cost ~370 instructions for the forty).
fn same_hash(computed: &[u8; 40], stored: &[u8]) -> bool {
    if stored.len() != computed.len() {
        return false;
    }
    let word = |chunk: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        u64::from_le_bytes(w)
    };
    let mut same = subtle::Choice::from(1);
    for (a, b) in computed.chunks_exact(8).zip(stored.chunks_exact(8)) {
        same &= word(a).ct_eq(&word(b));
    }
    same.into()
}

impl BasicAuth {
    fn access(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let anonymous = self.config.anonymous.as_deref();
        if auth::already_authenticated(ctx, anonymous) {
            return Flow::Continue;
        }
        let deny = || auth::unauthorized("Unauthorized", "Basic", &self.config.realm);
        let Some((header, value, encoded)) = credentials(&ctx.request.headers) else {
            return auth::reject_or_anonymous(ctx, anonymous, deny());
        };
        let store = ctx.credentials;
        // The same header value verifies the same way on one snapshot: the hash is done once per value.
        let known = match store.basic_verified(value.as_bytes()) {
            Some(found) => store
                .consumer_with_headers(&found.credential.consumer.id)
                .map(|consumer| (found, consumer)),
            None => verify(store, encoded).inspect(|(found, _)| {
                store.remember_basic(value.as_bytes(), &found.credential.username)
            }),
        };
        let Some((found, consumer)) = known else {
            return auth::reject_or_anonymous(ctx, anonymous, deny());
        };
        let cred = &found.credential;
        if self.config.hide_credentials {
            ctx.request.headers.remove(header);
        }
        // Kong's basic-auth names the credential by its username in `X-Credential-Identifier`.
        let credential = CredentialRef {
            id: cred.id,
            plugin: "basic-auth",
        };
        auth::identify_known(ctx, consumer, credential, &found.identifier);
        Flow::Continue
    }
}

/// This plugin's phases: each handler is registered here, next to where it is implemented.
fn register(plugin: BasicAuth) -> Arc<dyn Plugin> {
    Registered::new("basic-auth", plugin)
        .access(BasicAuth::access)
        .build()
}
