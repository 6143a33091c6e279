//! Sluice's plugins: Kong's plugin names, configs, priorities, scoping precedence and responses.
//!
//! How the pieces fit:
//! - [`plugin::Plugin`] is the trait every plugin implements: one method per phase, each a no-op by default.
//! - [`registry::Registry`] knows every plugin this build implements: its config [`sluice_model::schema::Schema`]
//!   (used by the model to validate declarative configs) and its factory. It implements
//!   [`sluice_model::PluginRegistry`].
//! - [`Registry::compile`](registry::Registry::compile) turns a validated config into [`compiled::CompiledPlugins`]:
//!   plugin instances, the credential index, and one [`chain::PluginChain`] per route with Kong's scoping
//!   precedence already resolved, so nothing is looked up per request except the consumer override.
//! - [`ctx::RequestCtx`] is the per-request state the proxy fills and the plugins edit.
//! - One file per plugin under [`builtin`].
//!
//! State that must outlive a config reload (rate-limit counters, logging queues) lives in
//! [`state::PluginState`], owned by the registry. The logging plugins share [`logging`]: the record
//! serializer and the batching queue drained off the proxy workers. L4 stream sessions have one phase, `log`
//! at their end, for the plugins that register it ([`stream`]).

pub mod added_headers;
pub mod builtin;
pub mod chain;
pub mod compiled;
pub mod counters;
pub mod credentials;
pub mod ctx;
pub mod grpc_hooks;
pub mod header_numbers;
pub mod logging;
pub mod owner_id;
pub mod plugin;
pub mod protocols;
pub mod redis_client;
pub mod registry;
pub mod response;
pub mod state;
pub mod stream;
pub mod testing;
pub mod tracing;

pub use added_headers::AddedHeaders;
pub use chain::{AccessNow, PluginChain};
pub use compiled::CompiledPlugins;
pub use credentials::Credentials;
pub use ctx::{BodyLimit, CredentialRef, LogRecord, RequestCtx, Tries, TryRecord};
pub use header_numbers::header_number;
pub use plugin::{Flow, Plugin, Registered};
pub use registry::Registry;
pub use response::PluginResponse;
pub use stream::{SessionRecord, StreamChain};
