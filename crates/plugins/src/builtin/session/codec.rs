//! The session cookie's binary header and its cryptography, as lua-resty-session 4 lays them out: an 82-byte
//! header (type, flags, session id, creation time, rolling offset, payload size, GCM tag, idling offset,
//! MAC), base64url-encoded and followed by the base64url AES-256-GCM ciphertext of the session's JSON.
//!
//! Keys come from the plugin's `secret`: the initial key material is its SHA-256; each session id (a fresh
//! random 32-byte nonce per save) gets its own AES-256-GCM key and IV (44 bytes of HKDF-SHA256 with info
//! `encryption:<id>`, or PBKDF2-HMAC-SHA256 with 10,000 rounds for the persistent `remember` cookie) and its
//! own HMAC-SHA256 key (HKDF, info `authentication:<id>`) for the header's 16-byte MAC. Used on every request
//! that carries a session cookie (opening) and by every save, touch and logout.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::{aead, digest, hkdf, hmac, pbkdf2};
use std::num::NonZeroU32;
use subtle::ConstantTimeEq;

pub(super) const SID_SIZE: usize = 32;
/// Type through MAC: 1 + 2 + 32 + 5 + 4 + 3 + 16 + 3 + 16 bytes.
pub(super) const HEADER_SIZE: usize = 82;
/// The header as base64url without padding.
pub(super) const HEADER_ENCODED_SIZE: usize = 110;
/// What the GCM tag authenticates as associated data: type through payload size.
const AAD_SIZE: usize = 47;
/// What a touch keeps: type through the tag.
const TOUCH_SIZE: usize = 63;
/// What the MAC covers: type through the idling offset.
const MAC_COVERS: usize = 66;
const COOKIE_TYPE: u8 = 1;
/// lua-resty-session's flag for server-side storage (a `cookie` session must not have it) and for a
/// deflated payload (this build never writes one, so it cannot read one either).
const FLAG_STORAGE: u16 = 0x0001;
const FLAG_DEFLATE: u16 = 0x0010;
pub(super) const MAX_ROLLING_OFFSET: u64 = u32::MAX as u64;
pub(super) const MAX_IDLING_OFFSET: u64 = (1 << 24) - 1;
/// PBKDF2 rounds for the `remember` cookie (lua-resty-session's default `remember_safety`, `Medium`).
const REMEMBER_ROUNDS: u32 = 10_000;

/// The decoded header fields of a session cookie.
#[derive(Clone)]
pub(super) struct Header {
    pub bytes: [u8; HEADER_SIZE],
}

fn le(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |n, b| (n << 8) | u64::from(*b))
}

fn put_le(out: &mut [u8], mut n: u64) {
    for b in out {
        *b = n as u8;
        n >>= 8;
    }
}

impl Header {
    pub fn flags(&self) -> u16 {
        le(&self.bytes[1..3]) as u16
    }
    pub fn sid(&self) -> &[u8] {
        &self.bytes[3..35]
    }
    pub fn creation(&self) -> u64 {
        le(&self.bytes[35..40])
    }
    pub fn rolling_offset(&self) -> u64 {
        le(&self.bytes[40..44])
    }
    /// The size of the base64url payload.
    pub fn data_size(&self) -> usize {
        le(&self.bytes[44..47]) as usize
    }
    fn tag(&self) -> &[u8] {
        &self.bytes[47..63]
    }
    pub fn idling_offset(&self) -> u64 {
        le(&self.bytes[63..66])
    }
    fn mac(&self) -> &[u8] {
        &self.bytes[66..]
    }

    /// The header as the cookie carries it.
    pub fn encoded(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.bytes)
    }

    /// The first [`HEADER_ENCODED_SIZE`] characters of a cookie value, decoded and checked for its type and
    /// flags (no MAC check: see [`Keys::verify`]).
    pub fn decode(cookie: &str) -> Result<Header, &'static str> {
        let encoded = cookie
            .get(..HEADER_ENCODED_SIZE)
            .ok_or("invalid session header")?;
        let raw = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| "unable to base64url decode session header")?;
        let bytes: [u8; HEADER_SIZE] = raw.try_into().map_err(|_| "invalid session header")?;
        let header = Header { bytes };
        if header.bytes[0] != COOKIE_TYPE {
            return Err("invalid session cookie type");
        }
        if header.flags() & (FLAG_STORAGE | FLAG_DEFLATE) != 0 {
            return Err("invalid session flags");
        }
        Ok(header)
    }
}

/// The keys of one `secret`.
pub(super) struct Keys {
    ikm: [u8; 32],
    prk: hkdf::Prk,
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

impl Keys {
    pub fn new(secret: &str) -> Keys {
        let mut ikm = [0; 32];
        ikm.copy_from_slice(digest::digest(&digest::SHA256, secret.as_bytes()).as_ref());
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(&ikm);
        Keys { ikm, prk }
    }

    fn expand(&self, usage: &[u8], sid: &[u8], out: &mut [u8]) {
        let info = [usage, b":", sid];
        // Lengths of 32 and 44 bytes are far below HKDF-SHA256's limit, so neither step can fail.
        if let Ok(okm) = self.prk.expand(&info, Len(out.len())) {
            let _ = okm.fill(out);
        }
    }

    /// AES-256-GCM key and IV of a session id.
    fn cipher(&self, sid: &[u8], remember: bool) -> (aead::LessSafeKey, [u8; 12]) {
        let mut bytes = [0u8; 44];
        if remember {
            let salt = [b"encryption:".as_slice(), sid].concat();
            let rounds = NonZeroU32::new(REMEMBER_ROUNDS).unwrap_or(NonZeroU32::MIN);
            pbkdf2::derive(
                pbkdf2::PBKDF2_HMAC_SHA256,
                rounds,
                &salt,
                &self.ikm,
                &mut bytes,
            );
        } else {
            self.expand(b"encryption", sid, &mut bytes);
        }
        let key = aead::UnboundKey::new(&aead::AES_256_GCM, &bytes[..32])
            .unwrap_or_else(|_| unreachable!("a 32-byte AES-256 key"));
        let mut iv = [0; 12];
        iv.copy_from_slice(&bytes[32..]);
        (aead::LessSafeKey::new(key), iv)
    }

    fn mac(&self, sid: &[u8], covered: &[u8]) -> [u8; 16] {
        let mut key = [0; 32];
        self.expand(b"authentication", sid, &mut key);
        let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), covered);
        let mut out = [0; 16];
        out.copy_from_slice(&tag.as_ref()[..16]);
        out
    }

    /// The header's MAC is this secret's (compared in constant time).
    pub fn verify(&self, header: &Header) -> bool {
        let expected = self.mac(header.sid(), &header.bytes[..MAC_COVERS]);
        bool::from(expected.ct_eq(header.mac()))
    }

    /// A new header and the base64url ciphertext of `plaintext`, under a fresh session id.
    pub fn seal(
        &self,
        creation: u64,
        rolling_offset: u64,
        plaintext: &[u8],
        remember: bool,
    ) -> (Header, String) {
        let mut bytes = [0u8; HEADER_SIZE];
        bytes[0] = COOKIE_TYPE;
        let sid: [u8; SID_SIZE] = rand::random();
        bytes[3..35].copy_from_slice(&sid);
        put_le(&mut bytes[35..40], creation);
        put_le(&mut bytes[40..44], rolling_offset);
        put_le(&mut bytes[44..47], base64_size(plaintext.len()) as u64);
        let (key, iv) = self.cipher(&sid, remember);
        let mut data = plaintext.to_vec();
        let nonce = aead::Nonce::assume_unique_for_key(iv);
        let tag = key
            .seal_in_place_separate_tag(nonce, aead::Aad::from(&bytes[..AAD_SIZE]), &mut data)
            .unwrap_or_else(|_| unreachable!("session data within AES-GCM's limits"));
        bytes[47..63].copy_from_slice(tag.as_ref());
        let mut header = Header { bytes };
        header.set_idling(self, 0);
        (header, URL_SAFE_NO_PAD.encode(data))
    }

    /// The plaintext of a payload whose header passed [`Keys::verify`].
    pub fn open(
        &self,
        header: &Header,
        payload: &str,
        remember: bool,
    ) -> Result<Vec<u8>, &'static str> {
        if payload.len() != header.data_size() {
            return Err("invalid session payload");
        }
        let mut data = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| "unable to base64url decode session data")?;
        data.extend_from_slice(header.tag());
        let (key, iv) = self.cipher(header.sid(), remember);
        let nonce = aead::Nonce::assume_unique_for_key(iv);
        let plain = key
            .open_in_place(nonce, aead::Aad::from(&header.bytes[..AAD_SIZE]), &mut data)
            .map_err(|_| "unable to decrypt session data")?;
        Ok(plain.to_vec())
    }
}

impl Header {
    /// Sets the idling offset and signs the header again (what a touch does).
    pub fn set_idling(&mut self, keys: &Keys, idling_offset: u64) {
        put_le(&mut self.bytes[TOUCH_SIZE..MAC_COVERS], idling_offset);
        let mac = keys.mac(self.sid(), &self.bytes[..MAC_COVERS]);
        self.bytes[MAC_COVERS..].copy_from_slice(&mac);
    }
}

/// The size of `n` bytes in base64url without padding.
pub(super) fn base64_size(n: usize) -> usize {
    (4 * n).div_ceil(3)
}

#[cfg(test)]
mod tests;
