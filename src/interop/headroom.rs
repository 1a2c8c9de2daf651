//! Memory an import keeps free: its tables grow by fallible reservation and stop,
//! with an error, while working room is left.

use std::sync::Arc;

use crate::error::{Error, IoFailure, IoOp};

/// Working room an import keeps free beside its tables: what mapping a line takes
/// (its JSON values, its entry's text and checks) is allocated the ordinary way,
/// which aborts when it fails, so the tables stop growing, with an error, while this
/// much more could still be had.
const HEADROOM: usize = 8 << 20;

/// Fails unless `bytes` more could be allocated (the probe is released at once).
pub(crate) fn check_headroom(bytes: usize, what: &str) -> Result<(), Error> {
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|_| out_of_memory(what))?;
    std::hint::black_box(&probe);
    Ok(())
}

/// Room for one more item in `vec`, by fallible reservation; when that grows it past
/// a mebibyte, the working room beside it is checked too (smaller tables never use up
/// memory, and probing at each of their growths would cost more than they do).
pub(crate) fn reserve_one<T>(vec: &mut Vec<T>, what: &str) -> Result<(), Error> {
    if vec.len() < vec.capacity() {
        return Ok(());
    }
    vec.try_reserve(1).map_err(|_| out_of_memory(what))?;
    grown_to(vec.capacity().saturating_mul(size_of::<T>()), what)
}

/// After a table grew to `bytes`: the working room check, for a large table.
pub(crate) fn grown_to(bytes: usize, what: &str) -> Result<(), Error> {
    match bytes >= 1 << 20 {
        true => check_headroom(HEADROOM, what),
        false => Ok(()),
    }
}

/// An allocation that failed: an error, never an abort of the host.
pub(crate) fn out_of_memory(what: &str) -> Error {
    let e = std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        format!("out of memory for {what}"),
    );
    Error::Io(Arc::new(IoFailure::new(
        IoOp::Read,
        "the import source",
        &e,
    )))
}
