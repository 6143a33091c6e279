//! The compression envelope of CP → DP frames, as kong/tools/gzip.lua does it (lua-ffi-zlib): a CP
//! gzips every `reconfigure` JSON (gzip wrapper, default level) before sending it as a binary WebSocket
//! frame, and a DP inflates every binary frame it receives, accepting a gzip or a zlib header (zlib's
//! automatic header detection). Only the first gzip member is read; bytes after it are ignored, as in Kong.
//!
//! Sluice adds a bound Kong does not have: Kong limits the compressed frame (`cluster_max_payload`, 16 MiB,
//! enforced by the WebSocket layer) but inflates without limit. [`inflate`] stops at `max_payload`
//! decompressed bytes and returns [`InflateError::TooLarge`], so a small frame cannot expand into
//! gigabytes of memory on a DP.

use std::io::{Read, Write};

use flate2::read::{GzDecoder, ZlibDecoder};
use flate2::write::GzEncoder;
use flate2::Compression;

/// Kong's default `cluster_max_payload`: 16 MiB.
pub const DEFAULT_MAX_PAYLOAD: usize = 16 * 1024 * 1024;

/// Why a frame could not be inflated.
#[derive(Debug, thiserror::Error)]
pub enum InflateError {
    #[error("payload inflates past the cluster_max_payload limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("payload is not valid gzip/zlib data: {0}")]
    Corrupt(std::io::Error),
}

/// Gzips `data` (Kong's `deflate_gzip`).
pub fn deflate(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(
        Vec::with_capacity(data.len() / 8 + 64),
        Compression::default(),
    );
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// Inflates a gzip or zlib payload (Kong's `inflate_gzip`), refusing to produce more than `max_payload`
/// bytes.
pub fn inflate(data: &[u8], max_payload: usize) -> Result<Vec<u8>, InflateError> {
    let reader: Box<dyn Read + '_> = if data.starts_with(&[0x1f, 0x8b]) {
        Box::new(GzDecoder::new(data))
    } else {
        Box::new(ZlibDecoder::new(data))
    };
    // Read one byte past the limit to tell "exactly at the limit" from "over it".
    let mut out = Vec::new();
    let limit = u64::try_from(max_payload)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(InflateError::Corrupt)?;
    if out.len() > max_payload {
        return Err(InflateError::TooLarge { limit: max_payload });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
