//! `build_context`, compaction and label rules, open roles (docs/contract.md §6, §7, §10).
//!
//! Every valid tree is checked through both forms — the pure function over an entries
//! array and the store over its index — and the two must agree.

use crate::common;

use common::*;
use proptest::prelude::*;
use session::{
    BudgetReason, CompactionFault, Context, ContextOptions, EntryKind, Error, Hint, MemoryOptions,
    OnDefect, PairingDefect, Role, Store, build_context, build_context_with, messages_on_path,
    parse_entries, parse_entry, path_to,
};

// --- The extended example (docs/contract.md §10) -------------------------------------------------

const U2: &str = r#"{"id":"u-2","parentId":"meta-cwd","timestamp":7,"type":"message","message":{"role":"user","content":"再读 package.json，告诉我版本"}}"#;
const A_PKG: &str = r#"{"id":"a-pkg","parentId":"u-2","timestamp":8,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-2","name":"read","arguments":{"path":"package.json"}}]}}"#;
const R_PKG: &str = r#"{"id":"r-pkg","parentId":"a-pkg","timestamp":9,"type":"message","message":{"role":"toolResult","toolCallId":"call-2","toolName":"read","content":[{"type":"text","text":"{\"version\":\"0.1.0\"}"}],"isError":false}}"#;
const A_VER: &str = r#"{"id":"a-ver","parentId":"r-pkg","timestamp":10,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"版本是 0.1.0"}]}}"#;
const SUMMARY: &str = "User asked for the project name; it is tiny-pi.";
const U3: &str = r#"{"id":"u-3","parentId":"c-1","timestamp":12,"type":"message","message":{"role":"user","content":"还有什么依赖？"}}"#;

/// The compaction c-1 with `first` as its `firstKeptEntryId` (JSON) under `parent`.
fn c1(parent: &str, first: &str) -> String {
    format!(
        r#"{{"id":"c-1","parentId":"{parent}","timestamp":11,"type":"compaction","summary":"{SUMMARY}","firstKeptEntryId":{first},"tokensBefore":1200}}"#
    )
}

/// §1 and §10 in append order, with c-1 keeping from `first`.
fn extended(first: &str) -> Vec<String> {
    let mut lines: Vec<String> = CHAPTER.iter().map(|s| s.to_string()).collect();
    for line in [U2, A_PKG, R_PKG, A_VER] {
        lines.push(line.to_owned());
    }
    lines.push(c1("a-ver", first));
    lines.push(U3.to_owned());
    lines
}

const SUMMARY_MESSAGE: &str = r#"{"role":"user","content":[{"type":"text","text":"User asked for the project name; it is tiny-pi."}],"timestamp":11}"#;

// --- Harness --------------------------------------------------------------------------

fn entries_of(lines: &[String]) -> Vec<session::Entry> {
    lines.iter().map(|l| parse_entry(l).unwrap()).collect()
}

fn store_of(lines: &[String]) -> Store {
    let store = Store::memory();
    for line in lines {
        store.append(line).unwrap();
    }
    store
}

/// Builds through both forms, asserts they agree, returns the result.
fn both(lines: &[String], leaf: &str, options: &ContextOptions) -> Result<Context, Error> {
    let pure = build_context(&entries_of(lines), leaf, options);
    let stored = store_of(lines).build_context(leaf, options, None);
    match (&pure, &stored) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "pure and store forms differ"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("pure {pure:?} vs store {stored:?}"),
    }
    pure
}

fn defaults() -> ContextOptions {
    ContextOptions::default()
}

fn options(json: &str) -> ContextOptions {
    ContextOptions::from_json(json).unwrap()
}

fn compaction_fault(result: Result<impl std::fmt::Debug, Error>) -> CompactionFault {
    match result {
        Err(Error::InvalidCompaction { reason, .. }) => reason,
        other => panic!("expected invalid_compaction, got {other:?}"),
    }
}

/// Appends every line but the last, then returns the last append's result.
fn append_last(lines: &[String]) -> Result<session::Receipt, Error> {
    let store = store_of(&lines[..lines.len() - 1]);
    store.append(&lines[lines.len() - 1])
}

fn message(id: &str, parent: &str, message: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"message","message":{message}}}"#
    )
}

fn root_user(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":null,"timestamp":1,"type":"message","message":{{"role":"user","content":"{id}"}}}}"#
    )
}

fn user_msg(id: &str, parent: &str) -> String {
    message(
        id,
        parent,
        &format!(r#"{{"role":"user","content":"{id}"}}"#),
    )
}

fn text_msg(id: &str, parent: &str) -> String {
    message(
        id,
        parent,
        &format!(r#"{{"role":"assistant","content":[{{"type":"text","text":"{id}"}}]}}"#),
    )
}

fn calls(id: &str, parent: &str, call_ids: &[&str]) -> String {
    let blocks: Vec<String> = call_ids
        .iter()
        .map(|c| format!(r#"{{"type":"toolCall","id":"{c}","name":"t","arguments":{{}}}}"#))
        .collect();
    message(
        id,
        parent,
        &format!(r#"{{"role":"assistant","content":[{}]}}"#, blocks.join(",")),
    )
}

fn result(id: &str, parent: &str, call: &str) -> String {
    message(
        id,
        parent,
        &format!(
            r#"{{"role":"toolResult","toolCallId":"{call}","toolName":"t","content":[],"isError":false}}"#
        ),
    )
}

fn compaction(id: &str, parent: &str, first: Option<&str>) -> String {
    let first = first.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":5,"type":"compaction","summary":"s-{id}","firstKeptEntryId":{first},"tokensBefore":10}}"#
    )
}

fn lines(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// --- §10 expected results -------------------------------------------------------------

#[test]
fn context_of_u3_is_the_summary_then_the_kept_tail() {
    let context = both(&extended(r#""u-2""#), "u-3", &defaults()).unwrap();
    let expected: Vec<String> = [SUMMARY_MESSAGE, U2, A_PKG, R_PKG, A_VER, U3]
        .iter()
        .enumerate()
        .map(|(i, l)| match i {
            0 => l.to_string(),
            _ => message_of(l).to_owned(),
        })
        .collect();
    assert_eq!(context.messages, expected);
    assert_eq!(
        kept_ids(&context),
        ["u-2", "a-pkg", "r-pkg", "a-ver", "u-3"]
    );
    assert_eq!(
        context.metadata,
        [("cwd".to_owned(), r#""/workspace/tiny-pi""#.to_owned())]
    );
    let c = context.compaction.as_ref().unwrap();
    assert_eq!(c.id, "c-1");
    assert_eq!(c.first_kept_entry_id.as_deref(), Some("u-2"));
    assert_eq!(c.tokens_before, "1200");
}

#[test]
fn context_of_u3_json_is_exactly_the_contract_shape() {
    let json = both(&extended(r#""u-2""#), "u-3", &defaults())
        .unwrap()
        .to_json();
    let messages: Vec<&str> = [U2, A_PKG, R_PKG, A_VER, U3]
        .iter()
        .map(|l| message_of(l))
        .collect();
    let expected = format!(
        r#"{{"leafId":"u-3","compaction":{{"id":"c-1","firstKeptEntryId":"u-2","tokensBefore":1200,"summary":"{SUMMARY}"}},"messages":[{SUMMARY_MESSAGE},{}],"keptEntryIds":["u-2","a-pkg","r-pkg","a-ver","u-3"],"interactions":[{{"start":1,"count":4,"firstEntryId":"u-2","cutPoint":true}},{{"start":5,"count":1,"firstEntryId":"u-3","cutPoint":true}}],"metadata":{{"cwd":"/workspace/tiny-pi"}},"budget":null,"skipped":[],"defects":[]}}"#,
        messages.join(",")
    );
    assert_eq!(json, expected);
    serde_json::from_str::<serde_json::Value>(&json).unwrap();
}

#[test]
fn messages_on_path_of_u3_still_returns_all_nine_originals() {
    let entries = entries_of(&extended(r#""u-2""#));
    assert_eq!(messages_on_path(&entries, "u-3").unwrap().len(), 9);
    let path = path_to(&entries, "u-3").unwrap();
    assert!(path.iter().any(|e| e.kind() == EntryKind::Compaction));
}

#[test]
fn context_of_a_alt_is_u1_and_a_alt_without_compaction() {
    let context = both(&extended(r#""u-2""#), "a-alt", &defaults()).unwrap();
    assert_eq!(context.compaction, None);
    assert_eq!(context.messages, [message_of(U1), message_of(A_ALT)]);
    assert_eq!(kept_ids(&context), ["u-1", "a-alt"]);
}

#[test]
fn context_of_a_final_equals_messages_on_path() {
    let all = extended(r#""u-2""#);
    let context = both(&all, "a-final", &defaults()).unwrap();
    let on_path: Vec<String> = messages_on_path(&entries_of(&all), "a-final")
        .unwrap()
        .iter()
        .map(|m| m.json().to_owned())
        .collect();
    assert_eq!(context.messages, on_path);
}

#[test]
fn appending_c1_keeping_from_a_tool_call_or_result_is_not_interaction_start() {
    for first in [r#""a-pkg""#, r#""r-pkg""#] {
        let all = extended(first);
        assert_eq!(
            compaction_fault(append_last(&all[..11])),
            CompactionFault::NotInteractionStart,
            "{first}"
        );
        // The pure form refuses the same compaction: never a silent fallback.
        assert_eq!(
            compaction_fault(build_context(&entries_of(&all), "u-3", &defaults())),
            CompactionFault::NotInteractionStart
        );
    }
}

#[test]
fn appending_c1_keeping_from_a_sibling_is_not_on_path() {
    let all = extended(r#""a-alt""#);
    assert_eq!(
        compaction_fault(append_last(&all[..11])),
        CompactionFault::NotOnPath
    );
}

#[test]
fn appending_c1_keeping_from_an_unknown_id_is_unknown_entry() {
    let all = extended(r#""nope""#);
    match append_last(&all[..11]) {
        Err(Error::InvalidCompaction {
            compaction_id,
            first_kept_entry_id,
            reason,
            hint,
        }) => {
            assert_eq!(compaction_id, "c-1");
            assert_eq!(first_kept_entry_id.as_deref(), Some("nope"));
            assert_eq!(reason, CompactionFault::UnknownEntry);
            // An append names no option: none would make it valid.
            assert_eq!(hint, Hint::None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn compaction_keeping_from_a_metadata_entry_keeps_from_the_next_message() {
    let context = both(&extended(r#""meta-cwd""#), "u-3", &defaults()).unwrap();
    assert_eq!(
        kept_ids(&context),
        ["u-2", "a-pkg", "r-pkg", "a-ver", "u-3"]
    );
}

#[test]
fn compaction_keeping_nothing_leaves_the_summary_and_what_follows() {
    let context = both(&extended("null"), "u-3", &defaults()).unwrap();
    assert_eq!(context.messages, [SUMMARY_MESSAGE, message_of(U3)]);
    assert_eq!(kept_ids(&context), ["u-3"]);
    assert_eq!(
        context.metadata,
        [("cwd".to_owned(), r#""/workspace/tiny-pi""#.to_owned())],
        "state from before the cut is kept"
    );
}

#[test]
fn compaction_keeping_nothing_after_an_unanswered_call_is_pending_tool_calls() {
    let mut all = extended("null");
    all.truncate(8);
    all.push(c1("a-pkg", "null"));
    assert_eq!(
        compaction_fault(append_last(&all)),
        CompactionFault::PendingToolCalls
    );
}

#[test]
fn orphan_result_fails_pairing_and_skip_drops_its_interaction() {
    let mut all = lines(&CHAPTER);
    all.push(result("r-9", "a-final", "call-9"));
    match both(&all, "r-9", &defaults()) {
        Err(Error::ToolPairing {
            entry_id,
            tool_call_id,
            reason,
            interaction_start_id,
            hint,
        }) => {
            // A native session: onDefect is what answers it.
            assert_eq!(hint, Hint::OnDefect);
            assert_eq!(entry_id, "r-9");
            assert_eq!(tool_call_id, "call-9");
            assert_eq!(reason, PairingDefect::OrphanResult);
            assert_eq!(interaction_start_id, "u-1");
        }
        other => panic!("{other:?}"),
    }
    let skipped = both(&all, "r-9", &options(r#"{"onDefect":"skip"}"#)).unwrap();
    assert!(skipped.messages.is_empty());
    assert_eq!(skipped.skipped.len(), 1);
    assert_eq!(skipped.skipped[0].entry_id, "r-9");
    assert_eq!(skipped.skipped[0].reason, PairingDefect::OrphanResult);
}

// --- Compaction rules -----------------------------------------------------------------

#[test]
fn first_message_of_the_path_is_a_cut_point_even_when_not_a_user_message() {
    let all = lines(&[
        &text_msg_root("a-0"),
        &user_msg("u-1", "a-0"),
        &compaction("c", "u-1", Some("a-0")),
    ]);
    append_last(&all).unwrap();
    let context = both(&all, "c", &defaults()).unwrap();
    assert_eq!(kept_ids(&context), ["a-0", "u-1"]);
    assert!(context.interactions[0].cut_point);
}

fn text_msg_root(id: &str) -> String {
    text_msg(id, "x").replace(r#""parentId":"x""#, r#""parentId":null"#)
}

#[test]
fn compaction_pointing_at_itself_or_without_parent_is_invalid_entry() {
    let own = compaction("c", "u", Some("c"));
    assert!(
        matches!(parse_entry(&own), Err(Error::InvalidEntry(e)) if e.pointer == "/firstKeptEntryId")
    );
    let root = compaction("c", "u", None).replace(r#""parentId":"u""#, r#""parentId":null"#);
    assert!(matches!(parse_entry(&root), Err(Error::InvalidEntry(e)) if e.pointer == "/parentId"));
    let negative = compaction("c", "u", None).replace("\"tokensBefore\":10", "\"tokensBefore\":-1");
    assert!(
        matches!(parse_entry(&negative), Err(Error::InvalidEntry(e)) if e.pointer == "/tokensBefore")
    );
    let empty = compaction("c", "u", None).replace("\"s-c\"", "\"\"");
    assert!(matches!(parse_entry(&empty), Err(Error::InvalidEntry(e)) if e.pointer == "/summary"));
    let object = compaction("c", "u", None).replace("\"s-c\"", r#"{"goal":"x"}"#);
    assert!(parse_entry(&object).is_ok());
}

#[test]
fn object_summary_becomes_its_normalised_json_with_prefix_and_suffix() {
    let c = compaction("c", "u-1", None).replace("\"s-c\"", r#"{"goal":"a\"b"}"#);
    let all = lines(&[&root_user("u-1"), &c]);
    let context = both(
        &all,
        "c",
        &options(r#"{"summaryPrefix":"<s>","summarySuffix":"</s>"}"#),
    )
    .unwrap();
    assert_eq!(
        context.messages,
        [
            r#"{"role":"user","content":[{"type":"text","text":"<s>{\"goal\":\"a\\\"b\"}</s>"}],"timestamp":5}"#
        ]
    );
    let without = both(&all, "c", &options(r#"{"summaryMessage":false}"#)).unwrap();
    assert!(without.messages.is_empty());
    assert!(without.compaction.is_some());
}

#[test]
fn only_the_latest_compaction_on_the_path_counts() {
    let all = lines(&[
        &root_user("u-1"),
        &text_msg("a-1", "u-1"),
        &compaction("c-1", "a-1", Some("u-1")),
        &user_msg("u-2", "c-1"),
        &text_msg("a-2", "u-2"),
        &compaction("c-2", "a-2", Some("u-2")),
        &user_msg("u-3", "c-2"),
    ]);
    let context = both(&all, "u-3", &defaults()).unwrap();
    assert_eq!(context.compaction.as_ref().unwrap().id, "c-2");
    assert_eq!(kept_ids(&context), ["u-2", "a-2", "u-3"]);
    assert!(context.messages[0].contains("s-c-2"));
}

#[test]
fn invalid_compaction_on_an_unselected_branch_does_not_affect_a_healthy_path() {
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k"]),
        &result("r-1", "a-1", "k"),
        &compaction("c-bad", "r-1", Some("r-1")),
        &text_msg("a-ok", "r-1"),
    ]);
    // The pure form sees the bad compaction on another branch and ignores it.
    let context = build_context(&entries_of(&all), "a-ok", &defaults()).unwrap();
    assert_eq!(kept_ids(&context), ["u-1", "a-1", "r-1", "a-ok"]);
    assert_eq!(
        compaction_fault(build_context(&entries_of(&all), "c-bad", &defaults())),
        CompactionFault::NotInteractionStart
    );
}

#[test]
fn open_time_replay_does_not_recheck_compactions() {
    let dir = temp_dir("context-replay");
    let path = dir.join("s.jsonl");
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k"]),
        &result("r-1", "a-1", "k"),
        &compaction("c-bad", "r-1", Some("r-1")),
        &text_msg("a-ok", "r-1"),
    ]);
    write_file(&path, format!("{}\n", all.join("\n")).as_bytes());
    let (store, _) = Store::open_jsonl(&path).unwrap();
    let context = store.build_context("a-ok", &defaults(), None).unwrap();
    assert_eq!(kept_ids(&context), ["u-1", "a-1", "r-1", "a-ok"]);
    assert_eq!(
        compaction_fault(store.build_context("c-bad", &defaults(), None)),
        CompactionFault::NotInteractionStart
    );
}

// --- Pairing --------------------------------------------------------------------------

#[test]
fn results_in_reverse_order_with_an_assistant_between_pair() {
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["x", "y"]),
        &result("r-y", "a-1", "y"),
        &text_msg("a-mid", "r-y"),
        &result("r-x", "a-mid", "x"),
    ]);
    let context = both(&all, "r-x", &defaults()).unwrap();
    assert_eq!(kept_ids(&context), ["u-1", "a-1", "r-y", "a-mid", "r-x"]);
}

/// A tree with each defect in its own interaction, after a healthy one.
fn defect_tree(defect: PairingDefect) -> (Vec<String>, &'static str, &'static str) {
    let mut all = lines(&[
        &root_user("u-0"),
        &text_msg("a-0", "u-0"),
        &user_msg("u-1", "a-0"),
    ]);
    let (entry, call) = match defect {
        PairingDefect::OrphanResult => {
            all.push(result("r-1", "u-1", "k"));
            ("r-1", "k")
        }
        PairingDefect::DuplicateToolCall => {
            all.push(calls("a-1", "u-1", &["k"]));
            all.push(result("r-1", "a-1", "k"));
            // A result after the second call would also be a duplicate result.
            all.push(calls("a-2", "r-1", &["k"]));
            ("a-2", "k")
        }
        PairingDefect::DuplicateToolResult => {
            all.push(calls("a-1", "u-1", &["k"]));
            all.push(result("r-1", "a-1", "k"));
            all.push(result("r-2", "r-1", "k"));
            ("r-2", "k")
        }
        PairingDefect::MissingResult => {
            all.push(calls("a-1", "u-1", &["k", "m"]));
            all.push(result("r-1", "a-1", "k"));
            ("a-1", "m")
        }
    };
    (all, entry, call)
}

#[test]
fn every_pairing_defect_under_each_on_defect() {
    for defect in [
        PairingDefect::OrphanResult,
        PairingDefect::DuplicateToolCall,
        PairingDefect::DuplicateToolResult,
        PairingDefect::MissingResult,
    ] {
        let (all, entry, call) = defect_tree(defect);
        let leaf = all.last().unwrap().clone();
        let leaf = parse_entry(&leaf).unwrap().id().to_owned();
        match both(&all, &leaf, &defaults()) {
            Err(Error::ToolPairing {
                entry_id,
                tool_call_id,
                reason,
                interaction_start_id,
                ..
            }) => {
                assert_eq!(
                    (entry_id.as_str(), tool_call_id.as_str(), reason),
                    (entry, call, defect)
                );
                assert_eq!(interaction_start_id, "u-1");
            }
            other => panic!("{defect:?}: {other:?}"),
        }
        let skip = both(&all, &leaf, &options(r#"{"onDefect":"skip"}"#)).unwrap();
        assert_eq!(kept_ids(&skip), ["u-0", "a-0"], "{defect:?}");
        assert_eq!(skip.skipped.len(), 1, "{defect:?}");
        assert_eq!(skip.skipped[0].entry_id, entry);
        assert_eq!(skip.skipped[0].reason, defect);
        assert!(skip.defects.is_empty());
        let keep = both(&all, &leaf, &options(r#"{"onDefect":"keep"}"#)).unwrap();
        assert_eq!(keep.kept_entry_ids.len(), all.len(), "{defect:?}");
        assert_eq!(keep.defects.len(), 1);
        assert_eq!(keep.defects[0].reason, defect);
        assert_eq!(keep.defects[0].interaction_start_id, "u-1");
        assert!(keep.skipped.is_empty());
    }
}

#[test]
fn the_defect_reported_is_the_first_in_path_order() {
    // A missing result (held by a-1) comes before an orphan result later on.
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["m"]),
        &result("r-9", "a-1", "z"),
    ]);
    match both(&all, "r-9", &defaults()) {
        Err(Error::ToolPairing {
            entry_id, reason, ..
        }) => assert_eq!(
            (entry_id.as_str(), reason),
            ("a-1", PairingDefect::MissingResult)
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn extension_messages_never_pair_tool_calls() {
    let ext = message(
        "x-1",
        "u-1",
        r#"{"role":"bashExecution","command":"ls","toolCallId":"k","output":"a"}"#,
    );
    let all = lines(&[&root_user("u-1"), &ext]);
    let context = both(&all, "x-1", &defaults()).unwrap();
    assert_eq!(kept_ids(&context), ["u-1", "x-1"]);
}

// --- Budget ---------------------------------------------------------------------------

/// Three interactions; each message costs 10 with the estimator used below.
fn three_interactions() -> Vec<String> {
    lines(&[
        &root_user("u-1"),
        &text_msg("a-1", "u-1"),
        &user_msg("u-2", "a-1"),
        &text_msg("a-2", "u-2"),
        &user_msg("u-3", "a-2"),
        &text_msg("a-3", "u-3"),
    ])
}

fn with_ten_each(lines: &[String], leaf: &str, options: &ContextOptions) -> Result<Context, Error> {
    let mut calls = 0;
    let built = build_context_with(&entries_of(lines), leaf, options, &mut |_m: &str| {
        calls += 1;
        Ok(10.0)
    });
    let store = store_of(lines);
    let mut store_calls = 0;
    let mut count = |_m: &str| {
        store_calls += 1;
        Ok(10.0)
    };
    let stored = store.build_context(leaf, options, Some(&mut count));
    assert_eq!(built.as_ref().ok(), stored.as_ref().ok());
    assert_eq!(calls, store_calls);
    built
}

#[test]
fn budget_within_keeps_everything() {
    let c = with_ten_each(
        &three_interactions(),
        "a-3",
        &options(r#"{"budget":{"maxTokens":60}}"#),
    )
    .unwrap();
    let b = c.budget.as_ref().unwrap();
    assert_eq!(b.reason, BudgetReason::WithinBudget);
    assert_eq!(
        (b.available, b.used, b.dropped_interactions),
        (60.0, 60.0, 0)
    );
    assert_eq!(b.suggested_first_kept_entry_id, None);
    assert_eq!(
        c.interactions.iter().map(|i| i.tokens).collect::<Vec<_>>(),
        [Some(20.0); 3]
    );
}

#[test]
fn budget_trims_whole_interactions_from_the_oldest() {
    let c = with_ten_each(
        &three_interactions(),
        "a-3",
        &options(r#"{"budget":{"maxTokens":60,"reservedOutput":15,"safetyMargin":5}}"#),
    )
    .unwrap();
    let b = c.budget.as_ref().unwrap();
    assert_eq!(b.reason, BudgetReason::Trimmed);
    assert_eq!(
        (b.available, b.used, b.dropped_interactions),
        (40.0, 40.0, 1)
    );
    assert_eq!(b.suggested_first_kept_entry_id.as_deref(), Some("u-2"));
    assert_eq!(kept_ids(&c), ["u-2", "a-2", "u-3", "a-3"]);
    assert_eq!(c.interactions[0].start, 0);
    assert_eq!(c.interactions[1].start, 2);
}

#[test]
fn budget_keeps_the_newest_interaction_alone_over_budget() {
    let c = with_ten_each(
        &three_interactions(),
        "a-3",
        &options(r#"{"budget":{"maxTokens":5}}"#),
    )
    .unwrap();
    let b = c.budget.as_ref().unwrap();
    assert_eq!(b.reason, BudgetReason::SingleInteractionOverflow);
    assert_eq!((b.used, b.dropped_interactions), (20.0, 2));
    assert_eq!(kept_ids(&c), ["u-3", "a-3"]);
}

#[test]
fn budget_counts_the_summary_and_estimates_each_message_once() {
    let all = extended(r#""u-2""#);
    let mut seen = Vec::new();
    let c = build_context_with(
        &entries_of(&all),
        "u-3",
        &options(r#"{"budget":{"maxTokens":1000}}"#),
        &mut |m: &str| {
            seen.push(m.to_owned());
            Ok(1.0)
        },
    )
    .unwrap();
    assert_eq!(
        seen, c.messages,
        "one call per emitted message, with its JSON"
    );
    assert_eq!(c.budget.unwrap().used, 6.0);
}

#[test]
fn budget_sums_saturate_at_dbl_max_so_the_output_stays_json() {
    // Two estimates of DBL_MAX used to add up to infinity, written as `inf`.
    let all = three_interactions();
    let c = build_context_with(
        &entries_of(&all),
        "a-3",
        &options(r#"{"budget":{"maxTokens":100}}"#),
        &mut |_m: &str| Ok(f64::MAX),
    )
    .unwrap();
    let b = c.budget.as_ref().unwrap();
    assert_eq!(b.used, f64::MAX);
    assert!(c.interactions.iter().all(|i| i.tokens == Some(f64::MAX)));
    let json: serde_json::Value = serde_json::from_str(&c.to_json()).expect("valid JSON");
    assert_eq!(json["budget"]["used"].as_f64(), Some(f64::MAX));
    // The reserve and margin can exceed the maximum by more than DBL_MAX: `available`
    // saturates at -DBL_MAX instead of reaching -infinity.
    let huge = format!(
        r#"{{"budget":{{"maxTokens":0,"reservedOutput":{m:e},"safetyMargin":{m:e}}}}}"#,
        m = f64::MAX
    );
    let c = build_context_with(
        &entries_of(&all),
        "a-3",
        &options(&huge),
        &mut |_m: &str| Ok(1.0),
    )
    .unwrap();
    assert_eq!(c.budget.as_ref().unwrap().available, f64::MIN);
    let json: serde_json::Value = serde_json::from_str(&c.to_json()).expect("valid JSON");
    assert_eq!(json["budget"]["available"].as_f64(), Some(f64::MIN));
}

#[test]
fn default_estimator_is_a_quarter_of_the_bytes_rounded_up() {
    let all = lines(&[&root_user("u-1")]);
    let c = both(&all, "u-1", &options(r#"{"budget":{"maxTokens":100}}"#)).unwrap();
    let bytes = message_of(&all[0]).len();
    assert_eq!(c.interactions[0].tokens, Some(bytes.div_ceil(4) as f64));
}

#[test]
fn estimator_failure_nan_negative_or_panic_is_an_error_naming_the_entry() {
    let all = three_interactions();
    let entries = entries_of(&all);
    let budget = options(r#"{"budget":{"maxTokens":100}}"#);
    let results: Vec<Result<f64, String>> = vec![
        Err("no model".to_owned()),
        Ok(f64::NAN),
        Ok(-1.0),
        Ok(f64::INFINITY),
    ];
    for value in results {
        let value_for = value.clone();
        match build_context_with(&entries, "a-3", &budget, &mut |_m: &str| value_for.clone()) {
            Err(Error::Estimator { entry_id, .. }) => assert_eq!(entry_id, "u-1", "{value:?}"),
            other => panic!("{value:?}: {other:?}"),
        }
    }
    let store = store_of(&all);
    let mut panicking = |_m: &str| -> Result<f64, String> { panic!("estimator bug") };
    match store.build_context("a-3", &budget, Some(&mut panicking)) {
        Err(Error::Estimator { entry_id, .. }) => assert_eq!(entry_id, "u-1"),
        other => panic!("{other:?}"),
    }
    // The store is still usable.
    assert!(store.build_context("a-3", &defaults(), None).is_ok());
}

#[test]
fn estimator_is_not_called_without_a_budget() {
    let mut calls = 0;
    build_context_with(
        &entries_of(&three_interactions()),
        "a-3",
        &defaults(),
        &mut |_m: &str| {
            calls += 1;
            Ok(1.0)
        },
    )
    .unwrap();
    assert_eq!(calls, 0);
}

#[test]
fn bad_options_are_invalid_option() {
    for bad in [
        r#"{"nope":1}"#,
        r#"{"onDefect":"ignore"}"#,
        r#"{"budget":{"maxTokens":-1}}"#,
        r#"{"budget":{}}"#,
        r#"{"budget":{"maxTokens":1,"extra":2}}"#,
        "[]",
        r#"{"a":1,"a":1}"#,
    ] {
        assert!(
            matches!(
                ContextOptions::from_json(bad),
                Err(Error::InvalidOption { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(options("{}"), defaults());
    assert_eq!(options(r#"{"onDefect":"keep"}"#).on_defect, OnDefect::Keep);
}

// --- Labels (§6.3) --------------------------------------------------------------------

fn label(id: &str, parent: &str, target: &str, value: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"metadata","key":"session.label","value":{{"targetId":"{target}","label":{value}}}}}"#
    )
}

#[test]
fn label_needs_a_committed_target_and_a_label_member() {
    let store = store_of(&lines(&[&root_user("u-1")]));
    store
        .append(label("l-1", "u-1", "u-1", r#""start""#))
        .unwrap();
    store.append(label("l-2", "l-1", "u-1", "null")).unwrap();
    match store.append(label("l-3", "l-2", "ghost", r#""x""#)) {
        Err(Error::UnknownLeaf { id }) => assert_eq!(id, "ghost"),
        other => panic!("{other:?}"),
    }
    let missing = r#"{"id":"l-4","parentId":"u-1","timestamp":1,"type":"metadata","key":"session.label","value":{"targetId":"u-1"}}"#;
    assert!(
        matches!(parse_entry(missing), Err(Error::InvalidEntry(e)) if e.pointer == "/value/label")
    );
    let empty = label("l-5", "u-1", "u-1", r#""""#);
    assert!(
        matches!(parse_entry(&empty), Err(Error::InvalidEntry(e)) if e.pointer == "/value/label")
    );
    // Labels never reach the context's metadata; other keys do.
    let c = store.build_context("l-2", &defaults(), None).unwrap();
    assert!(c.metadata.is_empty());
}

#[test]
fn metadata_is_the_last_value_of_each_key_in_first_set_order() {
    let meta = |id: &str, parent: &str, key: &str, value: &str| {
        format!(
            r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"metadata","key":"{key}","value":{value}}}"#
        )
    };
    let all = lines(&[
        &root_user("u-1"),
        &meta("m-1", "u-1", "cwd", r#""/a""#),
        &meta("m-2", "m-1", "model", r#""x""#),
        &meta("m-3", "m-2", "cwd", r#""/b""#),
        &meta("m-4", "m-3", "session.future", "1"),
        &compaction("c", "m-4", None),
    ]);
    let c = both(&all, "c", &defaults()).unwrap();
    assert_eq!(
        c.metadata,
        [
            ("cwd".to_owned(), r#""/b""#.to_owned()),
            ("model".to_owned(), r#""x""#.to_owned())
        ]
    );
}

// --- Open roles, surrogates (§6.1) ----------------------------------------------------

const EXT_ROLE: &str = r#"{"id":"x-1","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"bashExecution","command":"ls","output":"a\ud83d","exitCode":0,"weird":[1,{"z":null}]}}"#;
const EXT_BLOCK: &str = r#"{"id":"a-1","parentId":"x-1","timestamp":3,"type":"message","message":{"role":"assistant","content":[{"type":"redacted_thinking","data":"abc"},{"type":"text","text":"cut \ud83d"}]}}"#;

#[test]
fn extension_roles_blocks_and_lone_surrogates_round_trip_byte_exact() {
    let all = lines(&[&root_user("u-1"), EXT_ROLE, EXT_BLOCK]);
    let dir = temp_dir("context-ext");
    let path = dir.join("s.jsonl");
    {
        let (store, _) = Store::open_jsonl(&path).unwrap();
        for line in &all {
            store.append(line).unwrap();
        }
    }
    assert_eq!(
        read_file(&path),
        format!("{}\n", all.join("\n")).into_bytes()
    );
    let (store, _) = Store::open_jsonl(&path).unwrap();
    let path_entries = store.path_to("a-1").unwrap();
    assert_eq!(path_entries[1].json(), EXT_ROLE);
    assert_eq!(path_entries[1].kind(), EntryKind::Message(Role::Extension));
    assert_eq!(path_entries[2].json(), EXT_BLOCK);
    let messages = store.messages_on_path("a-1").unwrap();
    assert_eq!(messages[1].json(), message_of(EXT_ROLE));
    let context = store.build_context("a-1", &defaults(), None).unwrap();
    assert_eq!(
        context.messages,
        [
            message_of(&all[0]),
            message_of(EXT_ROLE),
            message_of(EXT_BLOCK)
        ]
    );
}

#[test]
fn strict_roles_rejects_extension_roles_and_blocks() {
    let store = Store::memory_with(&MemoryOptions { strict_roles: true });
    store.append(root_user("u-1")).unwrap();
    assert!(
        matches!(store.append(EXT_ROLE), Err(Error::InvalidEntry(e)) if e.pointer == "/message/role")
    );
    let block = EXT_BLOCK.replace(r#""parentId":"x-1""#, r#""parentId":"u-1""#);
    assert!(
        matches!(store.append(&block), Err(Error::InvalidEntry(e)) if e.pointer == "/message/content/0/type")
    );
    // The JSONL option: a file holding an extension entry fails to open at that line.
    let dir = temp_dir("context-strict");
    let path = dir.join("s.jsonl");
    write_file(
        &path,
        format!("{}\n{EXT_ROLE}\n", root_user("u-1")).as_bytes(),
    );
    let strict = session::JsonlOptions {
        strict_roles: true,
        ..Default::default()
    };
    match Store::open_jsonl_with(&path, &strict) {
        Err(Error::CorruptLine { line, .. }) => assert_eq!(line, 2),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // build_context's option.
    let all = lines(&[&root_user("u-1"), EXT_ROLE]);
    let strict = options(r#"{"strictRoles":true}"#);
    assert!(matches!(
        both(&all, "x-1", &strict),
        Err(Error::InvalidEntry(_))
    ));
    assert!(parse_entries(format!("[{}]", all.join(","))).is_ok());
}

#[test]
fn unknown_leaf_and_broken_path_come_before_compaction_checks() {
    let all = extended(r#""a-pkg""#);
    assert!(matches!(
        build_context(&entries_of(&all), "ghost", &defaults()),
        Err(Error::UnknownLeaf { .. })
    ));
}

// --- Property: no compaction, no budget ⇒ messages == messages_on_path ----------------

/// A random tree of well-paired interactions: each entry hangs under an earlier one.
fn arb_tree() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 1..40).prop_map(|steps| {
        let mut out: Vec<String> = Vec::new();
        for (i, (parent, kind)) in steps.into_iter().enumerate() {
            let id = format!("e-{i}");
            if out.is_empty() {
                out.push(root_user(&id));
                continue;
            }
            let parent = parse_entry(&out[parent.index(out.len())]).unwrap();
            let parent_id = parent.id().to_owned();
            match kind {
                0 => out.push(user_msg(&id, &parent_id)),
                1 => out.push(text_msg(&id, &parent_id)),
                2 => out.push(format!(
                    r#"{{"id":"{id}","parentId":"{parent_id}","timestamp":1,"type":"metadata","key":"k{}","value":{i}}}"#,
                    i % 3
                )),
                _ => out.push(message(&id, &parent_id, r#"{"role":"custom","x":1}"#)),
            }
        }
        out
    })
}

proptest! {
    #[test]
    fn without_compaction_or_budget_messages_equal_messages_on_path(tree in arb_tree(), leaf in any::<prop::sample::Index>()) {
        let entries = entries_of(&tree);
        let leaf = entries[leaf.index(entries.len())].id().to_owned();
        let context = both(&tree, &leaf, &defaults()).unwrap();
        let on_path: Vec<String> = messages_on_path(&entries, &leaf)
            .unwrap()
            .iter()
            .map(|m| m.json().to_owned())
            .collect();
        prop_assert_eq!(&context.messages, &on_path);
        prop_assert_eq!(context.kept_entry_ids.len(), on_path.len());
    }
}

#[test]
fn budget_overflows_when_what_must_stay_does_not_fit() {
    // The summary always stays; with nothing kept after it, it alone can overflow.
    let all = extended("null");
    let c = with_ten_each(&all[..11], "c-1", &options(r#"{"budget":{"maxTokens":5}}"#)).unwrap();
    let b = c.budget.as_ref().unwrap();
    assert_eq!(b.reason, BudgetReason::SingleInteractionOverflow);
    assert_eq!((b.used, b.dropped_interactions), (10.0, 0));
    assert_eq!(c.messages, [SUMMARY_MESSAGE]);
}

/// The context's `keptEntryIds`, a synthesized result's `null` as "null".
fn kept_ids(context: &Context) -> Vec<&str> {
    context
        .kept_entry_ids
        .iter()
        .map(|id| id.as_deref().unwrap_or("null"))
        .collect()
}

// --- onDefect "synthesize" (round 3) -----------------------------------------------------

const ABORTED_M: &str = r#"{"role":"toolResult","toolCallId":"m","toolName":"t","content":[{"type":"text","text":"aborted"}],"isError":true,"timestamp":1,"synthetic":true}"#;

#[test]
fn synthesize_answers_an_unanswered_call_right_after_the_message_holding_it() {
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k", "m"]),
        &result("r-1", "a-1", "k"),
        &text_msg("a-2", "r-1"),
    ]);
    let c = both(&all, "a-2", &options(r#"{"onDefect":"synthesize"}"#)).unwrap();
    assert_eq!(kept_ids(&c), ["u-1", "a-1", "null", "r-1", "a-2"]);
    assert_eq!(c.messages[2], ABORTED_M);
    assert_eq!(c.messages[3], message_of(&all[2]));
    assert_eq!(c.interactions.len(), 1);
    assert_eq!(c.interactions[0].count, 5);
    assert_eq!(c.defects.len(), 1);
    assert!(c.defects[0].synthesized());
    assert_eq!(
        (
            c.defects[0].entry_id.as_str(),
            c.defects[0].tool_call_id.as_str()
        ),
        ("a-1", "m")
    );
    let json: serde_json::Value = serde_json::from_str(&c.to_json()).unwrap();
    assert_eq!(json["keptEntryIds"][2], serde_json::Value::Null);
    assert_eq!(json["defects"][0]["action"], "synthesized");
    assert_eq!(json["defects"][0]["reason"], "missing_result");
    // Nothing is synthesized unless asked: keep lists the defect without an action.
    let keep = both(&all, "a-2", &options(r#"{"onDefect":"keep"}"#)).unwrap();
    assert_eq!(kept_ids(&keep), ["u-1", "a-1", "r-1", "a-2"]);
    let json: serde_json::Value = serde_json::from_str(&keep.to_json()).unwrap();
    assert!(json["defects"][0].get("action").is_none());
}

#[test]
fn synthesized_results_of_a_reply_split_over_messages_follow_its_last_message() {
    // One reply written as two assistant messages (as Claude Code writes it), neither
    // call answered: both results come after the second, in call order.
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k"]),
        &calls("a-2", "a-1", &["m"]),
        &user_msg("u-2", "a-2"),
    ]);
    let c = both(&all, "u-2", &options(r#"{"onDefect":"synthesize"}"#)).unwrap();
    assert_eq!(kept_ids(&c), ["u-1", "a-1", "a-2", "null", "null", "u-2"]);
    assert!(c.messages[3].contains(r#""toolCallId":"k""#));
    assert_eq!(c.messages[4], ABORTED_M);
    assert_eq!(c.interactions[0].count, 5);
    assert_eq!(c.interactions[1].start, 5);
}

#[test]
fn a_synthesized_result_has_the_text_asked_for_the_call_name_and_the_message_timestamp() {
    let all = lines(&[
        &root_user("u-1"),
        &message(
            "a-1",
            "u-1",
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"c\"1","name":"bash","arguments":{}}],"timestamp":1733234567890}"#,
        ),
    ]);
    let c = both(
        &all,
        "a-1",
        &options(r#"{"onDefect":"synthesize","synthesizedText":"No result provided"}"#),
    )
    .unwrap();
    assert_eq!(
        c.messages[2],
        r#"{"role":"toolResult","toolCallId":"c\"1","toolName":"bash","content":[{"type":"text","text":"No result provided"}],"isError":true,"timestamp":1733234567890,"synthetic":true}"#
    );
}

#[test]
fn synthesize_fails_on_every_other_defect_as_error_does() {
    for defect in [
        PairingDefect::OrphanResult,
        PairingDefect::DuplicateToolCall,
        PairingDefect::DuplicateToolResult,
    ] {
        let (all, entry, call) = defect_tree(defect);
        let leaf = parse_entry(all.last().unwrap()).unwrap().id().to_owned();
        match both(&all, &leaf, &options(r#"{"onDefect":"synthesize"}"#)) {
            Err(Error::ToolPairing {
                entry_id,
                tool_call_id,
                reason,
                ..
            }) => assert_eq!(
                (entry_id.as_str(), tool_call_id.as_str(), reason),
                (entry, call, defect)
            ),
            other => panic!("{defect:?}: {other:?}"),
        }
    }
}

#[test]
fn a_synthesized_result_is_estimated_with_its_interaction() {
    let all = lines(&[&root_user("u-1"), &calls("a-1", "u-1", &["m"])]);
    let mut seen = Vec::new();
    let c = build_context_with(
        &entries_of(&all),
        "a-1",
        &options(r#"{"onDefect":"synthesize","budget":{"maxTokens":1000}}"#),
        &mut |m: &str| {
            seen.push(m.to_owned());
            Ok(1.0)
        },
    )
    .unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[2],
        r#"{"role":"toolResult","toolCallId":"m","toolName":"t","content":[{"type":"text","text":"aborted"}],"isError":true,"timestamp":1,"synthetic":true}"#
    );
    assert_eq!(c.interactions[0].tokens, Some(3.0));
}

#[test]
fn synthesized_text_must_be_a_string() {
    assert!(matches!(
        ContextOptions::from_json(r#"{"synthesizedText":1}"#),
        Err(Error::InvalidOption { .. })
    ));
    assert!(matches!(
        ContextOptions::from_json(r#"{"onDefect":"invent"}"#),
        Err(Error::InvalidOption { .. })
    ));
}

// --- profile (round 3) -------------------------------------------------------------------

fn assistant_json(id: &str, parent: &str, body: &str) -> String {
    message(id, parent, &format!(r#"{{"role":"assistant",{body}}}"#))
}

/// One part of a reply Claude Code wrote one block per line (`responseId` "msg_1").
fn part(id: &str, parent: &str, block: &str) -> String {
    assistant_json(
        id,
        parent,
        &format!(r#""content":[{block}],"responseId":"msg_1""#),
    )
}

fn call(id: &str, name: &str) -> String {
    format!(r#"{{"type":"toolCall","id":"{id}","name":"{name}","arguments":{{}}}}"#)
}

/// A Claude Code `progress` line, kept as metadata.
fn progress(id: &str, parent: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"metadata","key":"claude.progress","value":{{}}}}"#
    )
}

fn roles_and_calls(c: &Context) -> Vec<String> {
    c.messages
        .iter()
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(m).unwrap();
            let role = v["role"].as_str().unwrap_or("?").to_owned();
            match v["toolCallId"].as_str() {
                Some(id) => format!(
                    "{role}:{id}:{}",
                    v["content"][0]["text"].as_str().unwrap_or("")
                ),
                None => role,
            }
        })
        .collect()
}

#[test]
fn profile_pi_leaves_out_failed_replies_and_answers_after_the_results_with_no_result_provided() {
    let all = lines(&[
        &root_user("u-1"),
        &assistant_json(
            "a-err",
            "u-1",
            r#""content":[{"type":"text","text":"x"}],"stopReason":"error""#,
        ),
        &calls("a-1", "a-err", &["k", "m"]),
        &result("r-1", "a-1", "k"),
        &user_msg("u-2", "r-1"),
    ]);
    let c = both(&all, "u-2", &options(r#"{"profile":"pi"}"#)).unwrap();
    assert_eq!(
        roles_and_calls(&c),
        [
            "user",
            "assistant",
            "toolResult:k:",
            "toolResult:m:No result provided",
            "user"
        ]
    );
    assert_eq!(kept_ids(&c), ["u-1", "a-1", "r-1", "null", "u-2"]);
    assert!(c.defects[0].synthesized());
    // Without the profile the same path is refused.
    assert!(matches!(
        both(&all, "u-2", &defaults()),
        Err(Error::ToolPairing { .. })
    ));
}

#[test]
fn profile_codex_answers_aborted_after_the_call_and_drops_an_output_without_a_call() {
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k"]),
        &calls("a-2", "a-1", &["m"]),
        &result("r-m", "a-2", "m"),
        &result("r-z", "r-m", "z"),
    ]);
    let c = both(&all, "r-z", &options(r#"{"profile":"codex"}"#)).unwrap();
    assert_eq!(
        roles_and_calls(&c),
        [
            "user",
            "assistant",
            "toolResult:k:aborted",
            "assistant",
            "toolResult:m:"
        ]
    );
    assert_eq!(c.defects.len(), 2);
    let json: serde_json::Value = serde_json::from_str(&c.to_json()).unwrap();
    assert_eq!(json["defects"][0]["action"], "synthesized");
    assert_eq!(json["defects"][1]["action"], "dropped");
    assert_eq!(json["defects"][1]["entryId"], "r-z");
}

/// Rule (docs/contract.md §12, Codex): a `tool_search_call` without its output gets an
/// empty `tool_search_output` right after it; an output without its call is left out.
#[test]
fn profile_codex_pairs_tool_searches_as_codex_does() {
    let search = |id: &str, parent: &str, kind: &str, call: &str| {
        message(
            id,
            parent,
            &format!(
                r#"{{"role":"assistant","content":[],"codexItem":{{"type":"{kind}","call_id":"{call}"}}}}"#
            ),
        )
    };
    let all = lines(&[
        &root_user("u-1"),
        &search("s-1", "u-1", "tool_search_call", "t1"),
        &search("o-2", "s-1", "tool_search_output", "t2"),
        &user_msg("u-2", "o-2"),
    ]);
    let c = both(&all, "u-2", &options(r#"{"profile":"codex"}"#)).unwrap();
    assert_eq!(c.messages.len(), 4, "{:?}", c.messages);
    assert_eq!(
        c.messages[2],
        r#"{"role":"assistant","content":[],"codexItem":{"type":"tool_search_output","call_id":"t1","status":"completed","execution":"client","tools":[]},"synthetic":true}"#
    );
    assert!(!c.messages.iter().any(|m| m.contains(r#""call_id":"t2""#)));
    let actions: Vec<(&str, Option<&str>)> = c
        .defects
        .iter()
        .map(|d| (d.tool_call_id.as_str(), d.action))
        .collect();
    assert_eq!(
        actions,
        [("t1", Some("synthesized")), ("t2", Some("dropped"))]
    );
    // Without the profile the items are sent as they are.
    assert_eq!(both(&all, "u-2", &defaults()).unwrap().messages.len(), 4);
}

#[test]
fn profile_codex_sends_the_replacement_history_without_the_summary_message() {
    let compaction = r#"{"id":"c-1","parentId":"u-1","timestamp":5,"type":"compaction","summary":"s","firstKeptEntryId":null,"tokensBefore":0,"details":{"replacementHistory":1}}"#;
    let all = lines(&[&root_user("u-1"), compaction, &user_msg("h-1", "c-1")]);
    let c = both(&all, "h-1", &options(r#"{"profile":"codex"}"#)).unwrap();
    assert_eq!(kept_ids(&c), ["h-1"]);
    assert_eq!(c.messages.len(), 1);
    let plain = both(&all, "h-1", &defaults()).unwrap();
    assert_eq!(
        plain.messages.len(),
        2,
        "the summary message without a profile"
    );
}

#[test]
fn profile_claude_code_merges_a_reply_split_by_response_id_with_its_results_after_it() {
    let all = lines(&[
        &root_user("u-1"),
        &part("a-1", "u-1", &call("k", "t")),
        &result("r-k", "a-1", "k"),
        &part("a-2", "r-k", &call("m", "t")),
        &result("r-m", "a-2", "m"),
    ]);
    let c = both(&all, "r-m", &options(r#"{"profile":"claude-code"}"#)).unwrap();
    // The conversation ends on the user's side: "No response requested." follows.
    assert_eq!(
        roles_and_calls(&c),
        [
            "user",
            "assistant",
            "toolResult:k:",
            "toolResult:m:",
            "assistant"
        ]
    );
    assert_eq!(kept_ids(&c), ["u-1", "a-1", "r-k", "r-m", "null"]);
    assert_eq!(
        c.messages[1],
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"k","name":"t","arguments":{}},{"type":"toolCall","id":"m","name":"t","arguments":{}}],"responseId":"msg_1"}"#
    );
    assert_eq!(c.interactions[0].count, 5);
    // Without the profile the parts stay apart.
    assert_eq!(both(&all, "r-m", &defaults()).unwrap().messages.len(), 5);
}

/// Rule (docs/contract.md §12, Claude Code): the parts of a parallel reply that Claude
/// Code hung off the path (under a part, a progress line or a result) are taken back
/// into the merged reply in commit order, their results after it in commit order;
/// a whitespace-only part is left out; an old `Task` call is sent as `Agent`; after
/// a conversation that ends on the user's side (local commands aside) comes an
/// assistant "No response requested.".
#[test]
fn profile_claude_code_takes_back_side_parts_in_commit_order_and_ends_as_claude_code() {
    // Written in this order: whitespace part, k, m (under k, off the path), n (under
    // k's result, off the path), then the results; the path goes a-1, a-k, r-k, p, a-x
    // (x on the path), r-x.
    let all = lines(&[
        &root_user("u-1"),
        &part("a-1", "u-1", r#"{"type":"text","text":"\n\n"}"#),
        &part("a-k", "a-1", &call("k", "Task")),
        &part("a-m", "a-k", &call("m", "t")),
        &result("r-k", "a-k", "k"),
        &progress("p-1", "r-k"),
        &part("a-n", "r-k", &call("n", "t")),
        &part("a-x", "p-1", &call("x", "t")),
        &result("r-m", "a-m", "m"),
        &result("r-n", "a-n", "n"),
        &result("r-x", "a-x", "x"),
        &message(
            "l-1",
            "r-x",
            r#"{"role":"user","content":"<local-command-stdout>ok</local-command-stdout>","localCommand":true}"#,
        ),
    ]);
    let c = both(&all, "l-1", &options(r#"{"profile":"claude-code"}"#)).unwrap();
    assert_eq!(
        roles_and_calls(&c),
        [
            "user",
            "assistant",
            "toolResult:k:",
            "toolResult:m:",
            "toolResult:n:",
            "toolResult:x:",
            "assistant",
            "user"
        ]
    );
    let reply: serde_json::Value = serde_json::from_str(&c.messages[1]).unwrap();
    let names: Vec<(&str, &str)> = reply["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["id"].as_str().unwrap(), b["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [("k", "Agent"), ("m", "t"), ("n", "t"), ("x", "t")],
        "every part, in commit order, the whitespace part left out, Task sent as Agent"
    );
    assert_eq!(
        c.messages[6],
        r#"{"role":"assistant","content":[{"type":"text","text":"No response requested."}],"synthetic":true}"#
    );
    assert!(c.defects.is_empty(), "{:?}", c.defects);
    // Without the profile the path is read as it is.
    let plain = both(&all, "l-1", &options(r#"{"onDefect":"keep"}"#)).unwrap();
    assert_eq!(plain.messages.len(), 7);
}

/// Rule (docs/contract.md §12, Claude Code): a reply written one block per line hangs
/// each result on the block line it answers (or on a progress line under it), so the
/// path misses some; the profile finds them among the side children of the reply's
/// lines and sends them after the merged reply. A part whose calls the walk cannot
/// answer is left out, as Claude Code leaves it out.
#[test]
fn profile_claude_code_finds_parallel_results_hung_on_side_lines_of_a_split_reply() {
    // One reply in 3 lines: text, call k, call m. k's result hangs on k's line (a side
    // branch), m's on a progress line under m's line; a side user line is no result.
    let all = lines(&[
        &root_user("u-1"),
        &part("a-1", "u-1", r#"{"type":"text","text":"two calls"}"#),
        &part("a-2", "a-1", &call("k", "t")),
        &part("a-3", "a-2", &call("m", "t")),
        &result("r-k", "a-2", "k"),
        &user_msg("u-side", "a-1"),
        &progress("p-m", "a-3"),
        &result("r-m", "p-m", "m"),
        &user_msg("u-2", "a-3"),
    ]);
    let c = both(&all, "u-2", &options(r#"{"profile":"claude-code"}"#)).unwrap();
    assert_eq!(
        roles_and_calls(&c),
        [
            "user",
            "assistant",
            "toolResult:k:",
            "toolResult:m:",
            "user",
            "assistant"
        ]
    );
    assert_eq!(kept_ids(&c), ["u-1", "a-1", "r-k", "r-m", "u-2", "null"]);
    assert!(c.defects.is_empty(), "{:?}", c.defects);
    // An explicit onDefect reads the path only: both calls are synthesized.
    let synthesized = both(
        &all,
        "u-2",
        &options(r#"{"profile":"claude-code","onDefect":"synthesize"}"#),
    )
    .unwrap();
    assert_eq!(synthesized.defects.len(), 2);
    // A result the walk cannot reach (under another reply) is not taken.
    let far = lines(&[
        &root_user("u-1"),
        &part("a-1", "u-1", &call("k", "t")),
        &user_msg("u-2", "a-1"),
        &result("r-k", "u-2", "k"),
        &user_msg("u-3", "u-2"),
    ]);
    // Claude Code leaves out a reply part whose calls all have no result: the part is
    // dropped, not answered "aborted".
    let c = both(&far, "u-3", &options(r#"{"profile":"claude-code"}"#)).unwrap();
    assert_eq!(c.defects.len(), 1);
    assert_eq!(c.defects[0].action, Some("dropped"));
    assert_eq!(roles_and_calls(&c), ["user", "user", "user", "assistant"]);
}

#[test]
fn profile_auto_follows_the_imported_format_of_the_root() {
    let root = |format: &str| {
        format!(
            r#"{{"id":"root","parentId":null,"timestamp":1,"type":"metadata","key":"codex.session_meta","value":null{format}}}"#
        )
    };
    let rest = [user_msg("u-1", "root"), calls("a-1", "u-1", &["k"])];
    let mut imported = vec![root(r#","importedFormat":"codex""#)];
    imported.extend(rest.iter().cloned());
    let c = both(&imported, "a-1", &options(r#"{"profile":"auto"}"#)).unwrap();
    assert_eq!(
        roles_and_calls(&c),
        ["user", "assistant", "toolResult:k:aborted"]
    );
    let mut native = vec![root("")];
    native.extend(rest.iter().cloned());
    assert!(matches!(
        both(&native, "a-1", &options(r#"{"profile":"auto"}"#)),
        Err(Error::ToolPairing { .. })
    ));
}

#[test]
fn an_explicit_on_defect_wins_over_the_profile() {
    let all = lines(&[&root_user("u-1"), &calls("a-1", "u-1", &["k"])]);
    let c = both(
        &all,
        "a-1",
        &options(r#"{"profile":"pi","onDefect":"keep"}"#),
    )
    .unwrap();
    assert_eq!(roles_and_calls(&c), ["user", "assistant"]);
    assert!(matches!(
        ContextOptions::from_json(r#"{"profile":"gemini"}"#),
        Err(Error::InvalidOption { .. })
    ));
}

#[test]
fn under_a_profile_the_agents_own_cut_is_taken_as_it_is() {
    // A store refuses such a compaction when it is appended: the pure form reads them.
    let pure = |all: &[String], leaf: &str, options: &ContextOptions| {
        build_context(&entries_of(all), leaf, options)
    };
    // pi version 1 cuts at an assistant message: not an interaction start here.
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k"]),
        &result("r-1", "a-1", "k"),
        &text_msg("a-2", "r-1"),
        &compaction("c-1", "a-2", Some("a-2")),
        &user_msg("u-2", "c-1"),
    ]);
    assert_eq!(
        compaction_fault(pure(&all, "u-2", &defaults())),
        CompactionFault::NotInteractionStart
    );
    let c = pure(&all, "u-2", &options(r#"{"profile":"pi"}"#)).unwrap();
    assert_eq!(roles_and_calls(&c), ["user", "assistant", "user"]);
    assert_eq!(kept_ids(&c), ["a-2", "u-2"]);
    // Claude Code compacts with a call pending: the summary and what follows.
    let all = lines(&[
        &root_user("u-1"),
        &calls("a-1", "u-1", &["k"]),
        &compaction("c-1", "a-1", None),
        &user_msg("u-2", "c-1"),
    ]);
    assert_eq!(
        compaction_fault(pure(&all, "u-2", &defaults())),
        CompactionFault::PendingToolCalls
    );
    let c = pure(&all, "u-2", &options(r#"{"profile":"claude-code"}"#)).unwrap();
    assert_eq!(roles_and_calls(&c), ["user", "user", "assistant"]);
    // An explicit onDefect is no agent's rules: the cut is checked.
    assert_eq!(
        compaction_fault(pure(
            &all,
            "u-2",
            &options(r#"{"profile":"claude-code","onDefect":"keep"}"#)
        )),
        CompactionFault::PendingToolCalls
    );
}

// --- Property: the store reads only the tail, with the same result --------------------

/// A random tree with compactions (some keeping nothing, some cutting at a random
/// earlier entry), tool calls and results, and metadata (replayed keys and the
/// library's own `session.` keys): every line the store accepts, in append order.
fn arb_compacted_tree() -> impl Strategy<Value = Vec<String>> {
    let step = (
        any::<prop::sample::Index>(),
        0u8..7,
        any::<prop::sample::Index>(),
    );
    prop::collection::vec(step, 1..60).prop_map(|steps| {
        let store = Store::memory();
        let mut ids: Vec<String> = Vec::new();
        let mut out: Vec<String> = Vec::new();
        for (i, (parent, kind, other)) in steps.into_iter().enumerate() {
            let id = format!("e-{i}");
            let line = match ids.is_empty() {
                true => root_user(&id),
                false => {
                    let parent = ids[parent.index(ids.len())].clone();
                    let other = ids[other.index(ids.len())].clone();
                    match kind {
                        0 => user_msg(&id, &parent),
                        1 => text_msg(&id, &parent),
                        2 => format!(
                            r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"metadata","key":"{}","value":{i}}}"#,
                            ["k0", "k1", "session.k"][i % 3]
                        ),
                        3 => calls(&id, &parent, &[&format!("t{}", i % 5)]),
                        4 => result(&id, &parent, &format!("t{}", (i + 4) % 5)),
                        5 => compaction(&id, &parent, Some(&other)),
                        _ => compaction(&id, &parent, None),
                    }
                }
            };
            if store.append(&line).is_ok() {
                ids.push(id);
                out.push(line);
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn the_store_over_its_index_builds_the_pure_context(tree in arb_compacted_tree()) {
        let dir = temp_dir("context-tail");
        let path = dir.join("s.jsonl");
        let text: String = tree.iter().map(|l| format!("{l}\n")).collect();
        write_file(&path, text.as_bytes());
        // A writer's open writes the session index; the readers below read through it
        // (the base) or replay the file.
        drop(Store::open_jsonl(&path).unwrap());
        prop_assert!(session::index_path(&path).exists());
        let open = |options: &str| {
            Store::open_jsonl_with(&path, &session::JsonlOptions::from_json(options).unwrap())
                .unwrap()
                .0
        };
        let stores = [
            ("memory", store_of(&tree)),
            ("index", open(r#"{"readOnly":true}"#)),
            ("no index", open(r#"{"readOnly":true,"index":false}"#)),
        ];
        let entries = entries_of(&tree);
        for options in [
            "{}",
            r#"{"onDefect":"keep"}"#,
            r#"{"onDefect":"synthesize","profile":"pi"}"#,
            r#"{"profile":"auto","strictRoles":true}"#,
            r#"{"budget":{"maxTokens":60}}"#,
        ] {
            let options = ContextOptions::from_json(options).unwrap();
            for leaf in &entries {
                let pure = build_context(&entries, leaf.id(), &options);
                for (name, store) in &stores {
                    let stored = store.build_context(leaf.id(), &options, None);
                    match (&pure, &stored) {
                        (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{} at {}", name, leaf.id()),
                        (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                        _ => prop_assert!(false, "{name} at {}: pure {pure:?} vs {stored:?}", leaf.id()),
                    }
                }
            }
        }
    }
}

// --- Linear in one message's calls and one reply's parts (round 4) ------------------------
//
// Each rule below was quadratic before round 4 (10,000 unanswered calls of one message:
// 12 s under `synthesize`, pi and Codex; a reply of 8,000 parts under the Claude Code
// profile: 7.5 s): at 100,000 these tests would take many minutes. Linear, they take a
// moment. The linear forms are checked against the straightforward ones on random
// inputs by the unit tests of src/context.rs.

const SCALE: usize = 100_000;

/// An assistant message calling `calls` (ids `c{i}`, names `n{i}`).
fn calls_named(id: &str, parent: &str, calls: std::ops::Range<usize>) -> String {
    let blocks: Vec<String> = calls
        .map(|i| format!(r#"{{"type":"toolCall","id":"c{i}","name":"n{i}","arguments":{{}}}}"#))
        .collect();
    message(
        id,
        parent,
        &format!(r#"{{"role":"assistant","content":[{}]}}"#, blocks.join(",")),
    )
}

/// The result a profile or `synthesize` writes for call `c{i}`.
fn synthesized_for(i: usize, text: &str) -> String {
    format!(
        r#"{{"role":"toolResult","toolCallId":"c{i}","toolName":"n{i}","content":[{{"type":"text","text":"{text}"}}],"isError":true,"timestamp":1,"synthetic":true}}"#
    )
}

#[test]
fn unanswered_calls_of_one_message_are_answered_in_linear_time() {
    let all = vec![root_user("u-1"), calls_named("a-1", "u-1", 0..SCALE)];
    let entries = entries_of(&all);
    // (pi's placement, after the results, is the next test's.)
    for (json, text) in [
        (r#"{"onDefect":"synthesize"}"#, "aborted"),
        (r#"{"profile":"codex"}"#, "aborted"),
    ] {
        let c = build_context(&entries, "a-1", &options(json)).unwrap();
        assert_eq!(c.messages.len(), SCALE + 2, "{json}");
        assert_eq!(c.defects.len(), SCALE, "{json}");
        // Each call answered in call order, with its own name.
        for (i, m) in c.messages[2..].iter().enumerate() {
            assert_eq!(*m, synthesized_for(i, text), "{json}");
        }
        assert!(c.defects.iter().all(|d| d.synthesized()));
    }
}

#[test]
fn pi_answers_unanswered_calls_after_all_the_results_in_linear_time() {
    // Half the calls answered on the path: pi's "No result provided" go after the last
    // result, before the next turn; each used to walk past every result.
    let half = SCALE / 2;
    let mut all = vec![root_user("u-1"), calls_named("a-1", "u-1", 0..SCALE)];
    for i in 0..half {
        let parent = if i == 0 {
            "a-1".to_owned()
        } else {
            format!("r-{}", i - 1)
        };
        all.push(result(&format!("r-{i}"), &parent, &format!("c{i}")));
    }
    all.push(user_msg("u-2", &format!("r-{}", half - 1)));
    let c = build_context(&entries_of(&all), "u-2", &options(r#"{"profile":"pi"}"#)).unwrap();
    assert_eq!(c.messages.len(), 2 + SCALE + 1);
    assert!(c.messages[2 + half - 1].contains(&format!(r#""toolCallId":"c{}""#, half - 1)));
    for (i, m) in c.messages[2 + half..2 + SCALE].iter().enumerate() {
        assert_eq!(*m, synthesized_for(half + i, "No result provided"));
    }
    assert_eq!(c.messages[2 + SCALE], message_of(all.last().unwrap()));
}

#[test]
fn synthesized_results_of_a_long_reply_follow_its_last_message_in_linear_time() {
    // One reply of 100,000 assistant messages, one unanswered call each: every result
    // goes after the last of them (each used to walk to the end of the reply).
    let mut all = vec![root_user("u-1")];
    for i in 0..SCALE {
        let parent = if i == 0 {
            "u-1".to_owned()
        } else {
            format!("a-{}", i - 1)
        };
        all.push(calls_named(&format!("a-{i}"), &parent, i..i + 1));
    }
    let leaf = format!("a-{}", SCALE - 1);
    let c = build_context(
        &entries_of(&all),
        &leaf,
        &options(r#"{"onDefect":"synthesize"}"#),
    )
    .unwrap();
    assert_eq!(c.messages.len(), 1 + 2 * SCALE);
    for (i, m) in c.messages[1 + SCALE..].iter().enumerate() {
        assert_eq!(*m, synthesized_for(i, "aborted"));
    }
}

#[test]
fn codex_pairs_many_tool_searches_and_drops_many_outputs_in_linear_time() {
    // 50,000 tool searches without an output and 50,000 outputs without a call, and
    // 50,000 results without a call: each used to be inserted or removed in place.
    let search = |id: &str, parent: &str, kind: &str, call: &str| {
        message(
            id,
            parent,
            &format!(
                r#"{{"role":"assistant","content":[],"codexItem":{{"type":"{kind}","call_id":"{call}"}}}}"#
            ),
        )
    };
    let half = SCALE / 2;
    let mut all = vec![root_user("u-1")];
    let mut parent = "u-1".to_owned();
    for i in 0..half {
        let (s, o, r) = (format!("s-{i}"), format!("o-{i}"), format!("r-{i}"));
        all.push(search(&s, &parent, "tool_search_call", &format!("t{i}")));
        all.push(search(&o, &s, "tool_search_output", &format!("x{i}")));
        all.push(result(&r, &o, &format!("z{i}")));
        parent = r;
    }
    let c = build_context(
        &entries_of(&all),
        &parent,
        &options(r#"{"profile":"codex"}"#),
    )
    .unwrap();
    assert_eq!(c.messages.len(), 1 + 2 * half);
    assert_eq!(c.defects.len(), 3 * half);
    assert!(
        c.messages[2 * half].contains(&format!(r#""call_id":"t{}""#, half - 1))
            && c.messages[2 * half].contains(r#""synthetic":true"#)
    );
    let dropped = c.defects.iter().filter(|d| d.action == Some("dropped"));
    assert_eq!(dropped.count(), 2 * half);
}

/// A part of reply `response` with one call `c{i}`.
fn numbered_part(id: &str, parent: &str, response: &str, i: usize) -> String {
    assistant_json(
        id,
        parent,
        &format!(
            r#""content":[{{"type":"toolCall","id":"c{i}","name":"t","arguments":{{}}}}],"responseId":"{response}""#
        ),
    )
}

#[test]
fn claude_code_merges_a_reply_of_many_parts_in_linear_time() {
    // One reply of 100,000 parts, each a call; the even ones answered right after their
    // part, the odd ones never (Claude Code leaves those parts out).
    let mut all = vec![root_user("u-1")];
    let mut parent = "u-1".to_owned();
    for i in 0..SCALE {
        let part = format!("a-{i}");
        all.push(numbered_part(&part, &parent, "msg_1", i));
        parent = part;
        if i % 2 == 0 {
            let r = format!("r-{i}");
            all.push(result(&r, &parent, &format!("c{i}")));
            parent = r;
        }
    }
    let c = build_context(
        &entries_of(&all),
        &parent,
        &options(r#"{"profile":"claude-code"}"#),
    )
    .unwrap();
    // The user's, the merged reply, its 50,000 results, "No response requested.".
    assert_eq!(c.messages.len(), 1 + 1 + SCALE / 2 + 1);
    let reply: serde_json::Value = serde_json::from_str(&c.messages[1]).unwrap();
    let ids: Vec<&str> = reply["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..SCALE).step_by(2).map(|i| format!("c{i}")).collect();
    assert_eq!(ids, expected);
    assert!(c.messages[2 + SCALE / 2 - 1].contains(&format!(r#""toolCallId":"c{}""#, SCALE - 2)));
    assert_eq!(c.defects.len(), SCALE / 2);
    assert!(c.defects.iter().all(|d| d.action == Some("dropped")));
}

#[test]
fn claude_code_takes_back_the_side_results_of_many_replies_in_linear_time() {
    // 50,000 replies, each one part whose result hangs off the path (on the part's
    // line, beside the next prompt): each group used to be spliced back in place.
    let n = SCALE / 2;
    let mut all = vec![root_user("u-0")];
    for i in 0..n {
        let part = format!("a-{i}");
        all.push(numbered_part(
            &part,
            &format!("u-{i}"),
            &format!("msg_{i}"),
            i,
        ));
        all.push(result(&format!("r-{i}"), &part, &format!("c{i}")));
        all.push(user_msg(&format!("u-{}", i + 1), &part));
    }
    let leaf = format!("u-{n}");
    let c = build_context(
        &entries_of(&all),
        &leaf,
        &options(r#"{"profile":"claude-code"}"#),
    )
    .unwrap();
    assert!(c.defects.is_empty());
    assert_eq!(c.messages.len(), 1 + 3 * n + 1);
    for i in [0, n / 2, n - 1] {
        assert!(c.messages[1 + 3 * i].contains(&format!(r#""id":"c{i}""#)));
        assert!(c.messages[2 + 3 * i].contains(&format!(r#""toolCallId":"c{i}""#)));
        assert_eq!(c.messages[3 + 3 * i], message_of(&all[3 + 3 * i]));
    }
}

// --- Codex: a compaction without a replacement history (round 4) -------------------------

/// Rule (docs/contract.md §12, Codex; checked against Codex 0.171.0 by
/// tests/interop_agents.rs): at a compaction without a replacement history Codex
/// rebuilds the history as the user messages before it (its own context messages left
/// out, text only, newest first while they fit in 20,000 tokens of 4 bytes), in order,
/// then the summary; what follows comes after. Before round 4 the summary came first.
#[test]
fn profile_codex_rebuilds_a_compaction_without_replacement_history_user_messages_first() {
    let user = |id: &str, parent: &str, content: &str| {
        message(
            id,
            parent,
            &format!(r#"{{"role":"user","content":{content}}}"#),
        )
    };
    let all = lines(&[
        &root_user("u-1"),
        &text_msg("a-1", "u-1"),
        &user(
            "env",
            "a-1",
            r#"[{"type":"text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]"#,
        ),
        &user(
            "u-2",
            "env",
            r#"[{"type":"text","text":"look"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"here"}]"#,
        ),
        &text_msg("a-2", "u-2"),
        &compaction("c-1", "a-2", None),
        &user_msg("h-1", "c-1"),
        &text_msg("a-3", "h-1"),
    ]);
    let c = both(&all, "a-3", &options(r#"{"profile":"codex"}"#)).unwrap();
    assert_eq!(
        c.messages,
        [
            message_of(&all[0]).to_owned(),
            r#"{"role":"user","content":[{"type":"text","text":"look"},{"type":"text","text":"here"}]}"#.to_owned(),
            r#"{"role":"user","content":[{"type":"text","text":"s-c-1"}],"timestamp":5}"#.to_owned(),
            message_of(&all[6]).to_owned(),
            message_of(&all[7]).to_owned(),
        ]
    );
    assert_eq!(kept_ids(&c), ["u-1", "u-2", "c-1", "h-1", "a-3"]);
    assert!(!c.has_summary_message());
    assert_eq!(
        (c.interactions[0].count, c.interactions[0].cut_point),
        (3, false)
    );
    assert_eq!(c.interactions[1].first_entry_id, "h-1");
    // Without the profile: the summary message, then what the compaction keeps.
    let plain = both(&all, "a-3", &defaults()).unwrap();
    assert_eq!(kept_ids(&plain), ["h-1", "a-3"]);
    assert!(plain.has_summary_message());

    // An earlier compaction without a replacement history is part of what Codex
    // rebuilt there: its summary counts as a user message; one with a replacement
    // history ends the walk. The message over the 20,000 tokens left is sent shortened
    // to them (half from each end, the bytes over / 4 counted in the middle) and ends
    // the walk too.
    let big = format!(r#""{}""#, "x".repeat(80_001));
    let replaced = r#"{"id":"c-0","parentId":"u-0","timestamp":5,"type":"compaction","summary":"s","firstKeptEntryId":null,"tokensBefore":0,"details":{"replacementHistory":1}}"#;
    let all = lines(&[
        &root_user("u-0"),
        replaced,
        &user_msg("h-0", "c-0"),
        &compaction("c-1", "h-0", None),
        &user_msg("u-1", "c-1"),
        &compaction("c-2", "u-1", None),
        &user_msg("h-2", "c-2"),
    ]);
    let c = both(&all, "h-2", &options(r#"{"profile":"codex"}"#)).unwrap();
    assert_eq!(kept_ids(&c), ["h-0", "c-1", "u-1", "c-2", "h-2"]);
    let all = lines(&[
        &root_user("u-0"),
        &user("u-big", "u-0", &big),
        &user_msg("u-1", "u-big"),
        &compaction("c-1", "u-1", None),
        &user_msg("h-1", "c-1"),
    ]);
    let c = both(&all, "h-1", &options(r#"{"profile":"codex"}"#)).unwrap();
    assert_eq!(kept_ids(&c), ["u-big", "u-1", "c-1", "h-1"]);
    // 19,999 tokens left after u-1: 79,996 bytes, 5 over.
    let half = "x".repeat(39_998);
    assert_eq!(
        c.messages[0],
        format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"{half}"}},{{"type":"text","text":"…2 tokens truncated…"}},{{"type":"text","text":"{half}"}}]}}"#
        )
    );
}
