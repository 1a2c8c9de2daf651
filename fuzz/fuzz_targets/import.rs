//! Fuzz target: every import path (pi, Claude Code, Codex) over arbitrary bytes: never a
//! panic, a report that accounts for every line, output that opens, and an export of
//! the result (see tests/interop/import_property.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/interop/import_property.rs"]
mod import_property;

fuzz_target!(|data: &[u8]| import_property::check_import(data));
