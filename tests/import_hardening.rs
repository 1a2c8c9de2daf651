//! Issue 21, the import's items: what an adversarial source did to `import`. Each test
//! failed before its fix.
//!
//! Tests that must change the process (its memory limit) run themselves again as a
//! child process: the child part does nothing unless the `IMPORT_CHILD` variable names
//! it.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use session::interop::{Format, ImportReport, import_file};
use session::{Error, IoOp};

const FORMATS: [Format; 3] = [Format::Pi, Format::ClaudeCode, Format::Codex];

/// Runs `op` on another thread; fails the test if it has not returned in a minute.
fn within_a_minute<T: Send + 'static>(what: &str, op: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(op());
    });
    result
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} hung"))
}

// Item 4: a source that is not a regular file is refused at once.

fn assert_import_refuses(source: &Path, what: &str) {
    for format in FORMATS {
        let dir = temp_dir("import-refuses");
        let out = dir.join("out.jsonl");
        let target = source.to_owned();
        let written = out.clone();
        let result: Result<ImportReport, Error> =
            within_a_minute(what, move || import_file(format, &target, &written));
        match result {
            Err(Error::Io(failure)) => {
                assert_eq!(failure.op, IoOp::Open, "{what}");
                assert!(
                    failure
                        .message
                        .contains(&format!("is {what}, not a regular file")),
                    "{what}: {}",
                    failure.message
                );
            }
            other => panic!("{what}: {other:?}"),
        }
        assert!(!out.exists(), "{what}: nothing is written");
    }
}

#[test]
fn an_import_refuses_a_fifo_without_blocking() {
    let dir = temp_dir("import-fifo");
    let path = dir.join("src.jsonl");
    let made = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success());
    assert_import_refuses(&path, "a FIFO");
}

#[test]
fn an_import_refuses_endless_devices_and_directories() {
    assert_import_refuses(Path::new("/dev/zero"), "a character device");
    assert_import_refuses(&temp_dir("import-a-directory"), "a directory");
}
