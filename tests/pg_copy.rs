//! `session copy` between a JSONL file and a PostgreSQL database (docs/contract.md §14),
//! against a real server: a throwaway cluster this binary starts once
//! (tests/common/pg.rs) and stops at exit. A copy is all or nothing in both directions,
//! holds what appending its entries would commit, never creates anything from a source
//! that does not exist, and makes no file wider than its source.

// The whole file needs the store's feature (and the bench its client crate).
#![cfg(feature = "postgres")]

use crate::common;

use std::path::Path;
use std::process::Command;

use common::pg::{cluster, example, session_id};
use common::*;
use session::{ContextOptions, Error, PgOptions, Store};

fn session_cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .unwrap()
}

/// What a reader of the session sees on every leaf: the path's messages and the context.
fn every_leaf(store: &Store) -> Vec<String> {
    let leaves = store.leaves().unwrap().leaves;
    assert!(leaves.len() > 1);
    let mut out = vec![String::from_utf8(store.entries_json().unwrap()).unwrap()];
    for leaf in leaves {
        out.push(String::from_utf8(store.messages_on_path_json(&leaf.id).unwrap()).unwrap());
        out.push(
            store
                .build_context(&leaf.id, &ContextOptions::default(), None)
                .map_or_else(|e| format!("{e:?}"), |c| c.to_json()),
        );
    }
    out
}

#[test]
fn session_copy_is_lossless_from_a_file_to_postgres_and_back() {
    if !common::pg::available() {
        return;
    }
    let dir = common::temp_dir("pg-copy");
    let source = dir.join("source.jsonl");
    {
        let store = Store::open_jsonl(&source).unwrap().0;
        for line in example() {
            store.append(line).unwrap();
        }
    }
    let session = session_id("copy");
    let uri = format!("{}#{session}", cluster().uri());
    let back = dir.join("back.jsonl");
    let there = session_cli(&["copy", source.to_str().unwrap(), &uri]);
    assert!(there.status.success(), "{there:?}");
    let again = session_cli(&["copy", back.to_str().unwrap(), &uri]);
    assert!(!again.status.success(), "a missing source file is an error");
    let home = session_cli(&["copy", &uri, back.to_str().unwrap()]);
    assert!(home.status.success(), "{home:?}");
    assert_eq!(
        std::fs::read(&source).unwrap(),
        std::fs::read(&back).unwrap()
    );
    let (file, pg, copied) = (
        Store::open_jsonl(&source).unwrap().0,
        open(&session),
        Store::open_jsonl(&back).unwrap().0,
    );
    assert_eq!(every_leaf(&file), every_leaf(&pg));
    assert_eq!(every_leaf(&file), every_leaf(&copied));
    // Never onto something: an existing file, a session that has entries.
    let onto_file = session_cli(&["copy", &uri, back.to_str().unwrap()]);
    assert_eq!(onto_file.status.code(), Some(2), "{onto_file:?}");
    let onto_session = session_cli(&["copy", source.to_str().unwrap(), &uri]);
    assert_eq!(onto_session.status.code(), Some(2), "{onto_session:?}");
    assert_eq!(pg.len().unwrap(), example().len());
    let no_session = session_cli(&["copy", source.to_str().unwrap(), &cluster().uri()]);
    assert_eq!(no_session.status.code(), Some(64), "{no_session:?}");
}

fn open(session: &str) -> Store {
    Store::open_pg(&cluster().conninfo(), session, &PgOptions::default())
        .unwrap()
        .0
}

/// A JSONL file holding `lines`, as a store appends them.
fn session_file(path: &Path, lines: &[&str]) {
    let store = Store::open_jsonl(path).unwrap().0;
    for line in lines {
        store.append(line).unwrap();
    }
}

/// `count` entries in one chain under the chapter (valid appends).
fn chain(count: usize) -> Vec<String> {
    let mut lines: Vec<String> = CHAPTER.iter().map(|l| (*l).to_owned()).collect();
    let mut parent = "meta-cwd".to_owned();
    for i in lines.len()..count {
        let id = format!("c-{i}");
        lines.push(user(&id, Some(&parent), &format!("entry {i} of a chain")));
        parent = id;
    }
    lines
}

/// What the database holds of session `session` (in database `db`): its row in
/// `libsession_sessions` (count, size, latest entry; not the times, but whether it
/// exists) and its rows in
/// `libsession_entries`, as text.
fn stored(db: &str, session: &str) -> (String, String) {
    let c = cluster();
    let row = c.sql(
        db,
        &format!(
            "SELECT entries, bytes, encode(latest_leaf_id, 'hex') FROM libsession_sessions \
             WHERE session_id = '{session}'"
        ),
    );
    let rows = c.sql(
        db,
        &format!(
            "SELECT seq, off, encode(id, 'hex'), encode(parent_id, 'hex'), line \
             FROM libsession_entries WHERE session_id = '{session}' ORDER BY seq"
        ),
    );
    (row, rows)
}

fn db_name(conninfo: &str) -> String {
    conninfo.rsplit("dbname=").next().unwrap().to_owned()
}

/// The `postgres://…#session` argument of database `conninfo` (made by the cluster).
fn uri_of(conninfo: &str, session: &str) -> String {
    let c = cluster();
    format!(
        "postgresql://postgres:{}@/{}?host={}&port={}#{session}",
        common::pg::PASSWORD,
        db_name(conninfo),
        c.socket.display(),
        c.port
    )
}

#[test]
fn a_copy_into_the_database_makes_the_rows_and_counts_that_appending_makes() {
    // Rule (§14): a copy's rows are the rows appends would have made: seq 0, 1, … in
    // commit order, the ids and parent ids, the lines byte for byte, the session's count
    // and latest entry.
    if !common::pg::available() {
        return;
    }
    let dir = temp_dir("pg-copy-rows");
    let source = dir.join("source.jsonl");
    session_file(&source, &example());
    let (appended, copied) = (session_id("appended"), session_id("copied"));
    let store = open(&appended);
    for line in example() {
        store.append(line).unwrap();
    }
    let out = session_cli(&[
        "copy",
        source.to_str().unwrap(),
        &format!("{}#{copied}", cluster().uri()),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("session: copied {} entries\n", example().len())
    );
    assert_eq!(stored("postgres", &copied), stored("postgres", &appended));
    assert_eq!(
        stored("postgres", &copied).1.lines().count(),
        example().len()
    );
    // Onto a session with entries: refused before any write (kind AlreadyExists).
    let file = Store::open_jsonl(&source).unwrap().0;
    let before = stored("postgres", &copied);
    match file.copy_to_pg(
        &cluster().conninfo(),
        &copied,
        &PgOptions::default(),
        &mut |_| {},
    ) {
        Err(Error::Io(failure)) => {
            assert_eq!(failure.kind, std::io::ErrorKind::AlreadyExists, "{failure}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stored("postgres", &copied), before);
    // And the copy takes appends after it, at the next seq.
    assert_eq!(
        open(&copied)
            .append(user("next", Some("odd"), "x"))
            .unwrap()
            .seq,
        example().len() as u64
    );
}

/// A function and trigger that make the insert of the row at seq 10 fail, in database
/// `db`: by raising an error, or by ending the connection from the server's side.
fn inject_at_seq_10(db: &str, fault: &str) {
    let action = match fault {
        "raise" => "RAISE EXCEPTION 'injected fault at seq 10'",
        _ => "PERFORM pg_terminate_backend(pg_backend_pid())",
    };
    cluster().sql(
        db,
        &format!(
            "CREATE FUNCTION inject() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF NEW.seq = 10 THEN {action}; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER inject BEFORE INSERT ON libsession_entries \
             FOR EACH ROW EXECUTE FUNCTION inject()"
        ),
    );
}

#[test]
fn a_copy_cut_mid_stream_leaves_the_database_as_it_was_and_the_retry_succeeds() {
    // Rule (§14, §15): a copy into a database is one transaction. A row refused at seq
    // 10 of 20, or the connection ended there, leaves the destination exactly as
    // before (no session row for a new session; an existing empty one as it was), and
    // the same copy then succeeds.
    if !common::pg::available() {
        return;
    }
    let dir = temp_dir("pg-copy-cut");
    let source = dir.join("source.jsonl");
    let lines = chain(20);
    session_file(
        &source,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let expected = read_file(&source);
    for fault in ["raise", "terminate"] {
        for existing in [false, true] {
            let conninfo = cluster().fresh_db();
            let db = db_name(&conninfo);
            let session = session_id("cut");
            // The tables (and, for an existing destination, its empty session).
            let name = if existing { session.as_str() } else { "other" };
            drop(Store::open_pg(&conninfo, name, &PgOptions::default()).unwrap());
            let before = cluster().sql(
                &db,
                "SELECT session_id, entries, latest_leaf_id, created_ms, modified_ms \
                 FROM libsession_sessions ORDER BY session_id",
            );
            inject_at_seq_10(&db, fault);
            let uri = uri_of(&conninfo, &session);
            let out = session_cli(&["copy", source.to_str().unwrap(), &uri]);
            assert_eq!(out.status.code(), Some(3), "{fault}: {out:?}");
            let after = cluster().sql(
                &db,
                "SELECT session_id, entries, latest_leaf_id, created_ms, modified_ms \
                 FROM libsession_sessions ORDER BY session_id",
            );
            assert_eq!(after, before, "{fault}, existing {existing}");
            assert_eq!(
                cluster().sql(&db, "SELECT count(*) FROM libsession_entries"),
                "0\n",
                "{fault}"
            );
            cluster().sql(&db, "DROP TRIGGER inject ON libsession_entries");
            let retry = session_cli(&["copy", source.to_str().unwrap(), &uri]);
            assert!(retry.status.success(), "{fault}: {retry:?}");
            let back = dir.join(format!("back-{fault}-{existing}.jsonl"));
            let home = session_cli(&["copy", &uri, back.to_str().unwrap()]);
            assert!(home.status.success(), "{home:?}");
            assert_eq!(read_file(&back), expected);
        }
    }
}

#[test]
fn a_copy_to_a_file_that_fails_mid_write_leaves_no_file_and_the_retry_succeeds() {
    // Rule (§14): a copy into a file writes a temporary file beside it and renames it
    // into place at the end: a write that fails part way (here the file size limit,
    // RLIMIT_FSIZE, with SIGXFSZ ignored, so the write returns EFBIG) leaves nothing at
    // DST and no temporary file, and the same copy then succeeds.
    if !common::pg::available() {
        return;
    }
    let dir = temp_dir("pg-copy-efbig");
    let source = dir.join("source.jsonl");
    let lines = chain(400);
    session_file(
        &source,
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let expected = read_file(&source);
    assert!(expected.len() > 40 * 1024, "{}", expected.len());
    let session = session_id("efbig");
    let uri = format!("{}#{session}", cluster().uri());
    assert!(
        session_cli(&["copy", source.to_str().unwrap(), &uri])
            .status
            .success()
    );
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let dst = out_dir.join("copy.jsonl");
    let limited = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 16; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_session"))
        .args(["copy", &uri, dst.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(limited.status.code(), Some(3), "{limited:?}");
    assert!(
        String::from_utf8_lossy(&limited.stderr).contains("too large"),
        "{limited:?}"
    );
    assert_eq!(names_in(&out_dir), Vec::<String>::new());
    let retry = session_cli(&["copy", &uri, dst.to_str().unwrap()]);
    assert!(retry.status.success(), "{retry:?}");
    assert_eq!(read_file(&dst), expected);
    assert_eq!(names_in(&out_dir), vec!["copy.jsonl".to_owned()]);
}

#[test]
fn an_entry_that_appending_would_refuse_fails_the_copy_and_leaves_nothing() {
    // Rule (§14): a copy holds exactly what appending its entries would commit. A
    // source line that an append refuses (a compaction whose cut §6.2 refuses, written
    // into the file by another tool) fails the copy in either direction, with that
    // error, and leaves nothing: no session row, no file.
    if !common::pg::available() {
        return;
    }
    let dir = temp_dir("pg-copy-refused");
    let source = dir.join("source.jsonl");
    let mut lines = chain(20);
    lines.insert(
        10,
        r#"{"id":"bad-cut","parentId":"c-9","timestamp":1,"type":"compaction","summary":"s","firstKeptEntryId":"a-alt","tokensBefore":1}"#.to_owned(),
    );
    let mut text = lines.join("\n");
    text.push('\n');
    write_file(&source, text.as_bytes());
    let session = session_id("refused");
    let out = session_cli(&[
        "copy",
        source.to_str().unwrap(),
        &format!("{}#{session}", cluster().uri()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad-cut"),
        "{out:?}"
    );
    assert_eq!(stored("postgres", &session), (String::new(), String::new()));
    let dst = dir.join("copy.jsonl");
    let out = session_cli(&["copy", source.to_str().unwrap(), dst.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!dst.exists());
    assert_eq!(names_in(&dir), vec!["source.jsonl".to_owned()]);
}

#[test]
fn copying_from_a_session_or_file_that_does_not_exist_fails_and_creates_nothing() {
    // Rule (§14): a missing source is an error (`io`, not found; exit 3) in either
    // direction, and nothing is created: no file, no session row.
    if !common::pg::available() {
        return;
    }
    let dir = temp_dir("pg-copy-missing");
    let (missing, dst_session) = (session_id("missing"), session_id("never"));
    let dst = dir.join("copy.jsonl");
    let out = session_cli(&[
        "copy",
        &format!("{}#{missing}", cluster().uri()),
        dst.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no session"),
        "{out:?}"
    );
    assert!(!dst.exists());
    let out = session_cli(&[
        "copy",
        dir.join("absent.jsonl").to_str().unwrap(),
        &format!("{}#{dst_session}", cluster().uri()),
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(names_in(&dir), Vec::<String>::new());
    for session in [&missing, &dst_session] {
        assert_eq!(stored("postgres", session), (String::new(), String::new()));
    }
    // The library's reader open says the same, and creates nothing either.
    let reader = PgOptions {
        create: false,
        ..PgOptions::default()
    };
    assert_eq!(PgOptions::from_json(r#"{"create":false}"#).unwrap(), reader);
    assert!(PgOptions::from_json("{}").unwrap().create);
    match Store::open_pg(&cluster().conninfo(), &missing, &reader) {
        Err(Error::Io(failure)) => assert_eq!(failure.kind, std::io::ErrorKind::NotFound),
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(stored("postgres", &missing), (String::new(), String::new()));
}

#[test]
fn a_copy_shows_its_progress_on_a_terminal_and_only_there() {
    // Rule: long work shows a progress line on stderr when it is a terminal (here a
    // pseudo-terminal made by util-linux `script`); to a pipe, only the count.
    if !common::pg::available() {
        return;
    }
    let dir = temp_dir("pg-copy-progress");
    let source = dir.join("source.jsonl");
    write_chain(&source, 10_000);
    let uri = format!("{}#{}", cluster().uri(), session_id("progress"));
    let line = format!(
        "{} copy {} '{uri}'",
        env!("CARGO_BIN_EXE_session"),
        source.display()
    );
    let shown = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("this test needs `script` (util-linux) for a pseudo-terminal");
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("copying"), "{shown:?}");
    assert!(shown.contains("/10,000 entries"), "{shown:?}");
    assert!(shown.contains("copied 10000 entries"), "{shown:?}");
    let back = dir.join("back.jsonl");
    let piped = session_cli(&["copy", &uri, back.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&piped.stderr),
        "session: copied 10000 entries\n"
    );
}

#[test]
fn a_file_copied_from_the_database_is_no_wider_than_owner_only() {
    // Rule: an output holds the session's text, so it is never wider than its source;
    // a database source counts as 0600. Under umask 022 a copy out of the database is
    // 0600, and a copy of a 0640 file 0640.
    if !common::pg::available() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("pg-copy-mode");
    let source = dir.join("source.jsonl");
    session_file(&source, &CHAPTER);
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o640)).unwrap();
    let uri = format!("{}#{}", cluster().uri(), session_id("mode"));
    assert!(
        session_cli(&["copy", source.to_str().unwrap(), &uri])
            .status
            .success()
    );
    let with_umask_022 = |args: &[&str]| {
        Command::new("sh")
            .arg("-c")
            .arg("umask 022; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_session"))
            .args(args)
            .output()
            .unwrap()
    };
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let from_db = dir.join("from-db.jsonl");
    assert!(
        with_umask_022(&["copy", &uri, from_db.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(mode(&from_db), 0o600);
    let from_file = dir.join("from-file.jsonl");
    let out = with_umask_022(&[
        "copy",
        source.to_str().unwrap(),
        from_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(mode(&from_file), 0o640);
}

/// A valid session of `count` entries in one chain, alternating user and assistant
/// messages of a typical length, written as lines (not through a store: the bench
/// measures the copy, not the making of its source).
fn write_chain(path: &Path, count: usize) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut parent: Option<String> = None;
    for i in 0..count {
        let id = format!("e{i}");
        let text = format!("message {i}: a user turn or an answer of a typical length");
        let line = match i % 2 {
            0 => user(&id, parent.as_deref(), &text),
            _ => format!(
                r#"{{"id":"{id}","parentId":"{}","timestamp":1,"type":"message","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}}}"#,
                parent.as_deref().unwrap_or_default()
            ),
        };
        writeln!(out, "{line}").unwrap();
        parent = Some(id);
    }
    out.flush().unwrap();
}

// --- Benchmark (on demand) ------------------------------------------------------------------

/// `session copy` of a 100,000-entry JSONL session into the database and back, in
/// entries per second of the whole command (open the source, check, write), against
/// the floor: a bare binary `COPY` of the same lines into a table without keys, from
/// this process, on the same server. On demand, never a timed test: `cargo test
/// --release --test suite_cli -- --ignored --nocapture pg_copy::bench_session_copy`
/// (PG_BENCH_COPY_ENTRIES, default 100000). It prints figures and asserts only that
/// the copy back is byte for byte.
#[test]
#[ignore = "a benchmark: run on demand"]
fn bench_session_copy_of_100k_entries_into_the_database_and_back() {
    if !common::pg::available() {
        return;
    }
    let entries: usize = std::env::var("PG_BENCH_COPY_ENTRIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let c = cluster();
    let dir = temp_dir("pg-copy-bench");
    let source = dir.join("source.jsonl");
    write_chain(&source, entries);
    let session = session_id("bench-copy");
    let uri = format!("{}#{session}", c.uri());
    let start = std::time::Instant::now();
    let there = session_cli(&["copy", source.to_str().unwrap(), &uri]);
    let into_db = start.elapsed().as_secs_f64();
    assert!(there.status.success(), "{there:?}");
    let back = dir.join("back.jsonl");
    let start = std::time::Instant::now();
    let home = session_cli(&["copy", &uri, back.to_str().unwrap()]);
    let out_of_db = start.elapsed().as_secs_f64();
    assert!(home.status.success(), "{home:?}");
    assert_eq!(read_file(&source), read_file(&back));

    let text = String::from_utf8(read_file(&source)).unwrap();
    let mut client = postgres::Client::connect(&c.conninfo(), postgres::NoTls).unwrap();
    client
        .batch_execute("DROP TABLE IF EXISTS bench_copy_floor; CREATE TABLE bench_copy_floor (line text NOT NULL)")
        .unwrap();
    let start = std::time::Instant::now();
    let mut tx = client.transaction().unwrap();
    let writer = tx
        .copy_in("COPY bench_copy_floor (line) FROM STDIN (FORMAT binary)")
        .unwrap();
    let mut rows =
        postgres::binary_copy::BinaryCopyInWriter::new(writer, &[postgres::types::Type::TEXT]);
    for line in text.lines() {
        rows.write(&[&line]).unwrap();
    }
    rows.finish().unwrap();
    tx.commit().unwrap();
    let floor = start.elapsed().as_secs_f64();
    let rate = |seconds: f64| entries as f64 / seconds;
    println!(
        "session copy of {entries} entries ({} bytes): file -> database {:.2} s, {:.0} entries/s; \
         database -> file {:.2} s, {:.0} entries/s; floor (a bare binary COPY of the lines \
         into a table without keys) {:.2} s, {:.0} entries/s; into the database ÷ floor {:.2} \
         (throwaway cluster: Unix socket, fsync=off)",
        text.len(),
        into_db,
        rate(into_db),
        out_of_db,
        rate(out_of_db),
        floor,
        rate(floor),
        rate(into_db) / rate(floor)
    );
}
