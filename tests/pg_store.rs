//! The PostgreSQL store (docs/contract.md §14) against a real server: a throwaway
//! cluster that this binary starts once (tests/common/pg.rs) and stops at exit.
//!
//! The store's contract is checked against a memory store fed the same appends: every
//! read of the one must equal the other's. Then what only a shared store has: handles
//! in several processes, a client killed mid-append, a server restart, scoping by
//! session id, and no password in any error.

// The whole file needs the store's feature (and the bench its client crate).
#![cfg(feature = "postgres")]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::pg::{PASSWORD, cluster, session_id};
use common::*;
use session::{ContextOptions, Error, PgListOptions, PgOptions, Store, TreeOptions};

const U2: &str = r#"{"id":"u-2","parentId":"meta-cwd","timestamp":7,"type":"message","message":{"role":"user","content":"再读 package.json，告诉我版本"}}"#;
const A_PKG: &str = r#"{"id":"a-pkg","parentId":"u-2","timestamp":8,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-2","name":"read","arguments":{"path":"package.json"}}]}}"#;
const R_PKG: &str = r#"{"id":"r-pkg","parentId":"a-pkg","timestamp":9,"type":"message","message":{"role":"toolResult","toolCallId":"call-2","toolName":"read","content":[{"type":"text","text":"{\"version\":\"0.1.0\"}"}],"isError":false}}"#;
const A_VER: &str = r#"{"id":"a-ver","parentId":"r-pkg","timestamp":10,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"版本是 0.1.0"}]}}"#;
const C1: &str = r#"{"id":"c-1","parentId":"a-ver","timestamp":11,"type":"compaction","summary":"User asked for the project name; it is tiny-pi.","firstKeptEntryId":"u-2","tokensBefore":1200}"#;
const U3: &str = r#"{"id":"u-3","parentId":"c-1","timestamp":12,"type":"message","message":{"role":"user","content":"还有什么依赖？"}}"#;
const LABEL: &str = r#"{"id":"l-1","parentId":"u-3","timestamp":13,"type":"metadata","key":"session.label","value":{"targetId":"a-alt","label":"alt"}}"#;
/// Key order and escapes that a jsonb column would not keep.
const ODD: &str = r#"{"timestamp":14,"type":"metadata","parentId":"l-1","id":"odd","key":"z","value":{"b":1,"a":"\ud83d \u0000","a2":1.50}}"#;

fn example() -> Vec<&'static str> {
    let mut lines = CHAPTER.to_vec();
    lines.extend([U2, A_PKG, R_PKG, A_VER, C1, U3, LABEL, ODD]);
    lines
}

fn open(session: &str) -> Store {
    Store::open_pg(&cluster().conninfo(), session, &PgOptions::default())
        .unwrap()
        .0
}

/// Every read the contract defines, as JSON text, for `leaves`.
fn reads(store: &Store, leaves: &[&str]) -> Vec<String> {
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    let mut out = vec![
        text(store.entries_json().unwrap()),
        text(store.read_json().unwrap()),
        store.roots_json().unwrap(),
        store.leaves_json().unwrap(),
        store.latest_leaf_json().unwrap(),
        store.labels_json().unwrap(),
        store
            .tree_json(&TreeOptions {
                preview_chars: 20,
                ..TreeOptions::default()
            })
            .unwrap(),
    ];
    for leaf in leaves {
        out.push(text(store.path_to_json(leaf).unwrap()));
        out.push(text(store.messages_on_path_json(leaf).unwrap()));
        out.push(store.children_json(leaf).unwrap());
        out.push(
            store
                .build_context(leaf, &ContextOptions::default(), None)
                .map_or_else(|e| format!("{e:?}"), |c| c.to_json()),
        );
    }
    out
}

#[test]
fn the_postgres_store_answers_every_read_as_the_memory_store_does() {
    if !common::pg::available() {
        return;
    }
    let memory = Store::memory();
    let pg = open(&session_id("contract"));
    for line in example() {
        let a = memory.append(line).unwrap();
        let b = pg.append(line).unwrap();
        assert_eq!(a, b, "{line}");
    }
    let leaves = [
        "u-1", "a-alt", "a-final", "meta-cwd", "a-ver", "c-1", "u-3", "l-1", "odd",
    ];
    assert_eq!(reads(&memory, &leaves), reads(&pg, &leaves));
}

#[test]
fn entries_are_stored_as_their_line_byte_for_byte() {
    if !common::pg::available() {
        return;
    }
    let session = session_id("bytes");
    let pg = open(&session);
    for line in example() {
        pg.append(line).unwrap();
    }
    let stored = cluster().sql(
        "postgres",
        &format!("SELECT line FROM libsession_entries WHERE session_id = '{session}' ORDER BY seq"),
    );
    let memory = Store::memory();
    let mut expected = String::new();
    for line in example() {
        memory.append(line).unwrap();
    }
    for entry in memory.entries().unwrap() {
        expected.push_str(entry.json());
        expected.push('\n');
    }
    assert_eq!(stored, expected);
    assert!(stored.contains(r#"{"b":1,"a":"\ud83d \u0000","a2":1.50}"#));
}

#[test]
fn a_duplicate_id_with_other_bytes_is_refused_and_changes_nothing() {
    if !common::pg::available() {
        return;
    }
    let pg = open(&session_id("dup"));
    pg.append(U1).unwrap();
    let other = user("u-1", None, "another text");
    match pg.append(&other) {
        Err(Error::DuplicateId { id, .. }) => assert_eq!(id, "u-1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(pg.len().unwrap(), 1);
    assert_eq!(pg.append(A_READ).unwrap().seq, 1);
}

#[test]
fn a_missing_parent_is_refused_and_uses_no_seq() {
    if !common::pg::available() {
        return;
    }
    let pg = open(&session_id("parent"));
    pg.append(U1).unwrap();
    match pg.append(R_READ) {
        Err(Error::MissingParent {
            child_id,
            parent_id,
            ..
        }) => assert_eq!(
            (child_id.as_str(), parent_id.as_str()),
            ("r-read", "a-read")
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(pg.append(A_READ).unwrap().seq, 1);
    let invalid = r#"{"id":"c-9","parentId":"a-read","timestamp":1,"type":"compaction","summary":"s","firstKeptEntryId":"nope","tokensBefore":1}"#;
    assert!(matches!(
        pg.append(invalid),
        Err(Error::InvalidCompaction { .. })
    ));
    assert_eq!(pg.len().unwrap(), 2);
}

#[test]
fn an_identical_entry_already_committed_is_accepted_as_itself() {
    if !common::pg::available() {
        return;
    }
    let session = session_id("same");
    let first = open(&session);
    for line in [U1, A_READ, R_READ] {
        first.append(line).unwrap();
    }
    let second = open(&session);
    let receipt = second.append(A_READ).unwrap();
    assert_eq!((receipt.id.as_str(), receipt.seq), ("a-read", 1));
    assert_eq!(second.len().unwrap(), 3);
}

#[test]
fn every_handle_sees_every_commit_in_one_seq_order() {
    if !common::pg::available() {
        return;
    }
    let session = session_id("two");
    let (a, b) = (open(&session), open(&session));
    assert_eq!(a.append(U1).unwrap().seq, 0);
    assert_eq!(b.append(A_READ).unwrap().seq, 1);
    assert_eq!(a.append(A_ALT).unwrap().seq, 2);
    // b never saw a-alt commit before this call: it catches up first.
    assert_eq!(
        b.children_json("u-1").unwrap(),
        a.children_json("u-1").unwrap()
    );
    assert_eq!(a.entries_json().unwrap(), b.entries_json().unwrap());
    let c = open(&session);
    assert_eq!(c.entries_json().unwrap(), a.entries_json().unwrap());
}

#[test]
fn a_session_id_cannot_reach_another_session() {
    if !common::pg::available() {
        return;
    }
    let victim = session_id("victim");
    let store = open(&victim);
    store.append(U1).unwrap();
    for id in [
        format!("{victim}' OR '1'='1"),
        format!("{victim}%"),
        format!("{victim}_"),
        "x'; DROP TABLE libsession_entries; --".to_owned(),
        victim.to_uppercase(),
    ] {
        let other = open(&id);
        assert_eq!(other.len().unwrap(), 0, "{id}");
        // The same id in another session is not a duplicate, and its parent is not here.
        other.append(U1).unwrap();
        assert!(matches!(
            other.append(FOREIGN),
            Err(Error::MissingParent { .. })
        ));
    }
    assert_eq!(store.len().unwrap(), 1);
    assert_eq!(open(&victim).len().unwrap(), 1);
    for bad in ["", "a\0b"] {
        match Store::open_pg(&cluster().conninfo(), bad, &PgOptions::default()) {
            Err(Error::InvalidArgument { argument, .. }) => assert_eq!(argument, "session_id"),
            other => panic!("{bad:?}: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn no_error_holds_the_password_of_the_connection_string() {
    if !common::pg::available() {
        return;
    }
    let c = cluster();
    let wrong = "Wr0ng-pa55word-77";
    let cases = [
        c.conninfo().replace(PASSWORD, wrong),
        format!("host=/nonexistent-libsession port=5432 user=postgres password={wrong}"),
        format!("host=127.0.0.1 port=1 user=postgres password={wrong} connect_timeout=2"),
        format!("postgresql://postgres:{wrong}@/postgres?host=/nonexistent-libsession"),
        format!("host=/tmp password={wrong} sslmode=bogus"),
        format!("password={wrong} port=notaport"),
    ];
    for conninfo in &cases {
        let error = match Store::open_pg(conninfo, "s", &PgOptions::default()) {
            Err(e) => e,
            Ok(_) => panic!("{conninfo} opened"),
        };
        let listed = session::list_pg_sessions(conninfo, &PgListOptions::default())
            .expect_err("listing with a wrong connection string");
        for text in [
            format!("{error:?}"),
            error.to_string(),
            format!("{listed:?}"),
        ] {
            assert!(!text.contains(wrong), "{text}");
        }
    }
    // The message still says what went wrong.
    let error = Store::open_pg(&cases[0], "s", &PgOptions::default())
        .err()
        .unwrap();
    assert!(
        error.to_string().contains("password authentication failed"),
        "{error}"
    );
}

#[test]
fn a_schema_newer_than_the_library_is_refused() {
    if !common::pg::available() {
        return;
    }
    let c = cluster();
    let conninfo = c.fresh_db();
    let db = conninfo.rsplit("dbname=").next().unwrap().to_owned();
    drop(Store::open_pg(&conninfo, "s", &PgOptions::default()).unwrap());
    assert_eq!(c.sql(&db, "SELECT version FROM libsession_schema"), "1\n");
    c.sql(&db, "UPDATE libsession_schema SET version = 2");
    let error = Store::open_pg(&conninfo, "s", &PgOptions::default())
        .err()
        .unwrap();
    assert!(matches!(error, Error::Io(_)), "{error:?}");
    assert!(error.to_string().contains("version 2"), "{error}");
}

#[test]
fn the_listing_names_each_session_with_its_count_and_latest_entry() {
    if !common::pg::available() {
        return;
    }
    let c = cluster();
    let conninfo = c.fresh_db();
    let (a, b) = (
        Store::open_pg(&conninfo, "a", &PgOptions::default())
            .unwrap()
            .0,
        Store::open_pg(&conninfo, "b", &PgOptions::default())
            .unwrap()
            .0,
    );
    for line in CHAPTER {
        a.append(line).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(5));
    b.append(U1).unwrap();
    let listed = session::list_pg_sessions(&conninfo, &PgListOptions::default()).unwrap();
    let json = session::pg_sessions_json(&listed);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let sessions = value["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{json}");
    assert_eq!(sessions[0]["sessionId"], "b");
    assert_eq!(sessions[1]["sessionId"], "a");
    assert_eq!(sessions[1]["entries"], 6);
    assert_eq!(sessions[1]["latestLeafId"], "meta-cwd");
    assert!(sessions[1]["modifiedMs"].as_u64().unwrap() > 0);
    let one = session::list_pg_sessions(&conninfo, &PgListOptions { limit: Some(1) }).unwrap();
    assert_eq!(one.len(), 1);
}

// --- Several processes ------------------------------------------------------------------------

/// The child side of the multi-process tests: appends when the environment says so,
/// printing each receipt as `id seq`. Does nothing in a normal run.
#[test]
fn child_appender() {
    let (Ok(conninfo), Ok(session), Ok(name), Ok(count)) = (
        std::env::var("PG_CHILD_CONNINFO"),
        std::env::var("PG_CHILD_SESSION"),
        std::env::var("PG_CHILD_NAME"),
        std::env::var("PG_CHILD_COUNT"),
    ) else {
        return;
    };
    let count: usize = count.parse().unwrap();
    let store = Store::open_pg(&conninfo, &session, &PgOptions::default())
        .unwrap()
        .0;
    let mut out = std::io::stdout().lock();
    let mut own: Vec<String> = Vec::new();
    for i in 0..count {
        let id = format!("{name}-{i}");
        // Mostly a chain; every 97th a branch from an earlier own entry; every 50th a
        // child of whatever the session's latest entry is (maybe the other process's).
        let parent = if i == 0 {
            "root".to_owned()
        } else if i % 50 == 0 {
            store.latest_leaf().unwrap().unwrap().id
        } else if i % 97 == 0 {
            own[i / 2].clone()
        } else {
            own[i - 1].clone()
        };
        let receipt = store.append(user(&id, Some(&parent), &id)).unwrap();
        use std::io::Write;
        writeln!(out, "receipt {} {}", receipt.id, receipt.seq).unwrap();
        own.push(id);
    }
}

fn spawn_appender(session: &str, name: &str, count: usize) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_appender",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PG_CHILD_CONNINFO", cluster().conninfo())
        .env("PG_CHILD_SESSION", session)
        .env("PG_CHILD_NAME", name)
        .env("PG_CHILD_COUNT", count.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `id seq` lines a child printed.
fn receipts(child: std::process::Child) -> Vec<(String, u64)> {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    output
        .stdout
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| {
            let (id, seq) = l.split("receipt ").nth(1)?.split_once(' ')?;
            Some((id.to_owned(), seq.parse().ok()?))
        })
        .collect()
}

#[test]
fn two_processes_append_ten_thousand_each_with_branches_and_every_reader_agrees() {
    if !common::pg::available() {
        return;
    }
    const N: usize = 10_000;
    let session = session_id("procs");
    open(&session).append(user("root", None, "root")).unwrap();
    let children = [
        spawn_appender(&session, "p", N),
        spawn_appender(&session, "q", N),
    ];
    let mut all: Vec<(String, u64)> = children.into_iter().flat_map(receipts).collect();
    assert_eq!(all.len(), 2 * N);
    all.sort_by_key(|(_, seq)| *seq);
    let seqs: Vec<u64> = all.iter().map(|(_, s)| *s).collect();
    assert_eq!(seqs, (1..=2 * N as u64).collect::<Vec<_>>());
    let (one, two) = (open(&session), open(&session));
    let entries = one.entries().unwrap();
    for (id, seq) in &all {
        assert_eq!(entries[*seq as usize].id(), id);
    }
    assert_eq!(one.entries_json().unwrap(), two.entries_json().unwrap());
    assert_eq!(one.leaves_json().unwrap(), two.leaves_json().unwrap());
    // Branches and cross-process parents exist, and every path reads.
    let leaves = one.leaves().unwrap();
    assert!(leaves.leaves.len() > 2, "{}", leaves.leaves.len());
    for leaf in &leaves.leaves {
        assert_eq!(
            one.path_to_json(&leaf.id).unwrap(),
            two.path_to_json(&leaf.id).unwrap()
        );
    }
}

#[test]
fn a_client_killed_mid_append_leaves_nothing_half_done() {
    if !common::pg::available() {
        return;
    }
    let session = session_id("kill");
    open(&session).append(user("root", None, "root")).unwrap();
    let mut child = spawn_appender(&session, "k", 1_000_000);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = 0;
    while printed < 300 {
        printed += usize::from(lines.next().unwrap().unwrap().contains("receipt "));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let printed = printed
        + lines
            .map_while(Result::ok)
            .filter(|l| l.contains("receipt "))
            .count();
    let store = open(&session);
    let count = store.len().unwrap();
    // Every acknowledged append is there, at most one more (committed, not yet printed).
    assert!(
        count >= printed && count <= printed + 2,
        "{count} {printed}"
    );
    let c = cluster();
    let counted = c.sql(
        "postgres",
        &format!(
            "SELECT count(*), max(seq), (SELECT entries FROM libsession_sessions WHERE session_id = '{session}') \
             FROM libsession_entries WHERE session_id = '{session}'"
        ),
    );
    assert_eq!(counted, format!("{count}|{}|{count}\n", count - 1));
    store.append(user("after", Some("root"), "after")).unwrap();
}

#[test]
fn a_server_restart_gives_io_errors_then_a_reopened_store_works() {
    if !common::pg::available() {
        return;
    }
    // Its own server: a restart cuts every connection.
    let private = common::pg::Private::start();
    let conninfo = private.0.conninfo();
    let open = |session: &str| {
        Store::open_pg(&conninfo, session, &PgOptions::default())
            .unwrap()
            .0
    };
    let session = session_id("restart");
    let store = open(&session);
    store.append(U1).unwrap();
    private.0.restart();
    let error = store.append(A_READ).unwrap_err();
    assert!(matches!(error, Error::Io(_)), "{error:?}");
    // Tainted: every later call reports that failure, and does no I/O.
    assert!(matches!(store.append(A_ALT), Err(Error::Tainted { .. })));
    assert!(matches!(store.len(), Err(Error::Tainted { .. })));
    let reopened = open(&session);
    // Whether or not A_READ committed, appending it again says where it is.
    let receipt = reopened.append(A_READ).unwrap();
    assert_eq!(receipt.seq, 1);
    assert_eq!(reopened.append(R_READ).unwrap().seq, 2);
}

// --- TLS -------------------------------------------------------------------------------------

/// Whether the server sees the connection named `application` as TLS (pg_stat_ssl).
fn over_tls(c: &common::pg::Cluster, application: &str) -> bool {
    let sql = format!(
        "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = '{application}'"
    );
    c.sql("postgres", &sql) == "t\n"
}

#[test]
fn sslmode_works_as_libpq_against_a_server_that_takes_tls_only() {
    // Rule (§14): `sslmode` as libpq: disable/prefer/require/verify-ca/verify-full,
    // `sslrootcert` a PEM file; a failure is `io` and never holds the password.
    if !common::pg::available() || !common::pg::openssl_available() {
        return;
    }
    let private = common::pg::Private::start_tls();
    let c = &private.0;
    let cert = c.cert.as_ref().unwrap().display().to_string();
    let tcp = |host: &str, tls: &str| c.tcp_conninfo(host, tls);
    let open = |conninfo: &str, session: &str| {
        Store::open_pg(conninfo, session, &PgOptions::default()).map(|(store, _)| store)
    };
    let refused = |conninfo: &str, why: &str| {
        let error = match open(conninfo, "s") {
            Err(e) => e,
            Ok(_) => panic!("{why}: {conninfo} opened"),
        };
        assert!(matches!(error, Error::Io(_)), "{why}: {error:?}");
        for text in [format!("{error:?}"), error.to_string()] {
            assert!(!text.contains(PASSWORD), "{why}: {text}");
        }
        error.to_string()
    };

    // require: TLS without a check of the certificate; opens, appends, reads back.
    let session = session_id("tls");
    let store = open(
        &tcp("127.0.0.1", "sslmode=require application_name=tls-require"),
        &session,
    )
    .unwrap();
    for line in [U1, A_READ, R_READ] {
        store.append(line).unwrap();
    }
    assert!(over_tls(c, "tls-require"));
    let again = open(&tcp("127.0.0.1", "sslmode=require"), &session).unwrap();
    assert_eq!(again.entries_json().unwrap(), store.entries_json().unwrap());
    assert_eq!(again.len().unwrap(), 3);

    // prefer (the default): TLS, as the server offers it.
    let preferred = open(&tcp("127.0.0.1", "application_name=tls-prefer"), &session).unwrap();
    assert_eq!(preferred.len().unwrap(), 3);
    assert!(over_tls(c, "tls-prefer"));

    // verify-full with the root file and the certificate's name: opens (key=value and URI).
    let full = format!("sslmode=verify-full sslrootcert='{cert}'");
    let verified = open(&tcp("localhost", &full), &session).unwrap();
    assert_eq!(verified.len().unwrap(), 3);
    let uri = format!(
        "postgresql://postgres:{PASSWORD}@localhost:{}/postgres?sslmode=verify-full&sslrootcert={cert}",
        c.port
    );
    assert_eq!(open(&uri, &session).unwrap().len().unwrap(), 3);
    // verify-ca checks the chain, not the name: 127.0.0.1 is not in the certificate.
    let ca = format!("sslmode=verify-ca sslrootcert='{cert}'");
    assert_eq!(
        open(&tcp("127.0.0.1", &ca), &session)
            .unwrap()
            .len()
            .unwrap(),
        3
    );

    // verify-full: the wrong name, or no root that signed the certificate, fails.
    let text = refused(&tcp("127.0.0.1", &full), "verify-full with another name");
    assert!(text.contains("certificate"), "{text}");
    let text = refused(
        &tcp("localhost", "sslmode=verify-full"),
        "verify-full without the root",
    );
    assert!(text.contains("certificate"), "{text}");
    // A server that takes TCP over TLS only refuses a plain connection.
    let text = refused(
        &tcp("127.0.0.1", "sslmode=disable"),
        "disable on a hostssl-only server",
    );
    assert!(text.contains("pg_hba.conf"), "{text}");
    // A root file that is not there fails the open too.
    refused(
        &tcp(
            "localhost",
            "sslmode=verify-full sslrootcert=/nonexistent-libsession.pem",
        ),
        "a missing root file",
    );
    // Client certificates are not supported: the conninfo is refused as it stands.
    assert!(matches!(
        open(&tcp("localhost", "sslcert=/x.pem sslkey=/x.key"), "s"),
        Err(Error::InvalidArgument { .. })
    ));
    // Over the Unix socket sslmode is ignored, as libpq does (the server offers no TLS
    // there).
    let socket = c.conninfo() + " sslmode=require";
    assert_eq!(open(&socket, &session).unwrap().len().unwrap(), 3);
}

#[test]
fn verify_full_checks_a_chain_from_a_ca_in_the_root_file() {
    // Rule (§14): verify-ca/verify-full check the chain against `sslrootcert`; verify-full
    // also the host name; `require` with a root file checks the chain (as libpq).
    if !common::pg::available() || !common::pg::openssl_available() {
        return;
    }
    let private = common::pg::Private::start_tls_with_ca();
    let c = &private.0;
    let ca = c.ca.as_ref().unwrap().display().to_string();
    let cert = c.cert.as_ref().unwrap().display().to_string();
    let tcp = |host: &str, tls: &str| c.tcp_conninfo(host, tls);
    let open = |conninfo: &str| Store::open_pg(conninfo, "s", &PgOptions::default());
    for (host, tls) in [
        ("localhost", format!("sslmode=verify-full sslrootcert={ca}")),
        ("127.0.0.1", format!("sslmode=verify-ca sslrootcert={ca}")),
        ("127.0.0.1", format!("sslmode=require sslrootcert={ca}")),
    ] {
        let conninfo = tcp(host, &tls);
        assert!(open(&conninfo).is_ok(), "{conninfo}");
    }
    // The server's own certificate in the root file is trusted as pinned.
    let pinned = tcp(
        "localhost",
        &format!("sslmode=verify-full sslrootcert={cert}"),
    );
    assert!(open(&pinned).is_ok(), "{pinned}");
    // The wrong name under verify-full; a root file with another CA under verify-ca and
    // require.
    let other = tempfile::tempdir().unwrap();
    let (other_ca, other_key) = (other.path().join("ca.crt"), other.path().join("ca.key"));
    common::pg::self_signed(
        "/CN=other CA",
        &[],
        &other_key.display().to_string(),
        &other_ca.display().to_string(),
    );
    let other_ca = other_ca.display().to_string();
    for (host, tls) in [
        ("127.0.0.1", format!("sslmode=verify-full sslrootcert={ca}")),
        (
            "localhost",
            format!("sslmode=verify-ca sslrootcert={other_ca}"),
        ),
        (
            "localhost",
            format!("sslmode=require sslrootcert={other_ca}"),
        ),
    ] {
        let conninfo = tcp(host, &tls);
        let error = match open(&conninfo) {
            Err(e) => e,
            Ok(_) => panic!("{conninfo} opened"),
        };
        assert!(matches!(error, Error::Io(_)), "{error:?}");
        assert!(!error.to_string().contains(PASSWORD), "{error}");
    }
}

// --- session copy -----------------------------------------------------------------------------

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

// --- Benchmark (on demand) ------------------------------------------------------------------

/// Appends per second for 1 and 8 clients (each its own store, all on one session, as
/// workers of one hosted agent would be), against the floor: a bare single-row INSERT
/// transaction on the same server with as many connections. On demand, never a timed
/// test: `cargo test --release --test pg_store -- --ignored --nocapture bench_appends`
/// (PG_BENCH_APPENDS per client, default 2000). It prints figures and asserts nothing
/// about them.
#[test]
#[ignore = "a benchmark: run on demand"]
fn bench_appends_per_second_for_1_and_8_clients_against_a_bare_insert() {
    if !common::pg::available() {
        return;
    }
    let per_client: usize = std::env::var("PG_BENCH_APPENDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let c = cluster();
    let conninfo = c.conninfo();
    c.sql(
        "postgres",
        "CREATE TABLE IF NOT EXISTS bench_floor (k bigserial PRIMARY KEY, line text NOT NULL)",
    );
    let line = user(
        "x",
        Some("root"),
        "a user message of a typical length, sixty bytes",
    );
    for clients in [1usize, 8] {
        let session = session_id("bench");
        open(&session).append(user("root", None, "root")).unwrap();
        let start = std::time::Instant::now();
        std::thread::scope(|scope| {
            for k in 0..clients {
                let (conninfo, session) = (&conninfo, &session);
                scope.spawn(move || {
                    let store = Store::open_pg(conninfo, session, &PgOptions::default())
                        .unwrap()
                        .0;
                    for i in 0..per_client {
                        let id = format!("c{k}-{i}");
                        store.append(user(&id, Some("root"), &id)).unwrap();
                    }
                });
            }
        });
        let store_rate = (clients * per_client) as f64 / start.elapsed().as_secs_f64();
        let start = std::time::Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..clients {
                let (conninfo, line) = (&conninfo, &line);
                scope.spawn(move || {
                    let mut client = postgres::Client::connect(conninfo, postgres::NoTls).unwrap();
                    let insert = client
                        .prepare("INSERT INTO bench_floor (line) VALUES ($1)")
                        .unwrap();
                    for _ in 0..per_client {
                        let mut tx = client.transaction().unwrap();
                        tx.execute(&insert, &[line]).unwrap();
                        tx.commit().unwrap();
                    }
                });
            }
        });
        let floor_rate = (clients * per_client) as f64 / start.elapsed().as_secs_f64();
        println!(
            "{clients} client(s) x {per_client}: libsession pg store {store_rate:.0} appends/s; \
             bare INSERT transaction {floor_rate:.0}/s; ratio {:.2} \
             (throwaway cluster: Unix socket, fsync=off)",
            store_rate / floor_rate
        );
    }
}

/// `build_context` of a 50-message kept part on a 100,000-entry session in the
/// PostgreSQL store: in steady state (the store open, one more append, then the context)
/// and at resume (a new handle's open + the context). On demand, never a timed test:
/// `cargo test --release --test pg_store -- --ignored --nocapture bench_build_context`
/// (PG_BENCH_ENTRIES, default 100000). It prints figures and asserts only that the
/// context keeps what the compaction kept.
#[test]
#[ignore = "a benchmark: run on demand"]
fn bench_build_context_of_a_50_message_kept_part_on_a_100k_entry_session() {
    if !common::pg::available() {
        return;
    }
    let entries: usize = std::env::var("PG_BENCH_ENTRIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let c = cluster();
    let conninfo = c.conninfo();
    let session = session_id("bench-context");
    let options = PgOptions::from_json(r#"{"durability":"none"}"#).unwrap();
    let store = Store::open_pg(&conninfo, &session, &options).unwrap().0;
    let start = std::time::Instant::now();
    let mut parent: Option<String> = None;
    for i in 0..entries {
        let id = format!("e{i}");
        let text = format!("message {i}: a user turn or an answer of a typical length");
        let line = match i % 2 {
            0 => user(&id, parent.as_deref(), &text),
            _ => format!(
                r#"{{"id":"{id}","parentId":"{}","timestamp":1,"type":"message","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}}}"#,
                parent.as_deref().unwrap_or_default()
            ),
        };
        store.append(&line).unwrap();
        parent = Some(id);
    }
    let filled = start.elapsed();
    // A compaction under the last entry keeping the last 50 messages (from a user one).
    let first_kept = format!("e{}", entries - 50);
    let last = parent.unwrap_or_default();
    store
        .append(format!(
            r#"{{"id":"c","parentId":"{last}","timestamp":1,"type":"compaction","summary":"Earlier work.","firstKeptEntryId":"{first_kept}","tokensBefore":100000}}"#
        ))
        .unwrap();
    let defaults = ContextOptions::default();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut steady = Vec::new();
    let mut leaf = "c".to_owned();
    for i in 0..9 {
        let id = format!("after-{i}");
        store
            .append(user(&id, Some(&leaf), "one more turn"))
            .unwrap();
        leaf = id;
        let t = std::time::Instant::now();
        let context = store.build_context(&leaf, &defaults, None).unwrap();
        steady.push(t.elapsed().as_secs_f64());
        assert_eq!(context.kept_entry_ids.len(), 50 + i + 1);
    }
    drop(store);
    let mut resume = Vec::new();
    let mut open_only = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let store = Store::open_pg(&conninfo, &session, &options).unwrap().0;
        open_only.push(t.elapsed().as_secs_f64());
        store.build_context(&leaf, &defaults, None).unwrap();
        resume.push(t.elapsed().as_secs_f64());
    }
    println!(
        "PostgreSQL store, {entries} entries appended in {:.1} s; 50 kept messages: \
         build_context after one more append {:.3} ms (median of 9); resume: open {:.1} ms, \
         open + build_context {:.1} ms (median of 5) (throwaway cluster: Unix socket, fsync=off)",
        filled.as_secs_f64(),
        median(steady) * 1e3,
        median(open_only) * 1e3,
        median(resume) * 1e3
    );
}
