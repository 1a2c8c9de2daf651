//! Helpers for the fuzz targets and the tests that forge an index.

use std::path::Path;

use super::index::Base;
use super::index::format::*;

/// The checksum the index seals itself with (for tests that forge an index).
#[doc(hidden)]
pub fn index_checksum(bytes: &[u8]) -> u64 {
    Hash64::of(bytes)
}

/// Seals a forged index: its page checksums, their checksum and the header's seal, as
/// the writer computes them (so that a fuzzer reaches the records).
#[doc(hidden)]
pub fn reseal_index(index: &mut [u8]) {
    if index.len() < 2 * PAGE || !index.len().is_multiple_of(PAGE) {
        return;
    }
    let pages = u64_at(index, header_field(PAGES_FIELD));
    let Some(pages) = pages.and_then(|p| usize::try_from(p).ok()) else {
        return;
    };
    let sums_at = pages.saturating_add(1).saturating_mul(PAGE);
    if pages == 0 || sums_at.saturating_add(pages.saturating_mul(8)) > index.len() {
        return;
    }
    let sums: Vec<u8> = index[PAGE..sums_at]
        .chunks_exact(PAGE)
        .flat_map(|page| Hash64::of(page).to_le_bytes())
        .collect();
    index[sums_at..sums_at + sums.len()].copy_from_slice(&sums);
    let sums_hash = Hash64::of(&sums);
    let at = header_field(SUMS_HASH_FIELD);
    index[at..at + 8].copy_from_slice(&sums_hash.to_le_bytes());
    let seal = Hash64::of(&index[..HEADER - 8]);
    index[HEADER - 8..HEADER].copy_from_slice(&seal.to_le_bytes());
}

/// Fuzzing entry: opens `index` (first resealed when `reseal`) over the file bytes
/// `file`, without the identity checks, then reads every entry, finds every id and
/// walks the navigation. Returns the number of entries when the index was accepted.
#[doc(hidden)]
pub fn fuzz_index(index: &[u8], file: &[u8], reseal: bool) -> Option<usize> {
    let mut index = index.to_vec();
    if reseal {
        reseal_index(&mut index);
    }
    let len = index.len() as u64;
    let base = Base::open(
        Box::new(file.to_vec()),
        Box::new(index),
        len,
        None,
        Path::new("fuzz"),
    )
    .ok()??;
    let log = super::log::Log::with_base(base);
    Some(log.exercise())
}
