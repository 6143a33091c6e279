//! The handshake-signature methods every certificate verifier of this crate shares: whatever a verifier
//! decides about the certificate, the handshake signatures are checked with the provider's algorithms, so
//! the peer holds the certificate's key.

/// Expands to `verify_tls12_signature`, `verify_tls13_signature` and `supported_verify_schemes` inside an
/// impl of `ServerCertVerifier` or `ClientCertVerifier`; `$algorithms` is the `WebPkiSupportedAlgorithms`,
/// an expression of `$self`.
macro_rules! handshake_signatures {
    ($self:ident => $algorithms:expr) => {
        fn verify_tls12_signature(
            &$self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(message, cert, dss, $algorithms)
        }

        fn verify_tls13_signature(
            &$self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(message, cert, dss, $algorithms)
        }

        fn supported_verify_schemes(&$self) -> Vec<rustls::SignatureScheme> {
            $algorithms.supported_schemes()
        }
    };
}

pub(crate) use handshake_signatures;
