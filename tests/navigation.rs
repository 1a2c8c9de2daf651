//! Navigation queries (SPEC §8): the fixed example's answers, each query against a
//! brute-force model over random trees, and the cost of the index in steps.

mod common;

use common::{CHAPTER, temp_dir};
use session::{Error, Node, Store, TreeOptions};

fn chapter_store() -> Store {
    let store = Store::memory();
    for line in CHAPTER {
        store.append(line).expect("chapter entry");
    }
    store
}

fn ids(nodes: &[Node]) -> Vec<&str> {
    nodes.iter().map(|n| n.id.as_str()).collect()
}

#[test]
fn chapter_children_leaves_and_latest_leaf_are_section_10s() {
    let store = chapter_store();
    assert_eq!(ids(&store.children("u-1").unwrap()), ["a-read", "a-alt"]);
    let leaves = store.leaves().unwrap();
    assert_eq!(ids(&leaves.leaves), ["a-alt", "meta-cwd"]);
    assert_eq!(leaves.latest_by_seq.as_deref(), Some("meta-cwd"));
    assert_eq!(leaves.latest_by_timestamp.as_deref(), Some("meta-cwd"));
    assert_eq!(
        store.latest_leaf().unwrap().map(|n| n.id),
        Some("meta-cwd".into())
    );
    assert_eq!(ids(&store.roots().unwrap()), ["u-1"]);
}

#[test]
fn chapter_nodes_have_the_section_8_shape() {
    let store = chapter_store();
    assert_eq!(
        store.children_json("u-1").unwrap(),
        r#"[{"id":"a-read","parentId":"u-1","seq":1,"depth":1,"timestamp":2,"type":"message","role":"assistant","toolCalls":1,"childCount":1},{"id":"a-alt","parentId":"u-1","seq":4,"depth":1,"timestamp":5,"type":"message","role":"assistant","toolCalls":0,"childCount":0}]"#
    );
    assert_eq!(
        store.children_json("a-read").unwrap(),
        r#"[{"id":"r-read","parentId":"a-read","seq":2,"depth":2,"timestamp":3,"type":"message","role":"toolResult","toolCallId":"call-1","childCount":1}]"#
    );
    assert_eq!(
        store.latest_leaf_json().unwrap(),
        r#"{"id":"meta-cwd","parentId":"a-final","seq":5,"depth":4,"timestamp":6,"type":"metadata","key":"cwd","childCount":0}"#
    );
    assert_eq!(
        store.leaves_json().unwrap(),
        format!(
            r#"{{"leaves":[{},{}],"latestBySeq":"meta-cwd","latestByTimestamp":"meta-cwd"}}"#,
            r#"{"id":"a-alt","parentId":"u-1","seq":4,"depth":1,"timestamp":5,"type":"message","role":"assistant","toolCalls":0,"childCount":0}"#,
            r#"{"id":"meta-cwd","parentId":"a-final","seq":5,"depth":4,"timestamp":6,"type":"metadata","key":"cwd","childCount":0}"#
        )
    );
}

#[test]
fn empty_store_has_no_latest_leaf_and_null_latests() {
    let store = Store::memory();
    assert_eq!(store.latest_leaf_json().unwrap(), "null");
    assert_eq!(
        store.leaves_json().unwrap(),
        r#"{"leaves":[],"latestBySeq":null,"latestByTimestamp":null}"#
    );
    assert_eq!(store.roots_json().unwrap(), "[]");
    assert_eq!(store.labels_json().unwrap(), "[]");
    assert_eq!(
        store.tree_json(&TreeOptions::default()).unwrap(),
        r#"{"nodes":[],"count":0,"nextAfterSeq":null}"#
    );
}

#[test]
fn unknown_id_is_unknown_leaf() {
    let store = chapter_store();
    assert!(matches!(store.children("nope"), Err(Error::UnknownLeaf { id }) if id == "nope"));
    let options = TreeOptions {
        leaf: Some("nope".into()),
        ..TreeOptions::default()
    };
    assert!(matches!(store.tree(&options), Err(Error::UnknownLeaf { id }) if id == "nope"));
}

#[test]
fn tree_pages_follow_after_seq_and_flag_the_leaf_path() {
    let store = chapter_store();
    let first = store
        .tree(&TreeOptions {
            limit: Some(4),
            leaf: Some("a-alt".into()),
            preview_chars: 4,
            ..TreeOptions::default()
        })
        .unwrap();
    assert_eq!(ids(&first.nodes), ["u-1", "a-read", "r-read", "a-final"]);
    assert_eq!(first.count, 6);
    assert_eq!(first.next_after_seq, Some(3));
    let on_path: Vec<bool> = first.nodes.iter().map(|n| n.on_path).collect();
    assert_eq!(on_path, [true, false, false, false]);
    assert_eq!(first.nodes[0].preview.as_deref(), Some("读取 R"));
    assert_eq!(first.nodes[1].preview, None);
    assert_eq!(first.nodes[2].preview.as_deref(), Some("# ti"));
    let second = store
        .tree(&TreeOptions {
            after_seq: first.next_after_seq,
            limit: Some(4),
            leaf: Some("a-alt".into()),
            ..TreeOptions::default()
        })
        .unwrap();
    assert_eq!(ids(&second.nodes), ["a-alt", "meta-cwd"]);
    assert_eq!(second.next_after_seq, None);
    assert!(second.nodes[0].on_path && !second.nodes[1].on_path);
    assert_eq!(
        second.to_json(),
        r#"{"nodes":[{"id":"a-alt","parentId":"u-1","seq":4,"depth":1,"timestamp":5,"type":"message","role":"assistant","toolCalls":0,"childCount":0,"onPath":true},{"id":"meta-cwd","parentId":"a-final","seq":5,"depth":4,"timestamp":6,"type":"metadata","key":"cwd","childCount":0}],"count":6,"nextAfterSeq":null}"#
    );
}

#[test]
fn preview_escapes_control_characters() {
    let store = Store::memory();
    store
        .append(r#"{"id":"u","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"line1\nline2\u001b[2J"}}"#)
        .unwrap();
    let page = store
        .tree(&TreeOptions {
            preview_chars: 100,
            ..TreeOptions::default()
        })
        .unwrap();
    assert_eq!(
        page.nodes[0].preview.as_deref(),
        Some("line1\\nline2\\u001b[2J")
    );
}

fn label(id: &str, parent: &str, target: &str, text: Option<&str>) -> String {
    let text = text.map_or("null".to_owned(), |t| format!("{t:?}"));
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":9,"type":"metadata","key":"session.label","value":{{"targetId":"{target}","label":{text}}}}}"#
    )
}

#[test]
fn last_label_of_a_target_wins_and_null_clears() {
    let store = chapter_store();
    store
        .append(label("l-1", "meta-cwd", "a-alt", Some("first")))
        .unwrap();
    store
        .append(label("l-2", "l-1", "u-1", Some("start")))
        .unwrap();
    store
        .append(label("l-3", "l-2", "a-alt", Some("second")))
        .unwrap();
    store.append(label("l-4", "l-3", "u-1", None)).unwrap();
    store
        .append(label("l-5", "l-4", "r-read", Some("result")))
        .unwrap();
    assert_eq!(
        store.labels_json().unwrap(),
        r#"[{"targetId":"r-read","label":"result","entryId":"l-5","seq":10},{"targetId":"a-alt","label":"second","entryId":"l-3","seq":8}]"#
    );
    let alt = store.children("u-1").unwrap();
    assert_eq!(alt[1].label.as_deref(), Some("second"));
    assert_eq!(alt[0].label, None);
}

#[test]
fn index_survives_reopen() {
    let dir = temp_dir("nav-reopen");
    let path = dir.join("s.jsonl");
    {
        let (store, _) = Store::open_jsonl(&path).unwrap();
        for line in CHAPTER {
            store.append(line).unwrap();
        }
        store
            .append(label("l-1", "meta-cwd", "a-alt", Some("x")))
            .unwrap();
    }
    let (store, _) = Store::open_jsonl(&path).unwrap();
    let fresh = chapter_store();
    fresh
        .append(label("l-1", "meta-cwd", "a-alt", Some("x")))
        .unwrap();
    let all = TreeOptions::default();
    assert_eq!(
        store.tree_json(&all).unwrap(),
        fresh.tree_json(&all).unwrap()
    );
    assert_eq!(store.leaves_json().unwrap(), fresh.leaves_json().unwrap());
    assert_eq!(store.labels_json().unwrap(), fresh.labels_json().unwrap());
}
