//! Repair at every truncation offset (T1's files) and after every tail fill (T2's
//! fills), T21: for each damaged file, the backup holds exactly the removed bytes, the
//! committed prefix is kept exactly, the result opens clean with the same entries and
//! takes an append, and a second repair changes nothing. A file that opens clean is
//! left as it is.
//!
//! The syncs of a repair are tested elsewhere (tests/repair.rs interrupts each of
//! them); here they are skipped so that thousands of cases run in seconds.

use crate::common;

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use common::{Rng, Session, TempDir, chapter_session, generated_session, seed, temp_dir};
use session::{RepairIo, SessionFile, State, Store, repair_jsonl_with_io};

/// The real file operations of a repair, without the syncs.
struct NoSync;

struct UnsyncedFile(File);

impl SessionFile for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::Write::write(&mut self.0, buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl RepairIo for NoSync {
    fn create_backup(
        &mut self,
        path: &Path,
        _like: &std::fs::Metadata,
    ) -> io::Result<Box<dyn SessionFile>> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(UnsyncedFile(file)))
    }

    fn sync_file(&mut self, _: &File) -> io::Result<()> {
        Ok(())
    }

    fn sync_dir(&mut self, _: &Path) -> io::Result<()> {
        Ok(())
    }
}

/// Repairs a file holding `bytes` and checks every promise; returns the violations.
fn check_repair(dir: &TempDir, case: &str, bytes: &[u8]) -> Vec<String> {
    let mut violations = Vec::new();
    let path = dir.join("s.jsonl");
    for entry in std::fs::read_dir(dir.join("")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    std::fs::write(&path, bytes).unwrap();
    let committed = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let before = match Store::open_jsonl(&path) {
        Ok((store, report)) => (report.state, store.entries().unwrap()),
        Err(e) => return vec![format!("{case}: the file does not open: {e}")],
    };
    let report = match repair_jsonl_with_io(&path, &mut NoSync) {
        Ok(report) => report,
        Err(e) => return vec![format!("{case}: repair failed: {e}")],
    };
    let now = std::fs::read(&path).unwrap();
    match before.0 {
        State::NeedsRepair => {
            if now != bytes[..committed] {
                violations.push(format!("{case}: the file is not its committed prefix"));
            }
            let backup = report.backup.as_ref().map(|b| std::fs::read(b).unwrap());
            if backup.as_deref() != Some(&bytes[committed..]) {
                violations.push(format!("{case}: the backup is not the removed bytes"));
            }
            if report.truncated_bytes != (bytes.len() - committed) as u64 {
                violations.push(format!("{case}: truncatedBytes {}", report.truncated_bytes));
            }
        }
        _ => {
            if now != bytes || report.backup.is_some() || report.truncated_bytes != 0 {
                violations.push(format!("{case}: a clean file was changed"));
            }
        }
    }
    match Store::open_jsonl(&path) {
        Ok((store, again)) => {
            if again.state != State::Ready || store.entries().unwrap() != before.1 {
                violations.push(format!(
                    "{case}: after repair: {:?}, other entries",
                    again.state
                ));
            }
        }
        Err(e) => violations.push(format!("{case}: after repair it does not open: {e}")),
    }
    let second = repair_jsonl_with_io(&path, &mut NoSync);
    let unchanged = std::fs::read(&path).unwrap() == now;
    if !matches!(&second, Ok(r) if r.truncated_bytes == 0 && r.backup.is_none()) || !unchanged {
        violations.push(format!("{case}: a second repair changed something"));
    }
    violations
}

/// Offsets to cut `session` at: every offset of a small file; for a larger one every
/// offset within 16 bytes of a line boundary and every 37th elsewhere.
fn offsets(session: &Session) -> Vec<usize> {
    let len = session.bytes.len();
    if len < 4096 {
        return (0..=len).collect();
    }
    let near = |at: usize| session.lines.iter().any(|l| l.newline.abs_diff(at) <= 16);
    (0..=len).filter(|&at| at % 37 == 0 || near(at)).collect()
}

#[test]
fn repair_at_every_truncation_offset_keeps_the_committed_prefix_exactly() {
    let dir = temp_dir("repair-offsets");
    let mut cases = 0;
    let mut violations = Vec::new();
    for (name, session) in [
        ("chapter", chapter_session()),
        ("generated", generated_session(seed(0x7151), 52, false)),
    ] {
        for at in offsets(&session) {
            violations.extend(check_repair(
                &dir,
                &format!("{name} cut at {at}"),
                &session.bytes[..at],
            ));
            cases += 1;
        }
    }
    println!(
        "repair at every truncation offset: {cases} cases, {} violations",
        violations.len()
    );
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn repair_after_every_tail_fill_keeps_the_committed_prefix_exactly() {
    let dir = temp_dir("repair-fills");
    let session = generated_session(seed(0x7152), 20, false);
    let mut rng = Rng::new(seed(0x7153));
    let boundaries: Vec<usize> = std::iter::once(0)
        .chain(session.lines.iter().map(|l| l.newline + 1))
        .collect();
    let mut cases = 0;
    let mut violations = Vec::new();
    for &at in &boundaries {
        for len in [1usize, 7, 4096 - at % 4096, 8192] {
            let random: Vec<u8> = rng
                .bytes(len)
                .into_iter()
                .map(|b| if b == b'\n' { b'?' } else { b })
                .collect();
            let fills: [(&str, Vec<u8>); 6] = [
                ("zeros", vec![0; len]),
                ("0xFF", vec![0xFF; len]),
                ("random", random),
                (
                    "whitespace",
                    b" \t\r".iter().copied().cycle().take(len).collect(),
                ),
                (
                    "BOM",
                    [0xEF, 0xBB, 0xBF]
                        .iter()
                        .copied()
                        .cycle()
                        .take(len)
                        .collect(),
                ),
                (
                    "cut UTF-8",
                    "日".bytes().cycle().take(len.max(2) - 1).collect(),
                ),
            ];
            for (fill, tail) in fills {
                let mut bytes = session.bytes[..at].to_vec();
                bytes.extend_from_slice(&tail);
                let case = format!("{fill} x{len} at {at}");
                violations.extend(check_repair(&dir, &case, &bytes));
                cases += 1;
            }
        }
    }
    println!(
        "repair after every tail fill: {cases} cases, {} violations",
        violations.len()
    );
    assert!(violations.is_empty(), "{violations:#?}");
}
