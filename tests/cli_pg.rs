//! The command line reads sessions in a PostgreSQL database: a store location is a
//! file, `postgres://…#SESSION_ID` / `postgresql://…#SESSION_ID`, or `--pg CONNINFO`
//! with the session id; `session ls` lists a database's sessions. Against a real
//! throwaway cluster (tests/common/pg.rs): a session copied into the database reads
//! the same through every form as the file it came from.

#![cfg(feature = "postgres")]

use crate::common;

use std::process::{Command, Output};

use common::pg::{cluster, example, session_id};
use common::*;
use session::Store;

fn session_cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = session_cli(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh database holding the example session, copied from a file: (the file, the
/// database's URI with a Unix socket and a user, its key=value conninfo, the session id).
fn seeded(name: &str) -> (TempDir, String, String, String) {
    let dir = temp_dir(name);
    let file = dir.join("s.jsonl");
    {
        let store = Store::open_jsonl(&file).unwrap().0;
        for line in example() {
            store.append(line).unwrap();
        }
    }
    let conninfo = cluster().fresh_db();
    let db = conninfo.rsplit("dbname=").next().unwrap().to_owned();
    let uri = cluster().uri().replace("@/postgres?", &format!("@/{db}?"));
    let id = session_id("cli");
    ok(&["copy", file.to_str().unwrap(), &format!("{uri}#{id}")]);
    (dir, uri, conninfo, id)
}

#[test]
fn show_context_tree_and_path_read_a_database_session_as_its_file() {
    if !common::pg::available() {
        return;
    }
    let (dir, uri, conninfo, id) = seeded("cli-pg-read");
    let file = dir.join("s.jsonl");
    let file = file.to_str().unwrap();
    let at_uri = format!("{uri}#{id}");
    for verb in [
        &["show", "--json"][..],
        &["path", "--jsonl"],
        &["messages"],
        &["context", "--json"],
        &["context"],
        &["tree"],
        &["tree", "--json"],
        &["leaves"],
        &["children", "u-1"],
    ] {
        let (name, rest) = (verb[0], &verb[1..]);
        let from_file = ok(&[&[name, file][..], rest].concat());
        let from_uri = ok(&[&[name, at_uri.as_str()][..], rest].concat());
        let from_pg = ok(&[&[name, "--pg", conninfo.as_str(), id.as_str()][..], rest].concat());
        assert_eq!(from_uri, from_file, "{verb:?} through the URI");
        assert_eq!(from_pg, from_file, "{verb:?} through --pg");
    }
    // The readable show names where the session is; the rest is the file's.
    let from_file = ok(&["show", file]);
    let from_uri = ok(&["show", &at_uri]);
    assert_eq!(
        from_uri.split_once('\n').unwrap().1,
        from_file.split_once('\n').unwrap().1
    );
    assert!(from_uri.starts_with(&format!("session {id} in the database  state ready")));
}

#[test]
fn ls_lists_the_sessions_of_a_database() {
    if !common::pg::available() {
        return;
    }
    let (_dir, uri, conninfo, id) = seeded("cli-pg-ls");
    let listed = ok(&["ls", &uri]);
    let row = listed.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    // MODIFIED is a date and a time; then entries, the id and the latest leaf.
    assert_eq!(
        &cells[2..],
        [&example().len().to_string(), id.as_str(), "odd"]
    );
    assert_eq!(listed.lines().count(), 2, "{listed}");
    let json = ok(&["ls", "--pg", &conninfo, "--json"]);
    let sessions: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1);
    assert_eq!(sessions[0]["sessionId"], id.as_str());
    assert_eq!(sessions[0]["entries"], example().len());
    assert_eq!(sessions[0]["latestLeafId"], "odd");
}

#[test]
fn a_session_missing_from_the_database_is_not_created_by_reading_it() {
    if !common::pg::available() {
        return;
    }
    let (_dir, uri, conninfo, _) = seeded("cli-pg-missing");
    let out = session_cli(&["show", &format!("{uri}#nobody")]);
    assert_ne!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("No such file"), "{said}");
    let json = ok(&["ls", "--pg", &conninfo, "--json"]);
    let sessions: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1, "nothing was created");
}

#[test]
fn label_writes_to_a_database_session_through_pg() {
    if !common::pg::available() {
        return;
    }
    let (_dir, _uri, conninfo, id) = seeded("cli-pg-label");
    let said = ok(&["label", "--pg", &conninfo, &id, "u-1", "first", "--json"]);
    let said: serde_json::Value = serde_json::from_str(&said).unwrap();
    assert_eq!(said["targetId"], "u-1");
    assert_eq!(said["label"], "first");
    let tree = ok(&["tree", "--pg", &conninfo, &id, "--labels"]);
    assert!(tree.starts_with("u-1 [first]  user: "), "{tree}");
    // A session that is not there is not created by labelling it.
    let out = session_cli(&["label", "--pg", &conninfo, "nobody", "u-1", "x"]);
    assert_ne!(out.status.code(), Some(0));
    let json = ok(&["ls", "--pg", &conninfo, "--json"]);
    let sessions: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1);
}
