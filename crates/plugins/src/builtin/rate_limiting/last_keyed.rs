//! This worker's last Redis arguments of `policy: redis` ([`Keyed`]), kept for the next request with
//! the same instance, identifier and second: a client's requests within one second have the same keys,
//! limits and times to live, so the keys' text and the arguments are written once, not per request.

use super::redis::Keyed;
use super::Rules;
use std::cell::RefCell;
use std::sync::Arc;

/// What the kept arguments were made for, and a scratch buffer for the next request's identifier.
#[derive(Default)]
struct Last {
    /// The instance's rules: held, so no other instance's can take their address while they are kept.
    rules: Option<Arc<Rules>>,
    now: u64,
    identifier: Vec<u8>,
    scratch: Vec<u8>,
    keyed: Option<Keyed>,
}

thread_local! {
    static LAST: RefCell<Last> = RefCell::default();
}

/// The arguments for the instance of `rules`, the identifier `write_id` writes and the second `now`:
/// this worker's last ones when they were made for the same, else `make`'s (then kept).
pub(super) fn keyed(
    rules: &Arc<Rules>,
    now: u64,
    write_id: impl FnOnce(&mut Vec<u8>),
    make: impl FnOnce() -> Keyed,
) -> Keyed {
    LAST.with_borrow_mut(|last| {
        last.scratch.clear();
        write_id(&mut last.scratch);
        let same = last.now == now
            && last.rules.as_ref().is_some_and(|r| Arc::ptr_eq(r, rules))
            && last.scratch == last.identifier;
        if let Some(keyed) = last.keyed.as_ref().filter(|_| same) {
            return keyed.clone();
        }
        let keyed = make();
        std::mem::swap(&mut last.identifier, &mut last.scratch);
        (last.now, last.rules, last.keyed) = (now, Some(rules.clone()), Some(keyed.clone()));
        keyed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Arc<Rules> {
        Arc::new(Rules {
            limit_by: super::super::config::LimitBy::Ip,
            config: serde_json::from_value(serde_json::json!({
                "limit_by": "ip", "hide_client_headers": false, "error_code": 429,
                "error_message": "API rate limit exceeded", "policy": "redis",
                "fault_tolerant": true, "sync_rate": -1,
            }))
            .unwrap(),
            limits: Vec::new(),
            status: http::StatusCode::TOO_MANY_REQUESTS,
        })
    }

    /// The arguments `keyed` gives, and whether it made them.
    fn ask(rules: &Arc<Rules>, now: u64, id: &[u8]) -> (Keyed, bool) {
        let mut made = false;
        let make = || {
            made = true;
            Keyed::new(&[(id, now, 1)])
        };
        let keyed = keyed(rules, now, |out| out.extend_from_slice(id), make);
        (keyed, made)
    }

    #[test]
    fn kept_only_for_the_same_instance_identifier_and_second() {
        let (a, b) = (rules(), rules());
        assert!(ask(&a, 10, b"1.2.3.4").1);
        let (kept, made) = ask(&a, 10, b"1.2.3.4");
        assert!(!made);
        assert_eq!(kept, Keyed::new(&[(b"1.2.3.4", 10, 1)]));
        assert!(ask(&a, 11, b"1.2.3.4").1, "a new second");
        assert!(ask(&a, 11, b"1.2.3.5").1, "another identifier");
        assert!(ask(&b, 11, b"1.2.3.5").1, "another instance");
        assert!(!ask(&b, 11, b"1.2.3.5").1);
    }
}
