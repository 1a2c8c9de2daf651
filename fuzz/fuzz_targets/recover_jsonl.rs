//! Fuzz target: recover_jsonl over whole-file bytes: agrees with an independent oracle, and
//! a prefix never commits what the whole file does not (see `check_recover`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/common/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| properties::check_recover(data));
