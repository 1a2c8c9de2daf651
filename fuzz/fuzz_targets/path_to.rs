//! Fuzz target: path_to over arbitrary entry arrays: a root-to-leaf chain whose parent links
//! hold, or the documented error (see `check_path_to`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/common/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| properties::check_path_to(data));
