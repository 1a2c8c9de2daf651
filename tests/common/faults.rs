//! The one fault-injecting file of the tests: a real file behind a [`FaultPlan`] that
//! counts every write and sync the store makes, fails the ones it is told to (an errno,
//! a short write, an error after a full write; once or for good), caps how much one
//! write call accepts, and can hold write calls so that appends queue up behind them.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use session::{JsonlOptions, OpenReport, SessionFile, Store};

/// What a faulty write call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fail with this errno before writing anything.
    Errno(i32),
    /// Write half of the buffer and return that count; the next call fails with EIO.
    ShortThenEio,
    /// Write the whole buffer, then report EIO anyway.
    EioAfterFullWrite,
}

/// Whether the fault happens once or the device stays broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// Only the scripted call(s) fail; later calls would succeed.
    TransientOnce,
    /// Every call from the fault on fails (EINTR: a burst of [`EINTR_BURST`] calls).
    Persistent,
}

/// How many calls in a row a "persistent" EINTR interrupts. A truly endless EINTR
/// would make every writer (this library's and std's `write_all` alike) spin forever.
pub const EINTR_BURST: u64 = 100;

/// Which write calls wait until [`FaultPlan::release`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hold {
    #[default]
    Nothing,
    /// Every write call.
    Every,
    /// The write call with this 1-based number.
    Call(u64),
}

/// What the plan says and what it saw.
#[derive(Default, Debug)]
pub struct Script {
    /// Write calls seen so far, faulty or not.
    pub writes: u64,
    /// Bytes that reached the file.
    pub bytes_written: u64,
    /// Fail from this 1-based write call on.
    pub fault: Option<(u64, Fault, FaultMode)>,
    /// The number of the call that returned a non-EINTR error, if any.
    pub failed_at: Option<u64>,
    /// The largest count one call accepts (a real file takes everything at once; a
    /// smaller cap makes big lines take several calls).
    pub max_chunk: Option<usize>,
    /// Sync calls seen so far.
    pub syncs: u64,
    /// Fail the sync call with this 1-based number with EIO.
    pub fail_sync: Option<u64>,
    /// Which write calls wait for [`FaultPlan::release`].
    pub hold: Hold,
    /// Write calls waiting right now.
    pub blocked: u64,
}

/// A [`Script`] shared between a test and the store's file.
#[derive(Default, Debug)]
pub struct FaultPlan {
    script: Mutex<Script>,
    changed: Condvar,
}

impl FaultPlan {
    /// A plan that fails nothing and only counts.
    pub fn new() -> Arc<FaultPlan> {
        Arc::new(FaultPlan::default())
    }

    /// A plan that starts from `script`.
    pub fn with(script: Script) -> Arc<FaultPlan> {
        Arc::new(FaultPlan {
            script: Mutex::new(script),
            changed: Condvar::new(),
        })
    }

    /// The script, to read what was seen or to change what comes next.
    pub fn script(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap()
    }

    pub fn writes(&self) -> u64 {
        self.script().writes
    }

    pub fn syncs(&self) -> u64 {
        self.script().syncs
    }

    /// Fail write call `n` (1-based) once with `fault`.
    pub fn fail_write(&self, n: u64, fault: Fault) {
        self.script().fault = Some((n, fault, FaultMode::TransientOnce));
    }

    /// Fail sync call `n` (1-based) with EIO.
    pub fn fail_sync(&self, n: u64) {
        self.script().fail_sync = Some(n);
    }

    /// Make every write call wait until [`FaultPlan::release`].
    pub fn hold(&self) {
        self.script().hold = Hold::Every;
    }

    /// Let every held write call through, and hold no more.
    pub fn release(&self) {
        self.script().hold = Hold::Nothing;
        self.changed.notify_all();
    }

    /// Waits until a write call is held.
    pub fn wait_blocked(&self) {
        let mut s = self.script();
        while s.blocked == 0 {
            s = self.changed.wait(s).unwrap();
        }
    }

    /// Counts write call `call` and, if the plan holds it, waits for the release.
    fn enter_write(&self) -> MutexGuard<'_, Script> {
        let mut s = self.script();
        s.writes += 1;
        let call = s.writes;
        let held = |s: &Script| match s.hold {
            Hold::Nothing => false,
            Hold::Every => true,
            Hold::Call(n) => n == call,
        };
        if held(&s) {
            s.blocked += 1;
            self.changed.notify_all();
            while held(&s) {
                s = self.changed.wait(s).unwrap();
            }
            s.blocked -= 1;
        }
        s
    }
}

/// A real file behind a [`FaultPlan`].
pub struct FaultyFile {
    pub file: File,
    pub plan: Arc<FaultPlan>,
}

impl FaultyFile {
    /// A wrapper for [`Store::open_jsonl_with_io`].
    pub fn wrap(plan: &Arc<FaultPlan>) -> impl FnOnce(File) -> Box<dyn SessionFile> + use<> {
        let plan = Arc::clone(plan);
        move |file| Box::new(FaultyFile { file, plan })
    }
}

/// One real write, counted.
fn write_through(file: &mut File, s: &mut Script, buf: &[u8]) -> io::Result<usize> {
    let n = io::Write::write(file, buf)?;
    s.bytes_written += n as u64;
    Ok(n)
}

impl SessionFile for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut guard = self.plan.enter_write();
        let s = &mut *guard;
        let file = &mut self.file;
        let call = s.writes;
        let buf = &buf[..buf.len().min(s.max_chunk.unwrap_or(usize::MAX))];
        let Some((at, fault, mode)) = s.fault else {
            return write_through(file, s, buf);
        };
        let eio = || io::Error::from_raw_os_error(libc::EIO);
        let result = match (fault, mode) {
            _ if call < at => write_through(file, s, buf),
            (Fault::Errno(libc::EINTR), FaultMode::TransientOnce) if call == at => {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            (Fault::Errno(libc::EINTR), FaultMode::Persistent) if call < at + EINTR_BURST => {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            (Fault::Errno(libc::EINTR), _) => write_through(file, s, buf),
            (Fault::Errno(errno), FaultMode::TransientOnce) if call == at => {
                Err(io::Error::from_raw_os_error(errno))
            }
            (Fault::Errno(errno), FaultMode::Persistent) => {
                Err(io::Error::from_raw_os_error(errno))
            }
            (Fault::ShortThenEio, _) if call == at => {
                return write_through(file, s, &buf[..buf.len() / 2]);
            }
            (Fault::ShortThenEio, FaultMode::TransientOnce) if call == at + 1 => Err(eio()),
            (Fault::EioAfterFullWrite, _) if call == at => {
                write_through(file, s, buf)?;
                Err(eio())
            }
            (_, FaultMode::Persistent) => Err(eio()),
            (_, FaultMode::TransientOnce) => write_through(file, s, buf),
        };
        if result.is_err() && s.failed_at.is_none() {
            s.failed_at = Some(call);
        }
        result
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.plan.script();
        s.syncs += 1;
        if s.fail_sync == Some(s.syncs) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        drop(s);
        self.file.sync_data()
    }
}

/// Opens `path` with every write going through `plan`.
pub fn open_faulty(path: &Path, plan: &Arc<FaultPlan>) -> (Store, OpenReport) {
    open_faulty_with(path, plan, &JsonlOptions::default())
}

/// [`open_faulty`] with options.
pub fn open_faulty_with(
    path: &Path,
    plan: &Arc<FaultPlan>,
    options: &JsonlOptions,
) -> (Store, OpenReport) {
    Store::open_jsonl_with_options_and_io(path, options, FaultyFile::wrap(plan)).expect("open")
}
