//! Issue 10, the store's items: what an adversarial file, process or build tree did to
//! the library. Each test failed before its fix.
//!
//! Tests that must change the process (its working directory, its memory limit) run
//! themselves again as a child process: the child part does nothing unless the
//! `HARDENING_CHILD` variable names it.

use crate::common;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use session::{
    Error, IoOp, JsonlOptions, MAX_LINE_BYTES, RealRepairIo, RepairIo, SessionFile, State, Store,
    recover_jsonl, repair_jsonl, repair_jsonl_with_io,
};

/// The entries of the file at `path`, opened read-only; panics unless it is ready.
fn reopened_ids(path: &Path) -> Vec<String> {
    let (store, report) = Store::open_jsonl_with(path, &read_only()).unwrap();
    assert_eq!(report.state, State::Ready, "{:?}", report.warnings);
    let entries = store.entries().unwrap();
    ids(&entries).into_iter().map(str::to_owned).collect()
}

/// A user entry whose canonical line (without `\n`) is exactly `len` bytes.
fn entry_of_length(id: &str, parent: &str, len: usize) -> String {
    let empty = user(id, Some(parent), "");
    let canonical = session::parse_entry(&empty).unwrap().json().len();
    let entry = user(id, Some(parent), &"x".repeat(len - canonical));
    assert_eq!(session::parse_entry(&entry).unwrap().json().len(), len);
    entry
}

// Acknowledged appends never weld onto a whitespace tail.

#[test]
fn a_max_size_append_onto_a_one_byte_whitespace_tail_reopens_ready() {
    let dir = temp_dir("ws-tail");
    let path = dir.join("s.jsonl");
    let mut bytes = lines(&[U1]).into_bytes();
    bytes.push(b' ');
    write_file(&path, &bytes);
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    let big = entry_of_length("big", "u-1", MAX_LINE_BYTES);
    store.append(&big).unwrap();
    drop(store);
    assert_eq!(reopened_ids(&path), ["u-1", "big"]);
    // The blank byte became a blank committed line of its own: line 2.
    let file = read_file(&path);
    assert_eq!(&file[bytes.len() - 1..bytes.len() + 1], b" \n");
    assert_eq!(file.len(), bytes.len() + 1 + MAX_LINE_BYTES + 1);
    assert_eq!(repair_jsonl(&path).unwrap().truncated_bytes, 0);
}

#[test]
fn appends_onto_a_whitespace_tail_longer_than_a_line_keep_the_file_readable() {
    let dir = temp_dir("ws-tail-big");
    let path = dir.join("s.jsonl");
    let mut bytes = lines(&[U1]).into_bytes();
    bytes.extend(b" \t\r".iter().cycle().take(MAX_LINE_BYTES + 7));
    write_file(&path, &bytes);
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    store.append(user("a", Some("u-1"), "one")).unwrap();
    store.append(user("b", Some("a"), "two")).unwrap();
    drop(store);
    assert_eq!(reopened_ids(&path), ["u-1", "a", "b"]);
    let recovered = recover_jsonl(&read_file(&path)).unwrap();
    assert_eq!(recovered.entries.len(), 3);
    assert!(recovered.warnings.is_empty());
    // A writer reopening it appends after the last line, with no extra newline.
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append(user("c", Some("b"), "three")).unwrap();
    drop(store);
    let file = read_file(&path);
    let c = format!("{}\n", user("c", Some("b"), "three"));
    assert!(file.ends_with(format!("\n{c}").as_bytes()));
    assert!(!file.ends_with(format!("\n\n{c}").as_bytes()));
}

// No allocation sized from the file, holes skipped, sparse backups.

const GIB: u64 = 1 << 30;

/// A file with three committed entries and a sparse tail: its apparent size is `size`.
fn sparse_session(name: &str, size: u64) -> (TempFile, u64) {
    let path = temp_dir(name).file_path("s.jsonl");
    let committed = lines(&[U1, A_READ, R_READ]);
    write_file(&path, committed.as_bytes());
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    (path, committed.len() as u64)
}

/// Bytes the file really occupies on disk.
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// Opens (writer, read-only, salvage) and repairs a file whose committed part is three
/// entries and whose tail is a hole of `size` bytes.
fn open_and_repair_sparse(path: &Path, size: u64, committed: u64) {
    for options in [JsonlOptions::default(), read_only(), salvage()] {
        let (store, report) = Store::open_jsonl_with(path, &options).unwrap();
        assert_eq!(report.state, State::NeedsRepair, "{options:?}");
        assert_eq!(store.len().unwrap(), 3);
    }
    let report = repair_jsonl(path).unwrap();
    assert_eq!(report.truncated_bytes, size - committed);
    assert_eq!(report.entries, 3);
    let backup = report.backup.unwrap();
    assert_eq!(std::fs::metadata(&backup).unwrap().len(), size - committed);
    assert!(allocated(&backup) < 1 << 20, "the backup is sparse");
    assert_eq!(std::fs::metadata(path).unwrap().len(), committed);
    assert_eq!(reopened_ids(path), ["u-1", "a-read", "r-read"]);
}

#[test]
fn a_100_gib_sparse_tail_opens_and_repairs_without_reserving_its_size() {
    let (path, committed) = sparse_session("sparse-100g", 100 * GIB);
    open_and_repair_sparse(&path, 100 * GIB, committed);
}

#[test]
fn a_hole_between_committed_lines_reads_as_the_nuls_it_holds() {
    let dir = temp_dir("sparse-middle");
    let path = dir.join("s.jsonl");
    let file = File::create(&path).unwrap();
    let head = lines(&[U1]);
    let hole = 4 * GIB;
    io::Write::write_all(&mut &file, head.as_bytes()).unwrap();
    file.set_len(head.len() as u64 + hole).unwrap();
    let mut tail = File::options().append(true).open(&path).unwrap();
    io::Write::write_all(&mut tail, format!("\n{A_READ}\n").as_bytes()).unwrap();
    // Line 2 is the hole: NULs, a corrupt committed line.
    match Store::open_jsonl_with(&path, &read_only()) {
        Err(Error::CorruptLine { line: 2, .. }) => {}
        other => panic!("{:?}", other.map(|(_, r)| r)),
    }
    let (store, report) = Store::open_jsonl_with(&path, &salvage()).unwrap();
    assert_eq!(store.len().unwrap(), 2);
    assert_eq!(report.diagnostics.len(), 1);
    assert_eq!(report.diagnostics[0].line, 2);
}

/// A writer that fails with "no space left" once `budget` bytes are written.
struct DiskFull {
    file: File,
    budget: usize,
}

impl SessionFile for DiskFull {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = buf.len().min(self.budget);
        self.budget -= n;
        io::Write::write(&mut self.file, &buf[..n])
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

struct FullDisk;

impl RepairIo for FullDisk {
    fn create_backup(
        &mut self,
        path: &Path,
        like: &std::fs::Metadata,
    ) -> io::Result<Box<dyn SessionFile>> {
        let real = RealRepairIo.create_backup(path, like)?;
        drop(real);
        let file = OpenOptions::new().write(true).open(path)?;
        Ok(Box::new(DiskFull { file, budget: 10 }))
    }
}

/// Repair's file operations, with a child process started in the middle that holds a
/// copy of the session's descriptor, as a child forked by another thread of the host
/// does until it execs.
struct ForkDuringRepair {
    child: Option<std::process::Child>,
}

impl RepairIo for ForkDuringRepair {
    fn sync_file(&mut self, file: &File) -> io::Result<()> {
        // `dup` gives a descriptor without close-on-exec: the child keeps it.
        let copy = rustix::io::dup(file)?;
        self.child = Some(
            Command::new("sleep")
                .arg("30")
                .stdin(std::process::Stdio::null())
                .spawn()?,
        );
        drop(copy);
        RealRepairIo.sync_file(file)
    }
}

#[test]
fn repair_releases_its_lock_even_while_a_child_holds_the_file() {
    let path = temp_dir("repair-child").file_path("s.jsonl");
    let mut bytes = format!("{U1}\n").into_bytes();
    bytes.extend_from_slice(b"{\"id\":\"torn");
    write_file(&path, &bytes);
    let mut io = ForkDuringRepair { child: None };
    let repaired = repair_jsonl_with_io(&path, &mut io);
    // The lock lives on the open file, which the child shares: only an explicit unlock
    // frees it before the child ends.
    let opened = Store::open_jsonl(&path).map(|_| ());
    if let Some(mut child) = io.child.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(repaired.is_ok(), "{repaired:?}");
    assert!(opened.is_ok(), "a writer after repair: {opened:?}");
}

/// The names in `dir` other than `keep`.
fn others(dir: &Path, keep: &str) -> Vec<String> {
    let mut names = names_in(dir);
    names.retain(|n| n != keep);
    names
}

#[test]
fn a_repair_that_fills_the_disk_fails_with_io_and_leaves_no_partial_backup() {
    let dir = temp_dir("disk-full");
    let path = dir.join("s.jsonl");
    let mut bytes = lines(&[U1, A_READ]).into_bytes();
    bytes.extend_from_slice(&R_READ.as_bytes()[..40]);
    write_file(&path, &bytes);
    match repair_jsonl_with_io(&path, &mut FullDisk) {
        Err(Error::Io(failure)) => {
            assert_eq!(failure.op, IoOp::Write);
            assert_eq!(failure.os_error, Some(28));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(read_file(&path), bytes, "the file is untouched");
    assert_eq!(others(&dir, "s.jsonl"), Vec::<String>::new());
}

// The backup keeps the file's permissions, never follows a symlink,
// and is never partial.

fn torn_file(name: &str) -> (TempDir, PathBuf, Vec<u8>) {
    let dir = temp_dir(name);
    let path = dir.join("s.jsonl");
    let mut bytes = lines(&[U1]).into_bytes();
    bytes.extend_from_slice(b"{\"id\":\"torn");
    write_file(&path, &bytes);
    (dir, path, bytes)
}

#[test]
fn the_backup_has_the_session_files_permissions() {
    for mode in [0o600, 0o640, 0o644] {
        let (_dir, path, _) = torn_file("backup-mode");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let backup = repair_jsonl(&path).unwrap().backup.unwrap();
        let meta = std::fs::metadata(&backup).unwrap();
        assert_eq!(meta.mode() & 0o777, mode, "{backup:?}");
        assert_eq!(meta.uid(), std::fs::metadata(&path).unwrap().uid());
    }
}

#[test]
fn a_repair_never_writes_through_a_symlink_at_a_backup_name() {
    let (dir, path, _) = torn_file("backup-symlink");
    let victim = dir.join("victim");
    write_file(&victim, b"keep");
    std::os::unix::fs::symlink(&victim, dir.join(".s.jsonl.repair-1.tmp")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("s.jsonl.tail-1.bak")).unwrap();
    let backup = repair_jsonl(&path).unwrap().backup.unwrap();
    assert_eq!(backup, dir.join("s.jsonl.tail-2.bak"));
    assert_eq!(read_file(&backup), b"{\"id\":\"torn");
    assert_eq!(read_file(&victim), b"keep");
    assert!(
        std::fs::symlink_metadata(dir.join("s.jsonl.tail-1.bak"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_stale_temporary_from_a_killed_repair_is_never_taken_for_a_backup() {
    let (dir, path, _) = torn_file("stale-temp");
    let stale = dir.join(".s.jsonl.repair-1.tmp");
    write_file(&stale, b"half a ba");
    let report = repair_jsonl(&path).unwrap();
    assert_eq!(report.backup, Some(dir.join("s.jsonl.tail-1.bak")));
    assert_eq!(
        read_file(&dir.join("s.jsonl.tail-1.bak")),
        b"{\"id\":\"torn"
    );
    assert_eq!(read_file(&stale), b"half a ba");
    assert_eq!(
        others(&dir, "s.jsonl"),
        [".s.jsonl.repair-1.tmp", "s.jsonl.tail-1.bak"]
    );
}

#[test]
fn a_repair_stopped_before_the_rename_leaves_no_backup_name() {
    struct NoPublish;
    impl RepairIo for NoPublish {
        fn publish_backup(&mut self, _from: &Path, _to: &Path) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(5)) // EIO
        }
    }
    let (dir, path, bytes) = torn_file("no-publish");
    assert!(matches!(
        repair_jsonl_with_io(&path, &mut NoPublish),
        Err(Error::Io(_))
    ));
    assert_eq!(read_file(&path), bytes);
    assert!(
        others(&dir, "s.jsonl")
            .iter()
            .all(|n| !n.ends_with(".bak") && !n.ends_with(".jsonl")),
        "{:?}",
        others(&dir, "s.jsonl")
    );
}

// Non-regular files are refused, never waited on or read forever.

fn assert_refused(what: &str, result: Result<(), Error>) {
    match result {
        Err(Error::Io(failure)) => {
            assert_eq!(failure.op, IoOp::Open, "{what}");
            assert!(
                failure.message.contains("not a regular file"),
                "{what}: {}",
                failure.message
            );
        }
        other => panic!("{what}: {other:?}"),
    }
}

fn every_open_refuses(path: &Path) {
    for (name, options) in [
        ("writer", JsonlOptions::default()),
        ("read-only", read_only()),
        ("salvage", salvage()),
    ] {
        let target = path.to_owned();
        let what = format!("{name} open of {}", path.display());
        let result = within_a_minute(&what, move || {
            Store::open_jsonl_with(&target, &options).map(drop)
        });
        assert_refused(&what, result);
    }
    let target = path.to_owned();
    let what = format!("repair of {}", path.display());
    let result = within_a_minute(&what, move || repair_jsonl(&target).map(drop));
    assert_refused(&what, result);
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = temp_dir("fifo");
    let path = dir.join("s.jsonl");
    let made = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success());
    every_open_refuses(&path);
}

#[test]
fn endless_devices_and_directories_are_refused() {
    for device in ["/dev/zero", "/dev/full", "/dev/null"] {
        every_open_refuses(Path::new(device));
    }
    every_open_refuses(&temp_dir("a-directory"));
}

// A relative path keeps naming the same file after `chdir`.

/// Runs this test binary again as a child for `test`, with `HARDENING_CHILD` set to
/// `test`, through `sh -c "<prefix>; exec …"`; returns its output, asserting success.
fn run_child(test: &str, prefix: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let exact = test_name(module_path!(), test);
    let script = format!("{prefix}; exec \"$0\" --exact {exact} --nocapture --test-threads 1");
    let output = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(exe)
        .env("HARDENING_CHILD", test)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{test} in a child: {text}");
    assert!(text.contains("child done"), "{test} ran: {text}");
    text
}

fn is_child(test: &str) -> bool {
    std::env::var("HARDENING_CHILD").as_deref() == Ok(test)
}

#[test]
fn a_relative_path_keeps_naming_its_file_after_chdir() {
    const NAME: &str = "a_relative_path_keeps_naming_its_file_after_chdir";
    if !is_child(NAME) {
        run_child(NAME, "true");
        return;
    }
    let dir = temp_dir("chdir");
    let elsewhere = temp_dir("chdir-elsewhere");
    std::env::set_current_dir(&dir).unwrap();
    let (store, _) = Store::open_jsonl("s.jsonl").unwrap();
    store.append(U1).unwrap();
    std::env::set_current_dir(&elsewhere).unwrap();
    store.append(A_READ).unwrap();
    assert_eq!(store.state(), State::Ready);
    drop(store);
    assert_eq!(reopened_ids(&dir.join("s.jsonl")), ["u-1", "a-read"]);
    assert!(!elsewhere.join("s.jsonl").exists());
    println!("child done");
}

// Under a memory limit: a 1.5 GB sparse file costs memory for its committed
// part only.

#[test]
fn a_large_sparse_file_opens_and_repairs_under_a_1_gib_address_space_limit() {
    const NAME: &str = "a_large_sparse_file_opens_and_repairs_under_a_1_gib_address_space_limit";
    if !is_child(NAME) {
        run_child(NAME, "ulimit -v 1048576");
        return;
    }
    let size = 3 * GIB / 2;
    let (path, committed) = sparse_session("sparse-ulimit", size);
    open_and_repair_sparse(&path, size, committed);
    println!("child done");
}

// The build tree holds what the SONAME names. That a program linked there with
// exactly the README's `cc … -Ltarget/release -lsession -Wl,-rpath,…` command starts is
// checked by ctest (tests/c/run_first_try.sh), which runs after `cargo build --release`.

#[test]
fn build_tree_holds_the_soname_link() {
    // This binary is <profile dir>/deps/<its test crate>-<hash>.
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap();
    let link = profile.join("libsession.so.0");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("libsession.so"),
        "{link:?}"
    );
}
