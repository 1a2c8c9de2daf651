//! The writer's advisory lock: one function takes it, one guard releases it.
//!
//! A JSONL writer and a repair take the same exclusive `flock` lock. The lock lives on
//! the open file, which a child forked meanwhile (by this thread or, between its fork
//! and exec, by another thread's `Command`) shares: closing only this process's
//! descriptors would leave the file locked until that child execs or exits, and a
//! writer opening right after would get `locked`. So the guard unlocks explicitly when
//! it is dropped. It unlocks only in the process that took the lock: a forked child
//! that drops its inherited copy would otherwise release the parent's lock.

use std::fs::File;
use std::path::Path;

use super::file::io_error;
use crate::error::{Error, IoOp};

/// Holds the writer's lock on a file until dropped.
#[derive(Debug)]
pub(crate) struct LockGuard {
    /// A descriptor of the same open file as the one locked (the lock is the open
    /// file's, so unlocking through it releases the lock).
    file: File,
    /// The process that took the lock: only it unlocks.
    owner: u32,
}

/// Takes the exclusive advisory lock of a writer on `file` (opened from `path`, named
/// in errors) without waiting: [`Error::Locked`] when another open file holds it.
pub(crate) fn lock(file: &File, path: &Path) -> Result<LockGuard, Error> {
    let file = file
        .try_clone()
        .map_err(|e| io_error(IoOp::Lock, path, &e))?;
    match file.try_lock() {
        Ok(()) => Ok(LockGuard {
            file,
            owner: std::process::id(),
        }),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
            path: path.display().to_string(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io_error(IoOp::Lock, path, &e)),
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.owner == std::process::id() {
            // Nothing to report from a drop: an unlock that fails leaves the lock to be
            // released when the descriptors close.
            let _ = self.file.unlock();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locked_elsewhere(path: &Path) -> bool {
        let other = File::open(path).unwrap();
        let held = matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock));
        if !held {
            other.unlock().unwrap();
        }
        held
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("libsession-lock-{name}-{}", std::process::id()));
        File::create(&path).unwrap();
        path
    }

    #[test]
    fn dropping_the_guard_unlocks_even_while_another_descriptor_stays_open() {
        let path = scratch("drop");
        let file = File::open(&path).unwrap();
        // A descriptor of the same open file, as a forked child would hold.
        let child_copy = file.try_clone().unwrap();
        let guard = lock(&file, &path).unwrap();
        assert!(locked_elsewhere(&path));
        drop(guard);
        assert!(!locked_elsewhere(&path), "the guard unlocks explicitly");
        drop((file, child_copy));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_guard_dropped_outside_the_owner_process_keeps_the_lock() {
        let path = scratch("owner");
        let file = File::open(&path).unwrap();
        let mut guard = lock(&file, &path).unwrap();
        // As in a forked child: the guard's copy was taken by another process.
        guard.owner = std::process::id().wrapping_add(1);
        let kept = guard.file.try_clone().unwrap();
        drop(guard);
        assert!(locked_elsewhere(&path), "only the owner unlocks");
        drop((file, kept));
        assert!(
            !locked_elsewhere(&path),
            "closing every descriptor releases it"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_second_lock_on_another_open_file_fails_with_locked() {
        let path = scratch("second");
        let (a, b) = (File::open(&path).unwrap(), File::open(&path).unwrap());
        let _guard = lock(&a, &path).unwrap();
        assert!(matches!(lock(&b, &path), Err(Error::Locked { .. })));
        std::fs::remove_file(&path).unwrap();
    }
}
