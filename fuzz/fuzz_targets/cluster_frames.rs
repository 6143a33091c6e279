//! What a hybrid-mode peer sends: a control plane's gzipped frames (decoded with a 1 MiB inflate bound), a
//! data plane's `basic_info`, its other frames and its ping payload, and the config hash of any JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_cluster::frames::cp::CpMessage;
use sluice_cluster::frames::dp::{parse_ping, BasicInfo, DpMessage};

fuzz_target!(|data: &[u8]| {
    let _ = CpMessage::decode(data, 1 << 20);
    let _ = BasicInfo::decode(data);
    let _ = DpMessage::decode(data);
    let _ = parse_ping(data);
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = sluice_cluster::hash::config_hashes(&value);
    }
});
