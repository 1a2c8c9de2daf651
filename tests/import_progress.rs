//! An import tells its caller how far it has read, and stops when the caller asks:
//! `import_file_with_progress` (issue 24, long work shows progress).

use crate::common;

use common::*;
use session::Error;
use session::interop::{Format, ImportProgress, import_file_with_progress};

/// A pi session of about `bytes` bytes: the header, then user messages in a chain.
fn pi_session(bytes: usize) -> Vec<u8> {
    let mut out = String::from(
        r#"{"type":"session","version":3,"id":"s-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    out.push('\n');
    let text = "x".repeat(200);
    let mut parent = "null".to_owned();
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            r#"{{"type":"message","id":"m-{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1735689601000}}}}"#
        ));
        out.push('\n');
        parent = format!(r#""m-{i}""#);
        i += 1;
    }
    out.into_bytes()
}

#[test]
fn progress_reports_every_pass_and_each_mebibyte_read() {
    let dir = temp_dir("import-progress");
    let source = dir.join("pi.jsonl");
    let bytes = pi_session(3 << 20);
    write_file(&source, &bytes);
    let mut seen: Vec<ImportProgress> = Vec::new();
    let report = import_file_with_progress(Format::Pi, &source, &dir.join("out.jsonl"), &mut |p| {
        seen.push(p);
        true
    })
    .unwrap();
    assert!(report.entries_written > 1);
    let total = bytes.len() as u64;
    assert!(seen.iter().all(|p| p.total == total), "{seen:?}");
    // Each pass starts at 0 and reports at least a mebibyte apart; a pass may stop early
    // (pi's pass 2 reads only to the header), the first and the last read it all.
    let passes = seen.last().unwrap().pass;
    assert!(passes >= 2, "{seen:?}");
    for pass in 1..=passes {
        let done: Vec<u64> = seen
            .iter()
            .filter(|p| p.pass == pass)
            .map(|p| p.done)
            .collect();
        assert_eq!(done[0], 0, "pass {pass}: {done:?}");
        assert!(done.windows(2).all(|w| w[1] - w[0] >= 1 << 20), "{done:?}");
        if pass == 1 || pass == passes {
            assert!(done.len() >= 3, "pass {pass} of 3 MiB: {done:?}");
        }
    }
}

#[test]
fn a_cancelling_callback_stops_the_import_and_writes_nothing() {
    let dir = temp_dir("import-cancel");
    let source = dir.join("pi.jsonl");
    write_file(&source, &pi_session(3 << 20));
    let out = dir.join("out.jsonl");
    let (mut calls, mut after_cancel) = (0, 0);
    let mut cancelled = false;
    let result = import_file_with_progress(Format::Pi, &source, &out, &mut |p| {
        calls += 1;
        if cancelled {
            after_cancel += 1;
        }
        cancelled = p.pass >= 2 && p.done > 0;
        !cancelled
    });
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    // Stopped at the first report past the start of pass 2, not one call later.
    assert!(cancelled && calls > 2, "{calls}");
    assert_eq!(after_cancel, 0);
    // Neither the output nor the temporary file beside it is left.
    assert_eq!(names_in(&dir), ["pi.jsonl"]);
}
