//! The Admin API's own parsing of client input: form bodies typed by every entity kind's schema, and
//! request targets (query pairs, path unescaping). JSON bodies go through serde_json and the declarative
//! parser, fuzzed by `declarative`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    sluice_admin::fuzzing::form_body(text);
    sluice_admin::fuzzing::target(text);
});
