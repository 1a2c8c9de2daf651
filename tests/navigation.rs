//! Navigation queries (docs/contract.md §8): the fixed example's answers, each query against a
//! brute-force model over random trees, and the cost of the index in steps.

use crate::common;

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
        r#"[{"id":"a-read","parentId":"u-1","seq":1,"depth":1,"timestamp":1733000001000,"type":"message","role":"assistant","toolCalls":1,"childCount":1},{"id":"a-alt","parentId":"u-1","seq":4,"depth":1,"timestamp":1733000004000,"type":"message","role":"assistant","toolCalls":0,"childCount":0}]"#
    );
    assert_eq!(
        store.children_json("a-read").unwrap(),
        r#"[{"id":"r-read","parentId":"a-read","seq":2,"depth":2,"timestamp":1733000002000,"type":"message","role":"toolResult","toolCallId":"call-1","childCount":1}]"#
    );
    assert_eq!(
        store.latest_leaf_json().unwrap(),
        r#"{"id":"meta-cwd","parentId":"a-final","seq":5,"depth":4,"timestamp":1733000005000,"type":"metadata","key":"cwd","childCount":0}"#
    );
    assert_eq!(
        store.leaves_json().unwrap(),
        format!(
            r#"{{"leaves":[{},{}],"latestBySeq":"meta-cwd","latestByTimestamp":"meta-cwd"}}"#,
            r#"{"id":"a-alt","parentId":"u-1","seq":4,"depth":1,"timestamp":1733000004000,"type":"message","role":"assistant","toolCalls":0,"childCount":0}"#,
            r#"{"id":"meta-cwd","parentId":"a-final","seq":5,"depth":4,"timestamp":1733000005000,"type":"metadata","key":"cwd","childCount":0}"#
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
        r#"{"nodes":[{"id":"a-alt","parentId":"u-1","seq":4,"depth":1,"timestamp":1733000004000,"type":"message","role":"assistant","toolCalls":0,"childCount":0,"onPath":true},{"id":"meta-cwd","parentId":"a-final","seq":5,"depth":4,"timestamp":1733000005000,"type":"metadata","key":"cwd","childCount":0}],"count":6,"nextAfterSeq":null}"#
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

/// One generated entry: its parent (an earlier index) and what it is.
#[derive(Clone, Debug)]
struct Planned {
    parent: Option<usize>,
    timestamp: u8,
    /// `Some((target, label))`: a `session.label` entry.
    label: Option<(usize, Option<u8>)>,
}

fn planned_line(i: usize, plan: &Planned) -> String {
    let parent = plan
        .parent
        .map_or("null".to_owned(), |p| format!("\"e-{p}\""));
    let body = match plan.label {
        Some((target, label)) => {
            let label = label.map_or("null".to_owned(), |l| format!("\"L{l}\""));
            format!(
                r#""type":"metadata","key":"session.label","value":{{"targetId":"e-{target}","label":{label}}}"#
            )
        }
        None => format!(r#""type":"message","message":{{"role":"user","content":"t{i}"}}"#),
    };
    format!(
        r#"{{"id":"e-{i}","parentId":{parent},"timestamp":{},{body}}}"#,
        plan.timestamp
    )
}

fn plans() -> impl proptest::strategy::Strategy<Value = Vec<Planned>> {
    use proptest::prelude::*;
    prop::collection::vec(
        (
            any::<Option<u16>>(),
            0u8..6,
            any::<Option<(u16, Option<u8>)>>(),
        ),
        1..48,
    )
    .prop_map(|raw| {
        raw.into_iter()
            .enumerate()
            .map(|(i, (parent, timestamp, label))| Planned {
                parent: parent.filter(|_| i > 0).map(|p| p as usize % i.max(1)),
                timestamp,
                // A label needs an earlier target and is a child like any entry.
                label: label
                    .filter(|_| i > 0)
                    .map(|(t, l)| (t as usize % i, l.map(|l| l % 3))),
            })
            .collect()
    })
}

/// What a node should say, computed by brute force over the loaded entries.
#[derive(Debug, PartialEq)]
struct Expect {
    id: String,
    seq: u64,
    depth: u64,
    child_count: u64,
    label: Option<String>,
    on_path: bool,
}

fn seen(node: &Node) -> Expect {
    Expect {
        id: node.id.clone(),
        seq: node.seq,
        depth: node.depth,
        child_count: node.child_count,
        label: node.label.clone(),
        on_path: node.on_path,
    }
}

/// The brute-force model: `loaded[k]` is the plan index of the entry at seq k.
struct Model<'a> {
    plans: &'a [Planned],
    loaded: Vec<usize>,
}

impl Model<'_> {
    fn seq_of(&self, plan: usize) -> Option<usize> {
        self.loaded.iter().position(|&p| p == plan)
    }

    /// The parent's seq, when the parent is loaded.
    fn parent(&self, seq: usize) -> Option<usize> {
        self.plans[self.loaded[seq]]
            .parent
            .and_then(|p| self.seq_of(p))
    }

    fn children(&self, seq: usize) -> Vec<usize> {
        (0..self.loaded.len())
            .filter(|&c| self.parent(c) == Some(seq))
            .collect()
    }

    fn depth(&self, seq: usize) -> u64 {
        let mut depth = 0;
        let mut at = seq;
        while let Some(up) = self.parent(at) {
            depth += 1;
            at = up;
        }
        depth
    }

    fn label(&self, seq: usize) -> Option<(String, usize)> {
        let mut current = None;
        for (k, &p) in self.loaded.iter().enumerate() {
            if let Some((target, label)) = self.plans[p].label
                && self.seq_of(target) == Some(seq)
                && self.seq_of(target).is_some_and(|t| t < k)
            {
                current = label.map(|l| (format!("L{l}"), k));
            }
        }
        current
    }

    fn expect(&self, seq: usize, path: &[usize]) -> Expect {
        Expect {
            id: format!("e-{}", self.loaded[seq]),
            seq: seq as u64,
            depth: self.depth(seq),
            child_count: self.children(seq).len() as u64,
            label: self.label(seq).map(|(l, _)| l),
            on_path: path.contains(&seq),
        }
    }

    fn path(&self, seq: usize) -> Vec<usize> {
        let mut path = vec![seq];
        let mut at = seq;
        while let Some(up) = self.parent(at) {
            path.push(up);
            at = up;
        }
        path
    }

    /// Checks every query of `store` against the model.
    fn check(&self, store: &Store, page_at: usize, limit: usize, leaf: usize) {
        let n = self.loaded.len();
        let expect = |seqs: Vec<usize>| -> Vec<Expect> {
            seqs.into_iter().map(|s| self.expect(s, &[])).collect()
        };
        for seq in 0..n {
            let id = format!("e-{}", self.loaded[seq]);
            let got: Vec<Expect> = store.children(&id).unwrap().iter().map(seen).collect();
            assert_eq!(got, expect(self.children(seq)), "children of {id}");
        }
        let roots: Vec<usize> = (0..n).filter(|&s| self.parent(s).is_none()).collect();
        let got: Vec<Expect> = store.roots().unwrap().iter().map(seen).collect();
        assert_eq!(got, expect(roots), "roots");
        let leaf_seqs: Vec<usize> = (0..n).filter(|&s| self.children(s).is_empty()).collect();
        let leaves = store.leaves().unwrap();
        let got: Vec<Expect> = leaves.leaves.iter().map(seen).collect();
        assert_eq!(got, expect(leaf_seqs.clone()), "leaves");
        let id = |seq: usize| format!("e-{}", self.loaded[seq]);
        assert_eq!(leaves.latest_by_seq, leaf_seqs.last().map(|&s| id(s)));
        let by_time = leaf_seqs
            .iter()
            .copied()
            .max_by_key(|&s| (self.plans[self.loaded[s]].timestamp, s));
        assert_eq!(leaves.latest_by_timestamp, by_time.map(id));
        let latest = store.latest_leaf().unwrap().map(|n| seen(&n));
        assert_eq!(latest, n.checked_sub(1).map(|s| self.expect(s, &[])));
        // A page.
        let leaf = leaf % n;
        let path = self.path(leaf);
        let page = store
            .tree(&TreeOptions {
                after_seq: page_at.checked_sub(1).map(|s| s as u64),
                limit: Some(limit as u64),
                leaf: Some(id(leaf)),
                preview_chars: 0,
            })
            .unwrap();
        let start = page_at.min(n);
        let end = (start + limit).min(n);
        let want: Vec<Expect> = (start..end).map(|s| self.expect(s, &path)).collect();
        assert_eq!(page.nodes.iter().map(seen).collect::<Vec<_>>(), want);
        assert_eq!(page.count, n as u64);
        let next = (end < n && end > start).then(|| (end - 1) as u64);
        assert_eq!(page.next_after_seq, next);
        // Labels: each labelled target once, by the target's seq.
        let want: Vec<(String, String, String, u64)> = (0..n)
            .filter_map(|s| {
                let (label, by) = self.label(s)?;
                Some((id(s), label, id(by), by as u64))
            })
            .collect();
        let got: Vec<(String, String, String, u64)> = store
            .labels()
            .unwrap()
            .into_iter()
            .map(|l| (l.target_id, l.label, l.entry_id, l.seq))
            .collect();
        assert_eq!(got, want, "labels");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn every_query_matches_a_brute_force_model(
        plans in plans(),
        page_at in 0usize..50,
        limit in 0usize..20,
        leaf in 0usize..50,
        damage in proptest::collection::vec(proptest::prelude::any::<bool>(), 48),
    ) {
        let lines: Vec<String> = plans.iter().enumerate().map(|(i, p)| planned_line(i, p)).collect();
        let model = Model { plans: &plans, loaded: (0..plans.len()).collect() };
        // In memory.
        let store = Store::memory();
        for line in &lines {
            store.append(line).unwrap();
        }
        model.check(&store, page_at, limit, leaf);
        // After reopening the file.
        let dir = temp_dir("nav-model");
        let path = dir.join("s.jsonl");
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let (store, _) = Store::open_jsonl(&path).unwrap();
        model.check(&store, page_at, limit, leaf);
        drop(store);
        // A salvage store: some lines destroyed, their children loaded as orphans.
        let damaged: Vec<String> = lines
            .iter()
            .zip(&damage)
            .map(|(line, &bad)| if bad { "{not json".to_owned() } else { line.clone() })
            .collect();
        let loaded: Vec<usize> = (0..plans.len()).filter(|&i| !damage[i]).collect();
        let mut text = damaged.join("\n");
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let salvage = session::JsonlOptions { salvage: true, ..session::JsonlOptions::default() };
        let (store, _) = Store::open_jsonl_with(&path, &salvage).unwrap();
        if !loaded.is_empty() {
            Model { plans: &plans, loaded }.check(&store, page_at, limit, leaf);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn children_and_latest_leaf_cost_is_bounded_by_the_answer_not_the_store() {
    // A 100,000-entry chain, with three extra children under an entry in the middle.
    let store = Store::memory();
    let entry = |id: &str, parent: Option<&str>| {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        format!(
            r#"{{"id":"{id}","parentId":{parent},"timestamp":1,"type":"message","message":{{"role":"user","content":"x"}}}}"#
        )
    };
    store.append(entry("n-0", None)).unwrap();
    for i in 1..100_000 {
        store
            .append(entry(&format!("n-{i}"), Some(&format!("n-{}", i - 1))))
            .unwrap();
        if i == 50_000 {
            for k in 0..2 {
                store
                    .append(entry(&format!("side-{k}"), Some("n-49999")))
                    .unwrap();
            }
        }
    }
    let before = store.nav_steps().unwrap();
    let children = store.children("n-49999").unwrap();
    assert_eq!(ids(&children), ["n-50000", "side-0", "side-1"]);
    assert_eq!(store.nav_steps().unwrap() - before, 3);
    let before = store.nav_steps().unwrap();
    assert_eq!(
        store.latest_leaf().unwrap().map(|n| n.id),
        Some("n-99999".into())
    );
    assert_eq!(store.nav_steps().unwrap() - before, 1);
    // A 100-node page flagged against a leaf 50,000 deep: the page, the part of the
    // path inside it, and O(log depth) jumps to reach that part, never the whole path.
    let before = store.nav_steps().unwrap();
    let page = store
        .tree(&TreeOptions {
            after_seq: Some(10),
            limit: Some(100),
            leaf: Some("side-1".into()),
            preview_chars: 0,
        })
        .unwrap();
    assert_eq!(page.nodes.len(), 100);
    assert!(
        page.nodes.iter().all(|n| n.on_path),
        "n-11..n-110 are all on the path"
    );
    let steps = store.nav_steps().unwrap() - before;
    let jumps = steps - 100 - 100;
    assert!(jumps <= 2 * 16, "{jumps} jumps for a path 50,001 long");
}

/// §10's entries 7–12, appended after the chapter's six.
const SECTION_10: [&str; 6] = [
    r#"{"id":"u-2","parentId":"meta-cwd","timestamp":7,"type":"message","message":{"role":"user","content":"再读 package.json，告诉我版本"}}"#,
    r#"{"id":"a-pkg","parentId":"u-2","timestamp":8,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-2","name":"read","arguments":{"path":"package.json"}}]}}"#,
    r#"{"id":"r-pkg","parentId":"a-pkg","timestamp":9,"type":"message","message":{"role":"toolResult","toolCallId":"call-2","toolName":"read","content":[{"type":"text","text":"{\"version\":\"0.1.0\"}"}],"isError":false}}"#,
    r#"{"id":"a-ver","parentId":"r-pkg","timestamp":10,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"版本是 0.1.0"}]}}"#,
    r#"{"id":"c-1","parentId":"a-ver","timestamp":11,"type":"compaction","summary":"User asked for the project name; it is tiny-pi.","firstKeptEntryId":"u-2","tokensBefore":1200}"#,
    r#"{"id":"u-3","parentId":"c-1","timestamp":12,"type":"message","message":{"role":"user","content":"还有什么依赖？"}}"#,
];

#[test]
fn section_10_tree_shows_the_compaction_node_and_the_latest_leaf() {
    let store = chapter_store();
    for line in SECTION_10 {
        store.append(line).unwrap();
    }
    assert_eq!(ids(&store.children("u-1").unwrap()), ["a-read", "a-alt"]);
    let leaves = store.leaves().unwrap();
    assert_eq!(ids(&leaves.leaves), ["a-alt", "u-3"]);
    assert_eq!(leaves.latest_by_seq.as_deref(), Some("u-3"));
    let page = store
        .tree(&TreeOptions {
            after_seq: Some(9),
            leaf: Some("u-3".into()),
            preview_chars: 9,
            ..TreeOptions::default()
        })
        .unwrap();
    assert_eq!(
        page.to_json(),
        r#"{"nodes":[{"id":"c-1","parentId":"a-ver","seq":10,"depth":9,"timestamp":11,"type":"compaction","firstKeptEntryId":"u-2","childCount":1,"preview":"User aske","onPath":true},{"id":"u-3","parentId":"c-1","seq":11,"depth":10,"timestamp":12,"type":"message","role":"user","childCount":0,"preview":"还有什么依赖？","onPath":true}],"count":12,"nextAfterSeq":null}"#
    );
}

#[test]
fn a_label_for_an_unknown_target_is_refused_and_labels_nothing() {
    let store = chapter_store();
    assert!(matches!(
        store.append(label("l-1", "meta-cwd", "nope", Some("x"))),
        Err(Error::UnknownLeaf { id }) if id == "nope"
    ));
    assert_eq!(store.labels().unwrap(), []);
}
