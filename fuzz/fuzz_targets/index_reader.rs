//! Fuzz target: the session index reader (`<file>.idx`, issue 15). Input: a byte of flags
//! (bit 0: reseal the index with its correct checksum, so inputs reach the records), the
//! index's length (u16 LE), the index, then the session file's bytes. Decoding and
//! loading never panic, never read outside the file, and load at most one entry per
//! three bytes of the file (the shortest line, `{}` and `\n`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [flags, lo, hi, rest @ ..] = data else {
        return;
    };
    let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(rest.len());
    let (index, file) = rest.split_at(len);
    if let Some(entries) = session::store::fuzz_index(index, file, flags & 1 == 1) {
        assert!(entries <= file.len() / 3, "{entries} entries from {} bytes", file.len());
    }
});
