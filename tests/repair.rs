//! Explicit repair (issue 7): only an unterminated tail is repaired; the uncommitted
//! bytes go to a sidecar backup first; an interrupted repair never loses a committed
//! line; a second repair is a no-op.

use crate::common;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::*;
use session::{
    Error, RealRepairIo, RepairIo, SessionFile, State, Store, repair_jsonl, repair_jsonl_with_io,
};

#[test]
fn repair_moves_the_tail_to_a_backup_and_keeps_the_committed_prefix() {
    let dir = temp_dir("repair");
    let path = dir.join("s.jsonl");
    let committed = lines(&[U1, A_READ]);
    let tail = &R_READ.as_bytes()[..25];
    let mut bytes = committed.clone().into_bytes();
    bytes.extend_from_slice(tail);
    write_file(&path, &bytes);
    let report = repair_jsonl(&path).unwrap();
    assert_eq!(report.truncated_bytes, tail.len() as u64);
    assert_eq!(report.entries, 2);
    let backup = report.backup.clone().unwrap();
    assert_eq!(backup, dir.join("s.jsonl.tail-1.bak"));
    assert_eq!(
        read_file(&backup),
        tail,
        "the backup holds exactly the uncommitted bytes"
    );
    assert_eq!(
        read_file(&path),
        committed.as_bytes(),
        "the committed prefix is kept exactly"
    );
    assert_eq!(
        report.to_json(),
        format!(
            r#"{{"truncatedBytes":25,"backup":"{}","entries":2}}"#,
            backup.display()
        )
    );
    // The file now opens ready and takes appends.
    let (store, open) = Store::open_jsonl(&path).unwrap();
    assert_eq!(open.state, State::Ready);
    store.append(R_READ).unwrap();
}

#[test]
fn a_second_repair_changes_nothing() {
    let dir = temp_dir("again");
    let path = dir.join("s.jsonl");
    write_file(&path, format!("{}\0\0\0", lines(&[U1])).as_bytes());
    repair_jsonl(&path).unwrap();
    let after_first = read_file(&path);
    let second = repair_jsonl(&path).unwrap();
    assert_eq!(
        (second.truncated_bytes, second.backup, second.entries),
        (0, None, 1)
    );
    assert_eq!(read_file(&path), after_first);
    assert_eq!(second_backup_count(&dir), 1, "no new backup");
}

fn second_backup_count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tail-")
        })
        .count()
}

#[test]
fn repair_refuses_a_corrupt_committed_line_and_leaves_the_file_untouched() {
    let dir = temp_dir("corrupt");
    let path = dir.join("s.jsonl");
    let bytes = format!("{}{{bad}}\n{}", lines(&[U1]), &A_READ[..9]);
    write_file(&path, bytes.as_bytes());
    assert!(matches!(
        repair_jsonl(&path),
        Err(Error::CorruptLine { line: 2, .. })
    ));
    assert_eq!(read_file(&path), bytes.as_bytes());
    assert_eq!(second_backup_count(&dir), 0);
}

#[test]
fn repair_refuses_a_broken_tree_and_leaves_the_file_untouched() {
    let dir = temp_dir("tree");
    let path = dir.join("s.jsonl");
    let bytes = format!("{}xx", lines(&[U1, R_READ]));
    write_file(&path, bytes.as_bytes());
    assert!(matches!(
        repair_jsonl(&path),
        Err(Error::MissingParent { line: Some(2), .. })
    ));
    assert_eq!(read_file(&path), bytes.as_bytes());
}

#[test]
fn repair_of_a_missing_file_is_an_io_error_and_creates_nothing() {
    let dir = temp_dir("missing");
    assert!(matches!(
        repair_jsonl(dir.join("none.jsonl")),
        Err(Error::Io(_))
    ));
    assert!(!dir.join("none.jsonl").exists());
}

#[test]
fn repair_is_refused_while_a_writer_holds_the_file() {
    let dir = temp_dir("locked");
    let path = dir.join("s.jsonl");
    write_file(&path, lines(&[U1]).as_bytes());
    let (_writer, _) = Store::open_jsonl(&path).unwrap();
    assert!(matches!(repair_jsonl(&path), Err(Error::Locked { .. })));
}

#[test]
fn repair_keeps_a_whitespace_tail_that_is_not_a_problem() {
    let dir = temp_dir("ws");
    let path = dir.join("s.jsonl");
    let bytes = format!("{}  \r", lines(&[U1]));
    write_file(&path, bytes.as_bytes());
    assert_eq!(repair_jsonl(&path).unwrap().truncated_bytes, 0);
    assert_eq!(read_file(&path), bytes.as_bytes());
}

/// Fails the k-th repair operation (create, each write and the sync of the backup,
/// the directory sync, truncate, the file sync), counting them.
struct FailAt {
    steps: Arc<Mutex<Steps>>,
    real: RealRepairIo,
}

struct Steps {
    k: u64,
    seen: u64,
}

fn step(steps: &Mutex<Steps>) -> io::Result<()> {
    let mut s = steps.lock().unwrap();
    s.seen += 1;
    if s.seen == s.k {
        Err(io::Error::from_raw_os_error(libc::EIO))
    } else {
        Ok(())
    }
}

/// The backup file: its writes and sync count as repair steps too.
struct CountedFile {
    inner: Box<dyn SessionFile>,
    steps: Arc<Mutex<Steps>>,
}

impl SessionFile for CountedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        step(&self.steps)?;
        self.inner.write(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        step(&self.steps)?;
        self.inner.sync()
    }
}

impl RepairIo for FailAt {
    fn create_backup(
        &mut self,
        path: &Path,
        like: &std::fs::Metadata,
    ) -> io::Result<Box<dyn SessionFile>> {
        step(&self.steps)?;
        let inner = self.real.create_backup(path, like)?;
        Ok(Box::new(CountedFile {
            inner,
            steps: Arc::clone(&self.steps),
        }))
    }

    fn publish_backup(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        step(&self.steps)?;
        self.real.publish_backup(from, to)
    }

    fn truncate(&mut self, file: &File, len: u64) -> io::Result<()> {
        step(&self.steps)?;
        self.real.truncate(file, len)
    }

    fn sync_file(&mut self, file: &File) -> io::Result<()> {
        step(&self.steps)?;
        self.real.sync_file(file)
    }

    fn sync_dir(&mut self, path: &Path) -> io::Result<()> {
        step(&self.steps)?;
        self.real.sync_dir(path)
    }
}

fn fail_at(k: u64) -> FailAt {
    FailAt {
        steps: Arc::new(Mutex::new(Steps { k, seen: 0 })),
        real: RealRepairIo,
    }
}

#[test]
fn a_repair_interrupted_at_any_step_never_loses_a_committed_line() {
    let committed = lines(&[U1, A_READ, R_READ]);
    let tail = vec![0u8; 3 << 20]; // spans several copy chunks
    let mut original = committed.clone().into_bytes();
    original.extend_from_slice(&tail);
    // Count the steps of an uninterrupted repair first.
    let steps = {
        let dir = temp_dir("count");
        let path = dir.join("s.jsonl");
        write_file(&path, &original);
        let mut io = fail_at(0);
        repair_jsonl_with_io(&path, &mut io).unwrap();
        io.steps.lock().map(|s| s.seen).unwrap()
    };
    assert!(steps >= 6, "create, writes, syncs, truncate: {steps}");
    for k in 1..=steps {
        let dir = temp_dir("interrupt");
        let path = dir.join("s.jsonl");
        write_file(&path, &original);
        let mut io = fail_at(k);
        assert!(
            repair_jsonl_with_io(&path, &mut io).is_err(),
            "step {k} fails"
        );
        let now = read_file(&path);
        // Either untouched or cut exactly at the committed prefix: never less.
        assert!(
            now == original || now == committed.as_bytes(),
            "step {k}: {} bytes",
            now.len()
        );
        // Finishing the repair afterwards always works and keeps every committed line.
        let report = repair_jsonl(&path).unwrap();
        assert_eq!(read_file(&path), committed.as_bytes(), "step {k}");
        assert_eq!(report.entries, 3);
        let backups: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".tail-"))
            .collect();
        assert!(
            backups.iter().any(|b| read_file(b) == tail),
            "step {k}: a complete backup exists"
        );
    }
    println!("repair interrupted at each of {steps} steps: 0 committed lines lost");
}
