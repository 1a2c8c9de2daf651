//! The chapter's acceptance set on its fixed tree (docs/contract.md §1), through the slice
//! functions, the memory store and the JSONL store.

use crate::common;

use common::*;
use session::{Entry, EntryKind, Role, Store, messages_on_path, parse_entry, path_to};

fn chapter_entries() -> Vec<Entry> {
    CHAPTER
        .iter()
        .map(|line| parse_entry(line).unwrap())
        .collect()
}

#[test]
fn path_to_meta_cwd_is_the_active_branch_root_first() {
    let entries = chapter_entries();
    let path = path_to(&entries, "meta-cwd").unwrap();
    assert_eq!(
        ids(&path),
        ["u-1", "a-read", "r-read", "a-final", "meta-cwd"]
    );
}

#[test]
fn path_to_a_alt_is_the_sibling_branch_only() {
    let entries = chapter_entries();
    assert_eq!(ids(&path_to(&entries, "a-alt").unwrap()), ["u-1", "a-alt"]);
}

#[test]
fn appending_a_alt_does_not_overwrite_the_other_branch() {
    let entries = chapter_entries();
    // a-alt was appended after a-final, yet a-final's path is unchanged.
    assert_eq!(
        ids(&path_to(&entries, "a-final").unwrap()),
        ["u-1", "a-read", "r-read", "a-final"]
    );
}

#[test]
fn messages_on_path_skips_metadata_and_siblings() {
    let entries = chapter_entries();
    let messages = messages_on_path(&entries, "meta-cwd").unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::ToolResult,
            Role::Assistant
        ]
    );
    assert!(
        messages
            .iter()
            .all(|m| !m.json().contains("我无法读取该文件"))
    );
}

#[test]
fn messages_on_path_keeps_every_tool_call_and_tool_result_field() {
    let entries = chapter_entries();
    let messages = messages_on_path(&entries, "meta-cwd").unwrap();
    // Byte-for-byte the message members of the fixture: toolCall id, name, structured
    // arguments, usage; toolResult id, name, isError, details.
    assert_eq!(messages[1].json(), message_of(A_READ));
    assert_eq!(messages[2].json(), message_of(R_READ));
    assert!(
        messages[1]
            .json()
            .contains(r#""id":"call-1","name":"read","arguments":{"path":"README.md"}"#)
    );
    assert!(
        messages[2]
            .json()
            .contains(r#""toolCallId":"call-1","toolName":"read""#)
    );
    assert!(
        messages[2]
            .json()
            .contains(r#""isError":false,"details":{"path":"README.md","bytes":33}"#)
    );
}

#[test]
fn returned_paths_are_independent_copies() {
    let entries = chapter_entries();
    let mut path = path_to(&entries, "meta-cwd").unwrap();
    path[1] = parse_entry(A_ALT).unwrap();
    path.clear();
    // The input is untouched, and a second projection gives the original values.
    assert_eq!(entries[1].json(), A_READ);
    assert_eq!(path_to(&entries, "meta-cwd").unwrap()[1].json(), A_READ);
}

#[test]
fn meta_cwd_is_on_the_path_but_not_a_message() {
    let entries = chapter_entries();
    let path = path_to(&entries, "meta-cwd").unwrap();
    assert_eq!(path[4].kind(), EntryKind::Metadata);
    assert_eq!(path[4].metadata(), Some(("cwd", r#""/workspace/tiny-pi""#)));
    assert_eq!(messages_on_path(&entries, "meta-cwd").unwrap().len(), 4);
}

fn check_store(store: &Store) {
    assert_eq!(
        ids(&store.path_to("meta-cwd").unwrap()),
        ["u-1", "a-read", "r-read", "a-final", "meta-cwd"]
    );
    assert_eq!(ids(&store.path_to("a-alt").unwrap()), ["u-1", "a-alt"]);
    let messages = store.messages_on_path("meta-cwd").unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1].json(), message_of(A_READ));
    assert_eq!(messages[2].json(), message_of(R_READ));
    let expected_json = format!("[{}]", [U1, A_READ, R_READ, A_FINAL, META_CWD].join(","));
    assert_eq!(
        store.path_to_json("meta-cwd").unwrap(),
        expected_json.as_bytes()
    );
    let expected_messages = format!(
        "[{}]",
        [U1, A_READ, R_READ, A_FINAL]
            .iter()
            .map(|l| message_of(l))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(
        store.messages_on_path_json("meta-cwd").unwrap(),
        expected_messages.as_bytes()
    );
}

#[test]
fn memory_store_restores_the_chapter_tree() {
    let store = Store::memory();
    for (seq, line) in CHAPTER.iter().enumerate() {
        assert_eq!(store.append(line).unwrap().seq, seq as u64);
    }
    check_store(&store);
}

#[test]
fn jsonl_store_restores_the_chapter_tree_after_reopen() {
    let dir = temp_dir("chapter");
    let path = dir.join("s.jsonl");
    {
        let (store, report) = Store::open_jsonl(&path).unwrap();
        assert_eq!(report.state, session::State::Ready);
        for (seq, line) in CHAPTER.iter().enumerate() {
            let receipt = store.append(line).unwrap();
            assert_eq!(receipt.seq, seq as u64);
        }
        check_store(&store);
    }
    assert_eq!(String::from_utf8(read_file(&path)).unwrap(), EXAMPLE_FILE);
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, session::State::Ready);
    assert!(report.warnings.is_empty());
    check_store(&store);
}

#[test]
fn shipped_example_file_restores_the_chapter_tree() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/tiny-pi.jsonl");
    let bytes = read_file(std::path::Path::new(path));
    let recovered = session::recover_jsonl(&bytes).unwrap();
    assert_eq!(recovered.entries.len(), 6);
    assert!(recovered.warnings.is_empty());
    let path = path_to(&recovered.entries, "meta-cwd").unwrap();
    assert_eq!(
        ids(&path),
        ["u-1", "a-read", "r-read", "a-final", "meta-cwd"]
    );
}
