//! A `ListIo` that counts the bytes `list_sessions` reads from each file: the listing
//! tests check that a large file is read at its head and tail only, and the navigation
//! benchmark (benches/navbench, which includes this file) prints the bytes a listing
//! reads.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use session::list::{DirItem, ListFile, ListIo, RealListIo};

/// The real file system, counting what is read.
#[derive(Default)]
pub struct CountingListIo {
    real: RealListIo,
    read: Rc<RefCell<HashMap<PathBuf, u64>>>,
}

impl CountingListIo {
    /// Bytes read from `path` so far; `None` when nothing was ever read from it.
    pub fn read_from(&self, path: &Path) -> Option<u64> {
        self.read.borrow().get(path).copied()
    }

    /// Bytes read from every file so far.
    pub fn total(&self) -> u64 {
        self.read.borrow().values().sum()
    }
}

struct CountingFile {
    inner: Box<dyn ListFile>,
    path: PathBuf,
    read: Rc<RefCell<HashMap<PathBuf, u64>>>,
}

impl ListFile for CountingFile {
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn modified_ms(&self) -> Option<i64> {
        self.inner.modified_ms()
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read_at(offset, buf)?;
        *self.read.borrow_mut().entry(self.path.clone()).or_default() += n as u64;
        Ok(n)
    }
}

impl ListIo for CountingListIo {
    fn read_dir(&mut self, dir: &Path) -> io::Result<Vec<DirItem>> {
        self.real.read_dir(dir)
    }
    fn open(&mut self, path: &Path) -> io::Result<Box<dyn ListFile>> {
        Ok(Box::new(CountingFile {
            inner: self.real.open(path)?,
            path: path.to_path_buf(),
            read: Rc::clone(&self.read),
        }))
    }
}
