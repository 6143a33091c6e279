//! One request's session, with lua-resty-session 4's semantics: opening it from the request's cookies
//! (timeouts, MAC, decryption, the audience's entry, the `remember` cookie as a fallback), saving it under a
//! new session id, touching it (a new idling offset), refreshing it (save or touch as the timeouts near),
//! logging out, and the `Session-*` headers. The plugin's `access` opens and refreshes; its
//! `header_filter` saves a new login.

use super::codec::{Header, Keys, MAX_IDLING_OFFSET, MAX_ROLLING_OFFSET};
use super::cookies::{self, Attributes, Outgoing};
use http::HeaderMap;
use serde_json::{json, Value};

/// lua-resty-session's `touch_threshold` (Kong leaves its default): a refresh touches the cookie only when
/// it has been idle longer than this.
const TOUCH_THRESHOLD: u64 = 60;

/// Why a request has no session when it sent no session cookie.
pub(super) const NO_COOKIE: &str = "missing session cookie";

/// The timeouts of one cookie, in seconds (0 = none).
#[derive(Clone, Copy)]
pub(super) struct Timeouts {
    pub idling: f64,
    pub rolling: f64,
    pub absolute: f64,
}

/// What the plugin's config fixes about sessions.
pub(super) struct Settings {
    pub keys: Keys,
    pub attrs: Attributes,
    pub audience: String,
    pub cookie_name: String,
    pub timeouts: Timeouts,
    /// `remember`: the persistent cookie's name and timeouts (its idling timeout is always 0).
    pub remember: Option<(String, Timeouts)>,
    pub request_headers: Vec<String>,
    pub response_headers: Vec<String>,
}

/// What an opened or saved cookie says about itself.
#[derive(Clone)]
pub(super) struct Meta {
    pub header: Header,
    /// The whole base64url payload.
    payload: String,
    /// When it was opened or saved (the base of the `Session-*-Timeout` headers).
    timestamp: u64,
}

/// The session of one request.
#[derive(Clone)]
pub(super) struct Session {
    /// Every audience's `[data, audience, subject]` (one cookie may serve several audiences).
    entries: Vec<Value>,
    /// This plugin's audience's entry.
    index: usize,
    meta: Option<Meta>,
    remember_meta: Option<Meta>,
    /// The session existed and was opened for this audience.
    pub opened: bool,
    /// `Set-Cookie` lines for the response.
    pub out: Outgoing,
}

impl Meta {
    /// Seconds since creation, since the last renewal and since the last touch, at `timestamp`.
    pub fn elapsed(&self) -> (f64, f64, f64) {
        let h = &self.header;
        let absolute = self.timestamp as f64 - h.creation() as f64;
        let rolling = absolute - h.rolling_offset() as f64;
        (absolute, rolling, rolling - h.idling_offset() as f64)
    }
}

impl Settings {
    fn cookie(&self, remember: bool) -> (&str, Timeouts) {
        match &self.remember {
            Some((name, timeouts)) if remember => (name, *timeouts),
            _ => (&self.cookie_name, self.timeouts),
        }
    }

    /// A cookie (the session's or the `remember` one) opened and decrypted: its meta and its JSON.
    fn open_cookie(
        &self,
        headers: &HeaderMap,
        remember: bool,
        now: u64,
    ) -> Result<(Meta, Vec<u8>), &'static str> {
        let (name, t) = self.cookie(remember);
        let first = super::super::auth::cookie(headers, name).ok_or(NO_COOKIE)?;
        let header = Header::decode(first)?;
        let absolute = now as f64 - header.creation() as f64;
        if absolute > MAX_ROLLING_OFFSET as f64 {
            return Err("session lifetime exceeded");
        }
        if t.absolute != 0.0 && absolute > t.absolute {
            return Err("session absolute timeout exceeded");
        }
        let rolling = absolute - header.rolling_offset() as f64;
        if t.rolling != 0.0 && rolling > t.rolling {
            return Err("session rolling timeout exceeded");
        }
        if remember && header.idling_offset() != 0 {
            return Err("invalid session idling offset");
        }
        if t.idling != 0.0 && rolling - header.idling_offset() as f64 > t.idling {
            return Err("session idling timeout exceeded");
        }
        if !self.keys.verify(&header) {
            return Err("invalid session message authentication code");
        }
        let payload = cookies::payload(headers, name, first, header.data_size())?;
        let plain = self.keys.open(&header, &payload, remember)?;
        let meta = Meta {
            header,
            payload,
            timestamp: now,
        };
        Ok((meta, plain))
    }

    /// The request's session: opened from its cookies when they hold a valid one for this audience
    /// (`Err` says why not), else a new one (keeping other audiences' entries of a valid cookie).
    pub fn start(&self, headers: &HeaderMap, now: u64) -> (Session, Result<(), &'static str>) {
        let mut s = Session {
            entries: vec![json!([{}, self.audience, null])],
            index: 0,
            meta: None,
            remember_meta: None,
            opened: false,
            out: Outgoing::default(),
        };
        let opened = match self.open_cookie(headers, false, now) {
            Ok((meta, plain)) => {
                s.meta = Some(meta);
                return match s.take_entries(&plain, &self.audience) {
                    Ok(()) => (s, Ok(())),
                    Err(e) => (s, Err(e)),
                };
            }
            Err(e) => e,
        };
        if self.remember.is_none() {
            return (s, Err(opened));
        }
        let remembered = self
            .open_cookie(headers, true, now)
            .and_then(|(meta, plain)| {
                s.remember_meta = Some(meta);
                s.take_entries(&plain, &self.audience)
            });
        if remembered.is_err() {
            s.remember_meta = None;
            return (s, Err(opened));
        }
        let saved = self
            .save_cookie(&mut s, true, now)
            .and_then(|()| self.save_cookie(&mut s, false, now));
        (s, saved)
    }

    /// A new cookie (`remember` or the session's) for the session's entries, under a new session id; the
    /// creation time of the cookie it replaces is kept.
    fn save_cookie(&self, s: &mut Session, remember: bool, now: u64) -> Result<(), &'static str> {
        let (name, t) = self.cookie(remember);
        let meta = if remember { &s.remember_meta } else { &s.meta };
        let (creation, rolling_offset) = meta.as_ref().map_or((now, 0), |m| {
            let c = m.header.creation();
            (c, now.saturating_sub(c))
        });
        if rolling_offset > MAX_ROLLING_OFFSET {
            return Err("session maximum rolling offset exceeded");
        }
        let old_chunks = meta.as_ref().map_or(0, |m| {
            cookies::chunks(name, m.header.data_size()).unwrap_or(1)
        });
        let plain =
            serde_json::to_vec(&s.entries).map_err(|_| "unable to json encode session data")?;
        let (header, payload) = self.keys.seal(creation, rolling_offset, &plain, remember);
        let persistent = remember.then_some((creation, t.rolling.max(0.0) as u64));
        s.out.session(
            name,
            &header.encoded(),
            &payload,
            &self.attrs,
            persistent,
            old_chunks,
        )?;
        let meta = Some(Meta {
            header,
            payload,
            timestamp: now,
        });
        if remember {
            s.remember_meta = meta;
        } else {
            s.meta = meta;
            s.opened = true;
        }
        Ok(())
    }

    /// The `remember` cookie's meta, opened now if it was not yet (its creation time is kept on save).
    fn load_remember(&self, s: &mut Session, headers: &HeaderMap, now: u64) -> bool {
        if self.remember.is_none() {
            return false;
        }
        if s.remember_meta.is_none() {
            s.remember_meta = self.open_cookie(headers, true, now).ok().map(|(m, _)| m);
        }
        true
    }

    /// Saves the session (and the `remember` cookie when enabled).
    pub fn save(&self, s: &mut Session, headers: &HeaderMap, now: u64) -> Result<(), &'static str> {
        self.save_cookie(s, false, now)?;
        if self.load_remember(s, headers, now) {
            if let Err(e) = self.save_cookie(s, true, now) {
                tracing::warn!("[session] {e}");
            }
        }
        Ok(())
    }

    /// Renews an opened session as its rolling timeout nears (a save once 3/4 of it has passed), or
    /// touches it when it has been idle past the touch threshold.
    pub fn refresh(&self, s: &mut Session, now: u64) -> Result<(), &'static str> {
        let t = self.timeouts;
        let Some(meta) = &s.meta else {
            return Ok(());
        };
        let (_, rolling_elapsed, idling_elapsed) = meta.elapsed();
        if t.rolling > 0.0 && rolling_elapsed > (t.rolling * 0.75).ceil() {
            return self.save_cookie(s, false, now);
        }
        if t.idling > 0.0 && idling_elapsed > TOUCH_THRESHOLD as f64 {
            self.touch(s, now);
        }
        Ok(())
    }

    fn touch(&self, s: &mut Session, now: u64) {
        let Some(meta) = &mut s.meta else { return };
        let h = &meta.header;
        let idle = now.saturating_sub(h.creation() + h.rolling_offset());
        meta.header
            .set_idling(&self.keys, idle.min(MAX_IDLING_OFFSET));
        meta.timestamp = now;
        let (header, payload) = (meta.header.encoded(), &meta.payload);
        s.out
            .first(&self.cookie_name, &header, payload, &self.attrs);
    }

    /// Logs this audience out: the cookies are cleared when it was the only one, else the session is saved
    /// without its entry.
    pub fn logout(
        &self,
        s: &mut Session,
        headers: &HeaderMap,
        now: u64,
    ) -> Result<(), &'static str> {
        if s.entries.len() > 1 {
            s.entries.remove(s.index);
            s.index = 0;
            return self.save(s, headers, now);
        }
        let chunks = |name: &str, meta: &Option<Meta>| {
            meta.as_ref().map_or(1, |m| {
                cookies::chunks(name, m.header.data_size()).unwrap_or(1)
            })
        };
        s.out.clear(
            &self.cookie_name,
            chunks(&self.cookie_name, &s.meta),
            &self.attrs,
        );
        if self.load_remember(s, headers, now) && s.remember_meta.is_some() {
            let (name, _) = self.cookie(true);
            s.out
                .clear(name, chunks(name, &s.remember_meta), &self.attrs);
        }
        s.opened = false;
        Ok(())
    }
}

impl Session {
    /// Takes the decrypted entries; `Err` when none is this audience's (a new entry is added for it).
    fn take_entries(&mut self, plain: &[u8], audience: &str) -> Result<(), &'static str> {
        let mut entries: Vec<Value> =
            serde_json::from_slice(plain).map_err(|_| "unable to json decode session data")?;
        match entries.iter().position(|e| e[1].as_str() == Some(audience)) {
            Some(i) => {
                self.entries = entries;
                self.index = i;
                self.opened = true;
                Ok(())
            }
            None => {
                entries.push(self.entries[self.index].take());
                self.index = entries.len() - 1;
                self.entries = entries;
                Err("missing session audience")
            }
        }
    }

    /// The current cookie's meta (None for a session not yet saved).
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_ref()
    }

    /// This audience's `[data, audience, subject]`.
    pub fn entry(&self) -> &Value {
        &self.entries[self.index]
    }

    /// Kong's session data: the consumer id and the credential id.
    pub fn data(&self) -> Option<(&str, &str)> {
        let data = &self.entry()[0];
        Some((data[0].as_str()?, data[1].as_str()?))
    }

    /// Sets Kong's session data and the subject.
    pub fn set_data(&mut self, consumer: &str, credential: &str, subject: &str) {
        let entry = &mut self.entries[self.index];
        *entry = json!([[consumer, credential], entry[1].take(), subject]);
    }
}

#[cfg(test)]
mod tests;
