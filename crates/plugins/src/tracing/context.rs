//! The tracing context read from, or written to, tracing headers (Kong's extracted / injected context),
//! random ids, and the probability sampler.

/// What an extractor found in a request's headers, or what an injector writes. Ids are kept at Kong's
/// internal sizes (16-byte trace ids, 8-byte span ids: shorter ones are padded with leading zeros, longer
/// ones keep their last bytes); `trace_id_size` remembers the size the trace id arrived with, so an
/// injector that allows it writes it back at that size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: Option<[u8; 16]>,
    /// Bytes of the trace id as received (0 when none).
    pub trace_id_size: usize,
    /// The sender's span id (or, for formats that share a span between client and server — B3, Jaeger —
    /// the shared span's id).
    pub span_id: Option<[u8; 8]>,
    /// The parent of the shared span (B3, Jaeger).
    pub parent_id: Option<[u8; 8]>,
    /// The format shares one span between both sides of a request (B3, Jaeger).
    pub reuse_span_id: bool,
    pub should_sample: Option<bool>,
    /// B3's debug flag (`x-b3-flags` as received, or `1` for `d` in the single header).
    pub flags: Option<String>,
    /// W3C's trace flags byte.
    pub w3c_flags: Option<u8>,
    /// B3 came as the single `b3` header.
    pub single_header: bool,
    /// Jaeger's `uberctx-*` or OT's `ot-baggage-*` items (names without the prefix, values unescaped).
    pub baggage: Vec<(String, String)>,
}

impl TraceContext {
    /// Nothing was found (Kong then tries the next extractor).
    pub fn is_empty(&self) -> bool {
        *self == TraceContext::default()
    }

    /// Sets the trace id from bytes of any length, remembering that length.
    pub fn set_trace_id(&mut self, bytes: &[u8]) {
        self.trace_id_size = bytes.len();
        self.trace_id = Some(fit(bytes));
    }
}

/// `bytes` at size `N`: the last `N` bytes, or left-padded with zeros (Kong's `to_id_size`).
pub fn fit<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    if bytes.len() >= N {
        out.copy_from_slice(&bytes[bytes.len() - N..]);
    } else {
        out[N - bytes.len()..].copy_from_slice(bytes);
    }
    out
}

/// A random, non-zero trace id.
pub fn new_trace_id() -> [u8; 16] {
    loop {
        let id: [u8; 16] = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

/// A random, non-zero span id.
pub fn new_span_id() -> [u8; 8] {
    loop {
        let id: [u8; 8] = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}

/// Kong's trace-id-based probability sampler: the first 8 bytes of the trace id, read as a native-endian
/// integer (LuaJIT's FFI cast on x86-64 and arm64: little-endian), below `rate · 2^64`. Rates ≥ 1 always
/// sample, ≤ 0 never, so one trace gets the same decision on every Kong or Sluice node.
pub fn sample(trace_id: &[u8; 16], rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    if rate <= 0.0 {
        return false;
    }
    let head = u64::from_le_bytes(fit::<8>(&trace_id[..8]));
    (head as f64) < rate * 18_446_744_073_709_551_616.0
}
