//! Fuzz target: the session index writer (issue 21). A writer over arbitrary session
//! bytes writes `<file>.idx` at open and close (twice, the second time opening through
//! it); an open with the index then answers exactly as one with `{"index":false}`
//! (see `check_index_writer`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/common/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| properties::check_index_writer(data));
