//! Fuzz target: build_context over arbitrary entry arrays (compactions, tool calls and
//! results, extension messages) and every leaf: never a panic; the documented error or
//! an output satisfying docs/contract.md §7.3; the store form agrees (see `check_build_context`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/common/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| properties::check_build_context(data));
