//! What a finished handshake agreed on, named as nginx names it (`$ssl_protocol`, `$ssl_cipher`), so log
//! records read the same as Kong's `request.tls`.

use rustls::{CipherSuite, CommonState, ProtocolVersion};

/// The protocol version and cipher suite of a TLS connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// `TLSv1.2` or `TLSv1.3`.
    pub version: &'static str,
    /// The OpenSSL name of the cipher suite, e.g. `TLS_AES_128_GCM_SHA256` or `ECDHE-ECDSA-AES128-GCM-SHA256`.
    pub cipher: &'static str,
}

impl Negotiated {
    /// Read once per connection, right after the handshake (None before it completes).
    pub fn of(conn: &CommonState) -> Option<Negotiated> {
        let version = match conn.protocol_version()? {
            ProtocolVersion::TLSv1_3 => "TLSv1.3",
            ProtocolVersion::TLSv1_2 => "TLSv1.2",
            _ => "unknown",
        };
        let suite = conn.negotiated_cipher_suite()?.suite();
        Some(Negotiated {
            version,
            cipher: openssl_name(suite),
        })
    }
}

/// OpenSSL's name for the suites rustls offers; the IANA name for any other.
fn openssl_name(suite: CipherSuite) -> &'static str {
    match suite {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
            "ECDHE-ECDSA-CHACHA20-POLY1305"
        }
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => other.as_str().unwrap_or("unknown"),
    }
}
