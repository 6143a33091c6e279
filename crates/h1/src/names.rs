//! Header names as they arrive, remembered per thread: a client or an upstream writes the same few names in
//! the same spelling on every message, and `HeaderName::from_bytes` lower-cases and matches each one anew
//! (~150 instructions a name, callgrind). A name seen before on this thread, byte for byte, costs a
//! comparison with the ones kept instead.
//!
//! At most [`KEPT`] spellings are kept, the first ones seen; a peer that sends ever new names fills the list
//! once and then only pays for the comparisons.

use http::header::{HeaderName, InvalidHeaderName};
use std::cell::RefCell;

/// Spellings kept per thread.
const KEPT: usize = 32;
/// Longer names are not kept (the standard ones are shorter).
const LONGEST: usize = 40;

thread_local! {
    static SEEN: RefCell<Vec<(Box<[u8]>, HeaderName)>> = const { RefCell::new(Vec::new()) };
}

/// The header name `raw` (any case), as `HeaderName::from_bytes` makes it.
#[inline]
pub(crate) fn header_name(raw: &[u8]) -> Result<HeaderName, InvalidHeaderName> {
    let found = SEEN
        .try_with(|seen| {
            let seen = seen.borrow();
            seen.iter()
                .find(|(spelling, _)| **spelling == *raw)
                .map(|(_, name)| name.clone())
        })
        .ok()
        .flatten();
    match found {
        Some(name) => Ok(name),
        None => first_seen(raw),
    }
}

/// A name not kept: parsed, and kept when there is room.
#[cold]
fn first_seen(raw: &[u8]) -> Result<HeaderName, InvalidHeaderName> {
    let name = HeaderName::from_bytes(raw)?;
    if raw.len() <= LONGEST {
        let _ = SEEN.try_with(|seen| {
            let mut seen = seen.borrow_mut();
            if seen.len() < KEPT {
                seen.push((raw.into(), name.clone()));
            }
        });
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_the_same_kept_or_parsed_and_the_list_is_bounded() {
        for raw in ["Host", "host", "X-Custom-Thing", "Host", "x-custom-thing"] {
            let want = HeaderName::from_bytes(raw.as_bytes()).unwrap();
            assert_eq!(header_name(raw.as_bytes()).unwrap(), want, "{raw}");
            assert_eq!(header_name(raw.as_bytes()).unwrap(), want, "{raw} again");
        }
        let kept =
            |raw: &str| SEEN.with(|s| s.borrow().iter().any(|(k, _)| **k == *raw.as_bytes()));
        assert!(kept("Host") && kept("x-custom-thing"));
        assert!(header_name(b"Bad Name").is_err() && !kept("Bad Name"));
        for i in 0..2 * KEPT {
            header_name(format!("x-{i}").as_bytes()).unwrap();
        }
        assert_eq!(SEEN.with(|s| s.borrow().len()), KEPT);
        assert_eq!(header_name(b"X-999").unwrap(), "x-999");
    }
}
