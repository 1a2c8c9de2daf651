//! The linear forms of the pairing rules and profiles against the straightforward forms
//! they replaced (each a walk or a rescan per call, per part or per item), on random
//! inputs: the same output, so that only the cost changed.
//!
//! The straightforward forms below are a reference model, a deliberately separate
//! implementation of each rule: they are what the fast forms are checked against, not
//! a second copy of a rule to be merged into the first.

use std::borrow::Cow;
use std::collections::HashSet;

use proptest::prelude::*;

use super::pairing::{CallerFacts, Item, Kept, Placement};
use super::profile::claude::{content_blocks, merge_split_replies, renamed_calls, whitespace_only};
use super::profile::codex::pair_tool_searches;
use super::profile::{member, with_content};
use super::*;
use crate::entry::Role;
use crate::json::{self, MAX_DEPTH, Tape};
use crate::tree::checks::ToolFacts;

/// Where a synthetic result goes, walking forward from the caller.
fn target_by_walk(roles: &[Role], placement: Placement, at: usize) -> usize {
    let mut after = at;
    while after + 1 < roles.len() && placement.passes(roles[after + 1]) {
        after += 1;
    }
    after
}

/// The synthetic result written by scanning the caller again for each call.
fn synthetic_result_by_scan(m: &Kept<'_>, call_id: &str, text: &str) -> String {
    let mut tape = Tape::default();
    json::scan(m.message, MAX_DEPTH, &mut tape).unwrap();
    let name = tape
        .get(0, "content")
        .into_iter()
        .flat_map(|content| tape.elements(content))
        .find(|&block| {
            tape.get(block, "type").map(|t| tape.string(t)).as_deref() == Some("toolCall")
                && tape.get(block, "id").map(|t| tape.string(t)).as_deref() == Some(call_id)
        })
        .and_then(|block| tape.get(block, "name"))
        .map(|name| tape.string(name).into_owned())
        .unwrap_or_default();
    let timestamp = match tape.get(0, "timestamp") {
        Some(t) => tape.raw(t),
        None => m.entry.facts.timestamp.bytes(m.entry.json),
    };
    let content = Object::new()
        .string("type", "text")
        .string("text", text)
        .finish();
    Object::new()
        .string("role", "toolResult")
        .string("toolCallId", call_id)
        .string("toolName", &name)
        .raw("content", &format!("[{content}]"))
        .boolean("isError", true)
        .raw_bytes("timestamp", timestamp)
        .boolean("synthetic", true)
        .finish()
}

/// The split replies merged part by part: the merged message written anew at
/// every part.
fn merge_part_by_part(items: Vec<Item<'_>>) -> Vec<Item<'_>> {
    let mut tape = Tape::default();
    let mut out: Vec<Item<'_>> = Vec::new();
    let mut reply: Option<(usize, String)> = None;
    for item in items {
        let role = member(&mut tape, item.text.as_bytes(), "role");
        match role.as_deref() {
            Some("assistant") if whitespace_only(&tape) => {}
            Some("assistant") => {
                let id = tape
                    .get(0, "responseId")
                    .map(|v| tape.string(v).into_owned());
                match (&reply, id) {
                    (Some((at, current)), Some(id)) if *current == id => {
                        let mut a = Tape::default();
                        json::scan(out[*at].text.as_bytes(), MAX_DEPTH, &mut a).unwrap();
                        let mut b = Tape::default();
                        json::scan(item.text.as_bytes(), MAX_DEPTH, &mut b).unwrap();
                        let mut content = content_blocks(&a).unwrap();
                        content.extend(content_blocks(&b).unwrap());
                        out[*at].text = Cow::Owned(with_content(&b, &content));
                    }
                    (_, id) => {
                        reply = id.map(|id| (out.len(), id));
                        out.push(item);
                    }
                }
            }
            Some("toolResult") => out.push(item),
            _ => {
                reply = None;
                out.push(item);
            }
        }
    }
    for item in &mut out {
        if let Some(renamed) = renamed_calls(&item.text).unwrap() {
            item.text = Cow::Owned(renamed);
        }
    }
    out
}

/// Codex's tool search pairing by inserting and removing in place, back to front.
fn pair_in_place(runs: &mut [Vec<Item<'_>>]) -> Vec<Defect> {
    let mut tape = Tape::default();
    let mut found: Vec<(usize, usize, bool, String)> = Vec::new();
    for (r, items) in runs.iter().enumerate() {
        for (i, item) in items.iter().enumerate() {
            json::scan(item.text.as_bytes(), MAX_DEPTH, &mut tape).unwrap();
            let Some(codex) = tape.get(0, "codexItem") else {
                continue;
            };
            let kind = tape.get(codex, "type").map(|v| tape.string(v).into_owned());
            let call = tape
                .get(codex, "call_id")
                .map(|v| tape.string(v).into_owned());
            if let (Some(kind), Some(call)) = (kind, call) {
                match kind.as_str() {
                    "tool_search_call" => found.push((r, i, true, call)),
                    "tool_search_output" => found.push((r, i, false, call)),
                    _ => {}
                }
            }
        }
    }
    let calls: HashSet<String> = found.iter().filter(|f| f.2).map(|f| f.3.clone()).collect();
    let outputs: HashSet<String> = found.iter().filter(|f| !f.2).map(|f| f.3.clone()).collect();
    let mut defects = Vec::new();
    for (r, i, is_call, call) in found.iter().rev() {
        let (r, i) = (*r, *i);
        let start = runs[r]
            .first()
            .and_then(|item| item.entry)
            .unwrap_or_default();
        let defect = |reason, action| Defect {
            interaction_start_id: start.to_owned(),
            entry_id: runs[r][i].entry.unwrap_or_default().to_owned(),
            tool_call_id: call.clone(),
            reason,
            action: Some(action),
        };
        if *is_call && !outputs.contains(call) {
            let d = defect(PairingDefect::MissingResult, SYNTHESIZED);
            let output = Object::new()
                .string("type", "tool_search_output")
                .string("call_id", call)
                .string("status", "completed")
                .string("execution", "client")
                .raw("tools", "[]")
                .finish();
            let message = Object::new()
                .string("role", "assistant")
                .raw("content", "[]")
                .raw("codexItem", &output)
                .raw("synthetic", "true")
                .finish();
            let names = runs[r][i].names;
            let item = Item {
                text: Cow::Owned(message),
                entry: None,
                names,
            };
            runs[r].insert(i + 1, item);
            defects.push(d);
        } else if !*is_call && !calls.contains(call) {
            defects.push(defect(PairingDefect::OrphanResult, DROPPED));
            runs[r].remove(i);
        }
    }
    defects.reverse();
    defects
}

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::ToolResult),
        Just(Role::Extension)
    ]
}

/// A content block: a call (id and name from small pools, so that ids repeat), a
/// text (sometimes whitespace only) or a `Task` call.
fn block() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..4, 0u8..3).prop_map(|(id, n)| format!(
            r#"{{"type":"toolCall","id":"c{id}","name":"n{n}","arguments":{{}}}}"#
        )),
        (0u8..4).prop_map(|id| format!(
            r#"{{"type":"toolCall","id":"c{id}","name":"Task","arguments":{{}}}}"#
        )),
        Just(r#"{"type":"text","text":"hi"}"#.to_owned()),
        Just(r#"{"type":"text","text":" \n"}"#.to_owned()),
    ]
}

/// A message's `content`: absent, a string, or an array of blocks.
fn content() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(r#""text""#.to_owned())),
        6 => prop::collection::vec(block(), 0..4).prop_map(|b| Some(format!("[{}]", b.join(",")))),
    ]
}

/// A message: a role, a `content`, maybe a `responseId` (of two), maybe a
/// timestamp, and a member after `content` that the merged reply takes from the
/// last part.
fn message() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("assistant"),
            Just("assistant"),
            Just("toolResult"),
            Just("user")
        ],
        content(),
        prop::option::of(0u8..2),
        prop::option::of(0u16..100),
        0u8..3,
    )
        .prop_map(|(role, content, response, timestamp, tail)| {
            let mut object = Object::new().string("role", role);
            if let Some(content) = content {
                object = object.raw("content", &content);
            }
            if let Some(r) = response {
                object = object.string("responseId", &format!("msg_{r}"));
            }
            if let Some(t) = timestamp {
                object = object.number("timestamp", usize::from(t));
            }
            object.number("tail", usize::from(tail)).finish()
        })
}

fn items<'a>(texts: &'a [String], ids: &'a [String]) -> Vec<Item<'a>> {
    texts
        .iter()
        .zip(ids)
        .map(|(text, id)| Item {
            text: Cow::Borrowed(text),
            entry: Some(id),
            names: id,
        })
        .collect()
}

fn texts(items: &[Item<'_>]) -> Vec<(String, Option<String>, String)> {
    items
        .iter()
        .map(|i| {
            (
                i.text.clone().into_owned(),
                i.entry.map(str::to_owned),
                i.names.to_owned(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn placement_targets_equal_the_walk_from_each_message(
        roles in prop::collection::vec(role(), 0..40),
    ) {
        for placement in [Placement::AfterCall, Placement::AfterReply, Placement::BeforeNextTurn] {
            let targets = placement.targets(&roles);
            let walked: Vec<usize> =
                (0..roles.len()).map(|at| target_by_walk(&roles, placement, at)).collect();
            prop_assert_eq!(targets, walked);
        }
    }

    #[test]
    fn a_caller_read_once_writes_the_results_a_scan_per_call_writes(
        blocks in prop::collection::vec(block(), 0..6),
        timestamp in prop::option::of(0u16..100),
    ) {
        let mut message = Object::new()
            .string("role", "assistant")
            .raw("content", &format!("[{}]", blocks.join(",")));
        if let Some(t) = timestamp {
            message = message.number("timestamp", usize::from(t));
        }
        let message = message.finish();
        let line = format!(r#"{{"id":"a","parentId":null,"timestamp":1733234567890,"type":"message","message":{message}}}"#);
        let entry = crate::parse_entry(&line).unwrap();
        let entry = PathEntry::of(&entry);
        let kept = Kept {
            entry,
            message: entry.message().unwrap(),
            role: Role::Assistant,
            tools: ToolFacts::default(),
        };
        let facts = CallerFacts::read(&mut Tape::default(), 0, &kept).unwrap();
        for call in ["c0", "c1", "c2", "c3", "c9"] {
            prop_assert_eq!(
                facts.synthetic_result(call, "aborted"),
                synthetic_result_by_scan(&kept, call, "aborted")
            );
        }
    }

    #[test]
    fn split_replies_merged_once_equal_merging_part_by_part(
        texts_in in prop::collection::vec(message(), 0..24),
    ) {
        let ids: Vec<String> = (0..texts_in.len()).map(|i| format!("e{i}")).collect();
        let merged = merge_split_replies(items(&texts_in, &ids)).unwrap();
        let reference = merge_part_by_part(items(&texts_in, &ids));
        prop_assert_eq!(texts(&merged), texts(&reference));
    }

    #[test]
    fn tool_searches_paired_in_one_pass_equal_pairing_in_place(
        runs_in in prop::collection::vec(
            prop::collection::vec((0u8..4, 0u8..4), 0..12), 0..5),
    ) {
        // Each item: a tool search call, an output, another Codex item or a plain
        // message, with a call id from a small pool.
        let texts_in: Vec<Vec<String>> = runs_in
            .iter()
            .map(|run| {
                run.iter()
                    .map(|&(kind, call)| match kind {
                        0 => format!(r#"{{"role":"assistant","content":[],"codexItem":{{"type":"tool_search_call","call_id":"t{call}"}}}}"#),
                        1 => format!(r#"{{"role":"assistant","content":[],"codexItem":{{"type":"tool_search_output","call_id":"t{call}"}}}}"#),
                        2 => format!(r#"{{"role":"assistant","content":[],"codexItem":{{"type":"web_search_call","call_id":"t{call}"}}}}"#),
                        _ => r#"{"role":"user","content":"x"}"#.to_owned(),
                    })
                    .collect()
            })
            .collect();
        let ids: Vec<Vec<String>> = texts_in
            .iter()
            .enumerate()
            .map(|(r, run)| (0..run.len()).map(|i| format!("e{r}-{i}")).collect())
            .collect();
        let mut paired: Vec<Vec<Item<'_>>> =
            texts_in.iter().zip(&ids).map(|(t, i)| items(t, i)).collect();
        let mut reference: Vec<Vec<Item<'_>>> =
            texts_in.iter().zip(&ids).map(|(t, i)| items(t, i)).collect();
        let defects = pair_tool_searches(&mut paired, &mut Tape::default());
        let reference_defects = pair_in_place(&mut reference);
        prop_assert_eq!(defects, reference_defects);
        let paired: Vec<_> = paired.iter().map(|run| texts(run)).collect();
        let reference: Vec<_> = reference.iter().map(|run| texts(run)).collect();
        prop_assert_eq!(paired, reference);
    }
}
