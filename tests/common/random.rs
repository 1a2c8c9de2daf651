//! Pseudo-random text for the secrets tests: a fixed sequence, so that keys are built
//! at run time and no source file holds a string that looks like a live credential.
//! One copy, shared by the library's unit tests (src/secrets/tests.rs) and the
//! integration tests (tests/common/secrets.rs), both through `#[path]`.

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const UPPER32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub const HEX: &[u8] = b"0123456789abcdef";
pub const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const URLSAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `len` characters of `alphabet`, the same for the same `seed`.
pub fn random(alphabet: &[u8], len: usize, seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(alphabet[(state % alphabet.len() as u64) as usize])
        })
        .collect()
}
