//! Fuzz target: parse_entry: no panic; what it accepts re-parses to an equal entry and
//! agrees with serde_json (see `check_parse_entry`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/common/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| properties::check_parse_entry(data));
