//! The declarative parser (JSON and YAML, Kong's formats 1.1 to 3.0) with every builtin plugin's schema:
//! any file must be refused with errors or loaded, never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static REGISTRY: LazyLock<sluice_plugins::Registry> =
    LazyLock::new(sluice_plugins::Registry::builtin);

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = sluice_model::declarative::parse(text, &*REGISTRY);
});
