//! `list_sessions` (docs/contract.md §8): one record per `*.jsonl` file, read from the head and
//! the last committed line only; a file it cannot read is listed with its error.

use crate::common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use common::list_io::CountingListIo;
use common::{EXAMPLE_FILE, temp_dir, write_file};
use session::list::{HEAD_BYTES, WHOLE_FILE_BYTES, list_sessions_with_io};
use session::{ListOptions, SessionInfo, SortBy, State, list_sessions};

fn chapter_bytes() -> Vec<u8> {
    EXAMPLE_FILE.as_bytes().to_vec()
}

/// A session larger than the whole-file limit: the chapter, then padding entries.
fn big_session(tail: &str) -> Vec<u8> {
    let mut out = chapter_bytes();
    let mut i = 0;
    let pad = "p".repeat(1000);
    while out.len() as u64 <= 3 * WHOLE_FILE_BYTES {
        let parent = if i == 0 {
            "meta-cwd".to_owned()
        } else {
            format!("pad-{}", i - 1)
        };
        out.extend_from_slice(
            format!(
                r#"{{"id":"pad-{i}","parentId":"{parent}","timestamp":{},"type":"metadata","key":"pad","value":"{pad}"}}"#,
                10 + i
            )
            .as_bytes(),
        );
        out.push(b'\n');
        i += 1;
    }
    out.extend_from_slice(tail.as_bytes());
    out
}

fn by_name<'a>(sessions: &'a [SessionInfo], name: &str) -> &'a SessionInfo {
    sessions
        .iter()
        .find(|s| s.path.ends_with(name))
        .unwrap_or_else(|| panic!("{name} is not listed: {sessions:?}"))
}

fn sorted_by_path() -> ListOptions {
    ListOptions {
        sort: SortBy::Path,
        ..ListOptions::default()
    }
}

#[test]
fn a_damaged_folder_lists_every_session_file_with_its_state_or_error() {
    let dir = temp_dir("list-folder");
    write_file(&dir.join("good.jsonl"), &chapter_bytes());
    let mut torn = chapter_bytes();
    torn.extend_from_slice(br#"{"id":"half","parentId":"meta-cwd","ti"#);
    write_file(&dir.join("torn.jsonl"), &torn);
    let mut corrupt = chapter_bytes();
    corrupt.extend_from_slice(b"{oops}\n");
    write_file(&dir.join("corrupt.jsonl"), &corrupt);
    write_file(&dir.join("big-corrupt.jsonl"), &big_session("{oops}\n"));
    write_file(&dir.join("empty.jsonl"), b"");
    write_file(&dir.join("notes.txt"), b"not a session\n");
    std::fs::create_dir(dir.join("sub")).unwrap();
    write_file(&dir.join("sub/inner.jsonl"), &chapter_bytes());

    let sessions = list_sessions(&dir, &sorted_by_path()).unwrap();
    let names: Vec<&str> = sessions
        .iter()
        .map(|s| s.path.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "big-corrupt.jsonl",
            "corrupt.jsonl",
            "empty.jsonl",
            "good.jsonl",
            "torn.jsonl"
        ]
    );
    let good = by_name(&sessions, "good.jsonl");
    assert_eq!(good.path, dir.join("good.jsonl").to_str().unwrap());
    assert_eq!(good.state, Some(State::Ready));
    assert_eq!(good.entries, Some(6));
    assert_eq!(
        good.first_user_text.as_deref(),
        Some("读取 README.md，告诉我项目名")
    );
    assert_eq!(good.latest_leaf_id.as_deref(), Some("meta-cwd"));
    assert_eq!(good.latest_timestamp.as_deref(), Some("1733000005000"));
    assert_eq!(good.bytes, chapter_bytes().len() as u64);
    assert_eq!(good.error, None);

    let torn = by_name(&sessions, "torn.jsonl");
    assert_eq!(torn.state, Some(State::NeedsRepair));
    assert_eq!(torn.latest_leaf_id.as_deref(), Some("meta-cwd"));
    assert_eq!(torn.entries, Some(6));

    for name in ["corrupt.jsonl", "big-corrupt.jsonl"] {
        let corrupt = by_name(&sessions, name);
        assert_eq!(
            corrupt.error.as_ref().map(|e| e.code),
            Some("corrupt_line"),
            "{name}"
        );
    }

    let empty = by_name(&sessions, "empty.jsonl");
    assert_eq!(
        (
            empty.state,
            empty.entries,
            empty.latest_leaf_id.as_deref(),
            empty.error.as_ref()
        ),
        (Some(State::Ready), Some(0), None, None)
    );

    let recursive = ListOptions {
        recursive: true,
        ..sorted_by_path()
    };
    let sessions = list_sessions(&dir, &recursive).unwrap();
    assert_eq!(sessions.len(), 6);
    assert_eq!(
        by_name(&sessions, "sub/inner.jsonl")
            .latest_leaf_id
            .as_deref(),
        Some("meta-cwd")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_large_session_is_read_at_its_head_and_tail_only() {
    let dir = temp_dir("list-big");
    let big = big_session("");
    write_file(&dir.join("big.jsonl"), &big);
    let mut torn = big.clone();
    torn.extend_from_slice(b"{\"id\":\"cut");
    write_file(&dir.join("torn.jsonl"), &torn);
    let mut io = CountingListIo::default();
    let sessions = list_sessions_with_io(&dir, &sorted_by_path(), &mut io).unwrap();
    for (name, state) in [
        ("big.jsonl", State::Ready),
        ("torn.jsonl", State::NeedsRepair),
    ] {
        let info = by_name(&sessions, name);
        assert_eq!(info.state, Some(state), "{name}");
        assert_eq!(
            info.entries, None,
            "{name}: not counted without reading every line"
        );
        assert_eq!(
            info.first_user_text.as_deref(),
            Some("读取 README.md，告诉我项目名")
        );
        assert!(info.latest_leaf_id.as_deref().unwrap().starts_with("pad-"));
        assert_eq!(info.error, None);
        let bytes = io
            .read_from(&dir.join(name))
            .unwrap_or_else(|| panic!("{name} was not read"));
        // The head and one 64 KiB piece of the tail (which holds the unterminated
        // part and the last line): not the file's 3 MiB.
        assert!(
            bytes <= (HEAD_BYTES * 2) as u64,
            "{name}: read {bytes} of {} bytes",
            info.bytes
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn links_fifos_and_non_utf8_names_are_listed_with_an_error_never_followed() {
    let dir = temp_dir("list-odd");
    write_file(&dir.join("real.jsonl"), &chapter_bytes());
    std::os::unix::fs::symlink(dir.join("real.jsonl"), dir.join("link.jsonl")).unwrap();
    std::os::unix::fs::symlink(dir.join("loop.jsonl"), dir.join("loop.jsonl")).unwrap();
    let fifo = dir.join("pipe.jsonl");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    write_file(
        &dir.join(OsStr::from_bytes(b"bad\xff.jsonl")),
        &chapter_bytes(),
    );

    let sessions = list_sessions(&dir, &sorted_by_path()).unwrap();
    assert_eq!(sessions.len(), 5);
    for name in ["link.jsonl", "loop.jsonl", "pipe.jsonl"] {
        assert_eq!(
            by_name(&sessions, name).error.as_ref().map(|e| e.code),
            Some("io"),
            "{name}"
        );
    }
    // The store's one refusal of non-regular files, shared with the listing.
    let pipe = by_name(&sessions, "pipe.jsonl").error.as_ref().unwrap();
    assert!(
        pipe.message
            .ends_with("pipe.jsonl is a FIFO, not a regular file"),
        "{}",
        pipe.message
    );
    let bad = by_name(&sessions, "bad\u{fffd}.jsonl");
    assert_eq!(bad.error.as_ref().map(|e| e.code), Some("invalid_argument"));
    assert_eq!(by_name(&sessions, "real.jsonl").error, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sort_and_limit_apply_before_reading() {
    let dir = temp_dir("list-sort");
    for (name, age) in [("a.jsonl", 30), ("b.jsonl", 10), ("c.jsonl", 20)] {
        let path = dir.join(name);
        write_file(&path, &chapter_bytes());
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age * 60);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let newest_two = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let mut io = CountingListIo::default();
    let sessions = list_sessions_with_io(&dir, &newest_two, &mut io).unwrap();
    let names: Vec<&str> = sessions
        .iter()
        .map(|s| s.path.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(names, ["b.jsonl", "c.jsonl"]);
    assert!(sessions[0].modified_ms > sessions[1].modified_ms);
    assert!(
        io.read_from(&dir.join("a.jsonl")).is_none(),
        "a file past the limit is not read"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_folder_is_an_io_error_and_bad_options_are_invalid() {
    let dir = temp_dir("list-missing");
    assert!(matches!(
        list_sessions(&dir.join("nope"), &ListOptions::default()),
        Err(session::Error::Io(_))
    ));
    for bad in [
        r#"{"limit":-1}"#,
        r#"{"sort":"size"}"#,
        r#"{"recursive":1}"#,
        r#"{"x":1}"#,
    ] {
        assert!(
            matches!(
                ListOptions::from_json(bad),
                Err(session::Error::InvalidOption { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(
        ListOptions::from_json(r#"{"recursive":true,"limit":3,"sort":"path"}"#).ok(),
        Some(ListOptions {
            recursive: true,
            limit: Some(3),
            sort: SortBy::Path
        })
    );
}

#[test]
fn records_have_the_section_8_json_shape() {
    let dir = temp_dir("list-json");
    write_file(&dir.join("s.jsonl"), &chapter_bytes());
    let sessions = list_sessions(&dir, &ListOptions::default()).unwrap();
    let json = session::list::sessions_json(&sessions);
    let expected = format!(
        r#"{{"sessions":[{{"path":"{}","bytes":{},"modifiedMs":{},"state":"ready","firstUserText":"读取 README.md，告诉我项目名","latestLeafId":"meta-cwd","latestTimestamp":1733000005000,"entries":6}}]}}"#,
        dir.join("s.jsonl").display(),
        chapter_bytes().len(),
        sessions[0].modified_ms.unwrap()
    );
    assert_eq!(json, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Lists `dir` with the `session` tool under a soft limit of 64 open files: the
/// listing must not hold a descriptor per listed file (100,000 sessions in one folder
/// exceeded the default limit of 20,000 and were listed as `io` errors).
fn ls_with_64_descriptors(dir: &std::path::Path, extra: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n 64 && exec \"$0\" ls {extra} \"$1\"",))
        .arg(env!("CARGO_BIN_EXE_session"))
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn a_folder_of_more_sessions_than_open_files_allowed_lists_every_one() {
    let dir = temp_dir("list-many");
    for i in 0..300 {
        write_file(&dir.join(format!("s{i:03}.jsonl")), &chapter_bytes());
    }
    for extra in ["", "--limit 250", "--sort path"] {
        let table = ls_with_64_descriptors(&dir, extra);
        let rows: Vec<&str> = table.lines().skip(1).collect();
        let wanted = if extra.contains("250") { 250 } else { 300 };
        assert_eq!(rows.len(), wanted, "session ls {extra}");
        let failed: Vec<&&str> = rows.iter().filter(|r| !r.contains(" ready ")).collect();
        assert!(failed.is_empty(), "session ls {extra}: {failed:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
