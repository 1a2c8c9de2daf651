//! A file's fingerprint as the index records it: the hash of its first block and of
//! the block before the indexed end, read again on every search to tell a file that
//! only grew from one that changed. Used by the update (to decide what to read) and by
//! the reader thread (to record the new end).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::io_error;
use crate::error::{Error, IoOp};

/// The first and the last indexed block of a file, whose hashes tell a replaced or
/// rewritten file from a grown one.
pub(super) const BLOCK: u64 = 4096;

/// The hash of `len` bytes (at most [`BLOCK`]) of `file` from `start`, and the length.
pub(super) fn hash_block(
    file: &File,
    start: u64,
    len: u64,
    path: &Path,
) -> Result<(i64, i64), Error> {
    let len = len.min(BLOCK) as usize;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| io_error(IoOp::Read, path, &e))?;
    Ok((xxhash_rust::xxh64::xxh64(&buf, 0) as i64, len as i64))
}

/// The hash of the last indexed block: the [`BLOCK`] bytes (or fewer) before `offset`.
pub(super) fn hash_tail(file: &File, offset: u64, path: &Path) -> Result<i64, Error> {
    let len = offset.min(BLOCK);
    Ok(hash_block(file, offset - len, len, path)?.0)
}
