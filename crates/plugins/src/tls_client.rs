//! The TLS client config of the plugins that open connections of their own (ldap-auth's `ldaps` and
//! `start_tls`, the Redis counters' `ssl`): the system's CAs when verifying (Kong's
//! `lua_ssl_trusted_certificate = system`), any certificate otherwise, and no ALPN (neither LDAP nor
//! Redis negotiates a protocol).

use sluice_tls::rustls::ClientConfig;
use std::sync::Arc;

/// The config for `verify` (the plugin's `verify_ldap_host` / `ssl_verify`).
pub fn without_alpn(verify: bool) -> Result<Arc<ClientConfig>, String> {
    let spec = sluice_tls::UpstreamTls {
        verify,
        ..Default::default()
    };
    let mut config = (*sluice_tls::client_config(&spec)?).clone();
    config.alpn_protocols.clear();
    Ok(Arc::new(config))
}
