//! The one error type of the upstream side: why a target could not be resolved, reached, or read in time.
//! The proxy turns it into its own error (and so into Kong's error response) in one place, the `From` impl
//! in its `error.rs`.

/// Why the upstream side gave up on a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamError {
    /// Connection refused or reset, or the TLS handshake failed (the proxy answers 502).
    Connect,
    /// Connect timeout (TCP and TLS handshake together), or the upstream was silent for longer than the read
    /// timeout between two reads of a body (504).
    Timeout,
    /// The host did not resolve (503).
    NameResolution,
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UpstreamError::Connect => "cannot connect to the upstream",
            UpstreamError::Timeout => "the upstream timed out",
            UpstreamError::NameResolution => "name resolution failed",
        })
    }
}

impl std::error::Error for UpstreamError {}
