//! The properties checked by the fuzz targets (`fuzz/fuzz_targets/*.rs`, which include
//! this file by path) and replayed over the corpus by `tests/fuzz_corpus.rs` (T12–T15).
//! Each check panics on a violation, which is what libFuzzer and `cargo test` report.
//! Depends on `session`, `serde_json` and std only.

use std::collections::HashSet;

use session::{
    Entry, Error, JsonErrorKind, LineFault, MAX_DEPTH, MAX_LINE_BYTES, Warning, messages_on_path,
    parse_entries, parse_entry, path_to, recover_jsonl,
};

/// T12: `parse_entry` never panics; what it accepts re-parses from its `json()` to an
/// equal entry (and the canonical form is a fixed point); serde_json agrees: it reads the
/// canonical text as an object with the same value as the input, it accepts every input
/// that we reject only for its shape, and it rejects every input that we reject for
/// its syntax. Inputs we reject for JSON hygiene (duplicate key, lossy number, nesting)
/// are the only place where serde_json may accept what we refuse.
pub fn check_parse_entry(data: &[u8]) {
    let ours = parse_entry(data);
    let theirs = serde_json::from_slice::<serde_json::Value>(data);
    // serde_json's default recursion limit admits 127 levels of nesting; the contract admits 128.
    // That one level is the only known difference, and it is checked, not skipped.
    // Since round 2 (docs/contract.md §6.1) a lone surrogate escape is kept as written; serde_json
    // refuses it. That is the second known difference.
    let serde_depth_limit = |e: &serde_json::Error| {
        let text = e.to_string();
        (text.starts_with("recursion limit exceeded") && nesting_depth(data) == MAX_DEPTH)
            || text.contains("surrogate")
            || text.contains("hex escape")
    };
    match ours {
        Ok(entry) => {
            let again = parse_entry(entry.json()).expect("the canonical json re-parses");
            assert_eq!(again, entry, "re-parse changed the entry");
            assert_eq!(
                again.json(),
                entry.json(),
                "canonical form is not a fixed point"
            );
            assert_eq!(again.id(), entry.id());
            assert_eq!(again.parent_id(), entry.parent_id());
            assert_eq!(again.kind(), entry.kind());
            assert_eq!(again.timestamp().to_bits(), entry.timestamp().to_bits());
            assert!(nesting_depth(data) <= MAX_DEPTH);
            let (canonical, input) = match (
                serde_json::from_str::<serde_json::Value>(entry.json()),
                theirs,
            ) {
                (Ok(c), Ok(i)) => (c, i),
                (Err(e), _) | (_, Err(e)) if serde_depth_limit(&e) => return,
                (c, i) => panic!("serde_json rejects what parse_entry accepted: {c:?} / {i:?}"),
            };
            assert!(canonical.is_object(), "an accepted entry is an object");
            assert_eq!(canonical, input, "normalising changed the value");
            assert_eq!(canonical["id"].as_str(), Some(entry.id()));
        }
        Err(Error::InvalidEntry(e)) => {
            if let Err(err) = &theirs {
                assert!(
                    serde_depth_limit(err),
                    "we call it well-formed JSON of the wrong shape ({e}), serde_json says {err}"
                );
            }
            assert!(
                e.pointer.is_empty() || e.pointer.starts_with('/'),
                "pointer {:?}",
                e.pointer
            );
        }
        Err(Error::InvalidJson(e)) => match e.kind {
            JsonErrorKind::DuplicateKey(_)
            | JsonErrorKind::LossyNumber(_)
            | JsonErrorKind::TooDeep(_) => {}
            _ => assert!(
                theirs.is_err(),
                "we reject {:?} at {:?} as {}, serde_json accepts it",
                String::from_utf8_lossy(data),
                e.pointer,
                e.kind
            ),
        },
        Err(other) => panic!("parse_entry returned {other:?}"),
    }
}

/// The deepest nesting of arrays and objects in `data` (brackets outside strings).
fn nesting_depth(data: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &b in data {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                max = max.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// What an independent reading of a JSONL byte string commits: split on `\n`; every
/// piece but the last is a committed line, skipped when blank (space, tab, CR only) and
/// otherwise parsed with `parse_entry`; a non-blank last piece is an unterminated tail.
/// `Err((line, error))` is the first bad committed line.
pub fn oracle_recover(bytes: &[u8]) -> Result<(Vec<Entry>, Option<u64>), (u64, Error)> {
    let blank = |s: &[u8]| s.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
    let mut pieces: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let tail = pieces.pop().unwrap_or_default();
    let mut entries = Vec::new();
    for (i, line) in pieces.iter().enumerate() {
        let number = i as u64 + 1;
        if blank(line) {
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            return Err((
                number,
                Error::Internal {
                    message: "too long".into(),
                },
            ));
        }
        match parse_entry(line) {
            Ok(entry) => entries.push(entry),
            Err(e) => return Err((number, e)),
        }
    }
    let tail_line = (!blank(tail)).then_some(pieces.len() as u64 + 1);
    Ok((entries, tail_line))
}

/// How a recovery came out, in a form two readings can be compared by.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Recovered {
        entries: Vec<String>,
        tail_line: Option<u64>,
    },
    Corrupt {
        line: u64,
    },
}

/// Runs `recover_jsonl` and checks it against [`oracle_recover`]: the same committed
/// entries, the same warning line, or the same corrupt line with the same fault.
pub fn check_recover_matches_oracle(bytes: &[u8]) -> Outcome {
    let ours = recover_jsonl(bytes);
    let oracle = oracle_recover(bytes);
    match (ours, oracle) {
        (Ok(r), Ok((entries, tail_line))) => {
            assert_eq!(
                r.entries, entries,
                "committed entries differ from the oracle"
            );
            let warnings: Vec<Warning> = tail_line
                .map(|line| Warning::UnterminatedTail { line })
                .into_iter()
                .collect();
            assert_eq!(r.warnings, warnings, "tail warning differs from the oracle");
            Outcome::Recovered {
                entries: r.entries.iter().map(|e| e.json().to_owned()).collect(),
                tail_line,
            }
        }
        (Err(Error::CorruptLine { line, fault }), Err((oracle_line, error))) => {
            assert_eq!(
                line, oracle_line,
                "corrupt line number differs from the oracle"
            );
            match (&fault, &error) {
                (LineFault::Json(a), Error::InvalidJson(b)) => assert_eq!(a, b),
                (LineFault::Entry(a), Error::InvalidEntry(b)) => assert_eq!(a, b),
                (LineFault::TooLong { .. }, Error::Internal { .. }) => {}
                // A long line is judged by the first byte that cannot occur there in an
                // entry line, without keeping the line; parse_entry rejects it too.
                (
                    LineFault::NotAnEntry { offset, byte },
                    Error::InvalidJson(_) | Error::InvalidEntry(_),
                ) => {
                    let text = bytes.split(|&b| b == b'\n').nth(line as usize - 1);
                    assert_eq!(text.and_then(|t| t.get(*offset as usize)), Some(byte));
                }
                _ => panic!("line {line}: fault {fault:?}, the oracle says {error:?}"),
            }
            Outcome::Corrupt { line }
        }
        (ours, oracle) => panic!(
            "recover_jsonl and the oracle disagree:\n  ours:   {:?}\n  oracle: {:?}",
            ours.map(|r| (r.entries.len(), r.warnings)),
            oracle.map(|(e, t)| (e.len(), t)).map_err(|(l, _)| l)
        ),
    }
}

/// T13: `recover_jsonl(a ++ b)` agrees with the oracle, and so does `recover_jsonl(a)`;
/// appending bytes never takes back what a prefix committed: what `a` commits is a
/// prefix of what `a ++ b` commits, or `a ++ b` fails at a line beyond `a`'s.
/// The split point comes from the first byte.
pub fn check_recover(data: &[u8]) {
    let whole = check_recover_matches_oracle(data);
    let split = data.first().map_or(0, |&b| b as usize * data.len() / 256);
    let prefix = check_recover_matches_oracle(&data[..split]);
    match (&prefix, &whole) {
        (Outcome::Corrupt { line: a }, Outcome::Corrupt { line: b }) => {
            assert_eq!(a, b, "a longer file moved the first corrupt line")
        }
        (Outcome::Corrupt { line }, Outcome::Recovered { .. }) => {
            panic!("a prefix is corrupt at line {line} but the whole file recovers")
        }
        (
            Outcome::Recovered {
                entries: a,
                tail_line,
            },
            Outcome::Recovered { entries: b, .. },
        ) => {
            assert!(b.starts_with(a), "appending bytes lost committed entries");
            let _ = tail_line;
        }
        (Outcome::Recovered { entries, .. }, Outcome::Corrupt { line }) => {
            let committed_lines = data[..split].iter().filter(|&&b| b == b'\n').count() as u64;
            assert!(
                *line > committed_lines,
                "line {line} was committed and fine in the prefix ({} entries)",
                entries.len()
            );
        }
    }
}

const IDS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

/// Entries decoded from fuzz bytes: three bytes per entry choose its id, its parent
/// (one of the ids, null, or an id that is never defined) and its kind. A small id
/// alphabet makes duplicates, cycles and missing parents common. An input that starts
/// with `[` is read as a JSON array of entries instead.
pub fn entries_from_bytes(data: &[u8]) -> Option<Vec<Entry>> {
    if data.first() == Some(&b'[') {
        return parse_entries(data).ok();
    }
    let mut texts = Vec::new();
    for (i, c) in data.chunks_exact(3).take(32).enumerate() {
        let id = IDS[c[0] as usize % IDS.len()];
        let parent = match c[1] % 10 {
            8 => "null".to_owned(),
            9 => "\"zz\"".to_owned(),
            p => format!("\"{}\"", IDS[p as usize % IDS.len()]),
        };
        let body = match c[2] % 4 {
            0 => r#""type":"message","message":{"role":"user","content":"q"}"#,
            1 => {
                r#""type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{}}]}"#
            }
            2 => {
                r#""type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":false}"#
            }
            _ => r#""type":"metadata","key":"k","value":[1]"#,
        };
        texts.push(format!(
            r#"{{"id":"{id}","parentId":{parent},"timestamp":{i},{body}}}"#
        ));
    }
    let entries: Vec<Entry> = texts
        .iter()
        .map(|t| parse_entry(t).expect("a decoded entry is valid"))
        .collect();
    // The array form reads the same entries.
    let array = format!("[{}]", texts.join(","));
    assert_eq!(
        parse_entries(array).expect("array of valid entries"),
        entries
    );
    Some(entries)
}

/// What `path_to` must answer, read straight from docs/contract.md §3.
#[derive(Debug)]
enum PathOracle {
    Path(Vec<usize>),
    DuplicateIds(HashSet<String>),
    UnknownLeaf,
    MissingParent { child: String, parent: String },
    Cycle(String),
}

fn oracle_path(entries: &[Entry], leaf: &str) -> PathOracle {
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = entries
        .iter()
        .filter(|e| !seen.insert(e.id()))
        .map(|e| e.id().to_owned())
        .collect();
    if !duplicates.is_empty() {
        return PathOracle::DuplicateIds(duplicates);
    }
    let find = |id: &str| entries.iter().position(|e| e.id() == id);
    let Some(mut at) = find(leaf) else {
        return PathOracle::UnknownLeaf;
    };
    let mut path = Vec::new();
    loop {
        if path.contains(&at) {
            return PathOracle::Cycle(entries[at].id().to_owned());
        }
        path.push(at);
        let Some(parent) = entries[at].parent_id() else {
            break;
        };
        match find(parent) {
            Some(p) => at = p,
            None => {
                return PathOracle::MissingParent {
                    child: entries[at].id().to_owned(),
                    parent: parent.to_owned(),
                };
            }
        }
    }
    path.reverse();
    PathOracle::Path(path)
}

/// T12 for `path_to` over arbitrary entry arrays: for every leaf (each id and one that
/// is never defined) the answer is a root-to-leaf chain whose parent links hold, or the
/// documented error with the right facts; `messages_on_path` is that chain's messages.
pub fn check_path_to(data: &[u8]) {
    let Some(entries) = entries_from_bytes(data) else {
        return;
    };
    let mut leaves: Vec<&str> = entries.iter().map(Entry::id).collect();
    leaves.sort_unstable();
    leaves.dedup();
    leaves.push("zz");
    for leaf in leaves {
        let ours = path_to(&entries, leaf);
        match (&ours, oracle_path(&entries, leaf)) {
            (Ok(path), PathOracle::Path(expected)) => {
                let expected: Vec<&Entry> = expected.iter().map(|&i| &entries[i]).collect();
                assert_eq!(path.iter().collect::<Vec<_>>(), expected);
                assert_eq!(path.first().and_then(Entry::parent_id), None, "root first");
                assert_eq!(path.last().map(Entry::id), Some(leaf), "leaf last");
                for pair in path.windows(2) {
                    assert_eq!(pair[1].parent_id(), Some(pair[0].id()), "parent link");
                }
                let messages = messages_on_path(&entries, leaf).expect("same path");
                let expected: Vec<String> = path
                    .iter()
                    .filter_map(Entry::message_json)
                    .map(str::to_owned)
                    .collect();
                let got: Vec<String> = messages.iter().map(|m| m.json().to_owned()).collect();
                assert_eq!(got, expected);
            }
            (Err(Error::DuplicateId { id, line: None }), PathOracle::DuplicateIds(ids)) => {
                assert!(ids.contains(id), "{id} is not duplicated")
            }
            (Err(Error::UnknownLeaf { id }), PathOracle::UnknownLeaf) => assert_eq!(id, leaf),
            (
                Err(Error::MissingParent {
                    child_id,
                    parent_id,
                    line: None,
                }),
                PathOracle::MissingParent { child, parent },
            ) => assert_eq!((child_id, parent_id), (&child, &parent)),
            (Err(Error::Cycle { id }), PathOracle::Cycle(expected)) => assert_eq!(id, &expected),
            (ours, oracle) => panic!("path_to({leaf}): {ours:?}, expected {oracle:?}"),
        }
        if ours.is_err() {
            assert!(messages_on_path(&entries, leaf).is_err());
        }
    }
}

/// Entries for `build_context` decoded from fuzz bytes, three per entry: id, parent,
/// and a kind among messages of each role (tool calls and results over two call ids,
/// so that pairing defects are common), metadata, extension messages and compactions
/// keeping from one of the ids or nothing.
pub fn context_entries_from_bytes(data: &[u8]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (i, c) in data.chunks_exact(3).take(24).enumerate() {
        let id = IDS[c[0] as usize % IDS.len()];
        let parent = match c[1] % 10 {
            8 => "null".to_owned(),
            9 => "\"zz\"".to_owned(),
            p => format!("\"{}\"", IDS[p as usize % IDS.len()]),
        };
        let call = ["c", "d"][(c[2] / 8) as usize % 2];
        let kept = match (c[2] / 16) % 9 {
            8 => "null".to_owned(),
            k => format!("\"{}\"", IDS[k as usize % IDS.len()]),
        };
        let body = match c[2] % 8 {
            0 => r#""type":"message","message":{"role":"user","content":"q"}"#.to_owned(),
            1 => format!(
                r#""type":"message","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"read","arguments":{{}}}}]}}"#
            ),
            2 => format!(
                r#""type":"message","message":{{"role":"toolResult","toolCallId":"{call}","toolName":"read","content":[],"isError":false}}"#
            ),
            3 => r#""type":"message","message":{"role":"assistant","content":[{"type":"text","text":"a"}]}"#.to_owned(),
            4 => format!(r#""type":"metadata","key":"k{call}","value":{i}"#),
            5 => r#""type":"message","message":{"role":"custom","x":"\ud83d"}"#.to_owned(),
            _ => format!(
                r#""type":"compaction","summary":"s{i}","firstKeptEntryId":{kept},"tokensBefore":{i}"#
            ),
        };
        let text = format!(r#"{{"id":"{id}","parentId":{parent},"timestamp":{i},{body}}}"#);
        // A compaction that keeps itself or has no parent is refused at call time.
        if let Ok(entry) = parse_entry(&text) {
            entries.push(entry);
        }
    }
    entries
}

/// T12 for `build_context` (docs/contract.md §7) over arbitrary entry arrays and leaves: never a
/// panic; the documented error (the path's own, or invalid_compaction / tool_pairing
/// on a good path), or an output that satisfies §7.3: kept messages byte-identical to
/// their entries' messages and in path order, a summary exactly when a compaction is
/// used, interactions that tile the kept messages, a budget that holds unless the
/// newest interaction alone overflows, the identity with `messages_on_path` when
/// nothing is compacted, skipped or trimmed, and JSON output. The store form agrees
/// with the pure form over the store's entries, and never finds an invalid compaction
/// (the store checked each one at append).
pub fn check_build_context(data: &[u8]) {
    use session::{
        BudgetReason, ContextOptions, OnDefect, Store, build_context, build_context_with,
    };
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let entries = context_entries_from_bytes(rest);
    let mut options = ContextOptions {
        on_defect: [
            OnDefect::Error,
            OnDefect::Skip,
            OnDefect::Keep,
            OnDefect::Synthesize,
        ][first as usize % 4],
        ..ContextOptions::default()
    };
    if first & 4 != 0 {
        options.budget = Some(session::Budget {
            max_tokens: f64::from(first >> 3) * 4.0,
            reserved_output: f64::from(first & 8),
            safety_margin: 0.0,
        });
    }
    let mut leaves: Vec<&str> = entries.iter().map(Entry::id).collect();
    leaves.sort_unstable();
    leaves.dedup();
    leaves.push("zz");
    for leaf in &leaves {
        let path = path_to(&entries, leaf);
        let mut calls = 0usize;
        let built = build_context_with(&entries, leaf, &options, &mut |m: &str| {
            calls += 1;
            Ok(m.len() as f64 / 8.0)
        });
        let context = match (built, &path) {
            (Ok(context), Ok(_)) => context,
            (Err(e), Err(expected)) => {
                assert_eq!(e.to_string(), expected.to_string(), "the path's own error");
                continue;
            }
            (Err(Error::InvalidCompaction { .. }), Ok(_)) => continue,
            (Err(Error::ToolPairing { .. }), Ok(_))
                if matches!(options.on_defect, OnDefect::Error | OnDefect::Synthesize) =>
            {
                continue;
            }
            (other, path) => panic!("build_context({leaf}): {other:?}; path {path:?}"),
        };
        let path = path.as_ref().expect("matched above");
        let summary = usize::from(context.compaction.is_some());
        assert_eq!(
            context.messages.len(),
            context.kept_entry_ids.len() + summary
        );
        // Kept messages are their entries' messages, in path order.
        let mut at = 0;
        for (id, message) in context
            .kept_entry_ids
            .iter()
            .zip(&context.messages[summary..])
        {
            let Some(id) = id else {
                assert!(message.contains("\"synthetic\":true"), "{message}");
                continue;
            };
            let position = path[at..]
                .iter()
                .position(|e| e.id() == id)
                .expect("kept entries are on the path, in order");
            at += position + 1;
            assert_eq!(path[at - 1].message_json(), Some(message.as_str()));
        }
        // Interactions tile the kept messages.
        let mut next = summary;
        for interaction in &context.interactions {
            assert_eq!(interaction.start, next);
            assert!(interaction.count > 0);
            assert_eq!(
                context.kept_entry_ids[interaction.start - summary].as_deref(),
                Some(interaction.first_entry_id.as_str())
            );
            assert_eq!(interaction.tokens.is_some(), options.budget.is_some());
            next += interaction.count;
        }
        assert_eq!(next, context.messages.len());
        match &context.budget {
            None => assert_eq!(calls, 0, "no budget, no estimates"),
            Some(budget) => {
                // Trimmed interactions were estimated too; kept ones certainly were.
                assert!(
                    calls >= context.messages.len(),
                    "every emitted message estimated"
                );
                match budget.reason {
                    BudgetReason::WithinBudget => assert_eq!(budget.dropped_interactions, 0),
                    BudgetReason::Trimmed => assert!(budget.dropped_interactions > 0),
                    BudgetReason::SingleInteractionOverflow => {}
                }
                if budget.reason != BudgetReason::SingleInteractionOverflow {
                    assert!(budget.used <= budget.available + 1e-9, "{budget:?}");
                }
            }
        }
        if context.compaction.is_none()
            && context.budget.is_none()
            && context.skipped.is_empty()
            && context.defects.iter().all(|d| !d.synthesized())
        {
            let all: Vec<String> = messages_on_path(&entries, leaf)
                .expect("the path is good")
                .iter()
                .map(|m| m.json().to_owned())
                .collect();
            assert_eq!(
                context.messages, all,
                "no compaction, no budget: messages_on_path"
            );
        }
        // serde_json refuses lone surrogate escapes, which the decoder above writes.
        let json = context.to_json().replace(r"\ud83d", r"\u0041");
        let value: serde_json::Value = serde_json::from_str(&json).expect("JSON output");
        assert_eq!(value["leafId"].as_str(), Some(*leaf));
    }
    // The store form: appends what the store accepts, then agrees with the pure form.
    let store = Store::memory();
    for entry in &entries {
        let _ = store.append(entry.json());
    }
    let committed = store.entries().expect("a memory store reads");
    let options = ContextOptions {
        budget: None,
        ..options
    };
    for leaf in &leaves {
        let stored = store.build_context(leaf, &options, None);
        let pure = build_context(&committed, leaf, &options);
        match (&stored, &pure) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            _ => panic!("store {stored:?} vs pure {pure:?}"),
        }
        assert!(
            !matches!(stored, Err(Error::InvalidCompaction { .. })),
            "a committed compaction is valid"
        );
    }
}

/// Everything a read-only open of `path` tells, with the session index (`index`) or
/// without: its report, the entries, the navigation, the labels and each leaf's path
/// and context, or its error.
fn index_outcome(path: &std::path::Path, index: bool) -> String {
    use session::{ContextOptions, JsonlOptions, Store, TreeOptions};
    let options = JsonlOptions::from_json(&format!(r#"{{"readOnly":true,"index":{index}}}"#))
        .expect("valid options");
    let (store, report) = match Store::open_jsonl_with(path, &options) {
        Ok(opened) => opened,
        Err(e) => return format!("error: {e:?}"),
    };
    let read = store
        .read_json()
        .map_or_else(|e| format!("{e:?}"), |r| String::from_utf8_lossy(&r).into());
    let tree = store.tree_json(&TreeOptions::default());
    let (leaves, labels) = (store.leaves_json(), store.labels_json());
    let per_leaf: Vec<String> = store.leaves().map_or_else(
        |e| vec![format!("{e:?}")],
        |leaves| {
            leaves
                .leaves
                .iter()
                .map(|leaf| {
                    let path = store
                        .path_to_json(&leaf.id)
                        .map(|p| String::from_utf8_lossy(&p).into_owned());
                    let context = store
                        .build_context(&leaf.id, &ContextOptions::default(), None)
                        .map(|c| c.to_json());
                    format!("{path:?} {context:?}")
                })
                .collect()
        },
    );
    format!(
        "{}\n{read}\n{tree:?}\n{leaves:?}\n{labels:?}\n{per_leaf:?}",
        report.to_json()
    )
}

/// T13 (the session index writer, issue 21): a writer over arbitrary session bytes
/// writes the index at open and at close, twice (the second time opening through the
/// index it left); after each, an open with the index answers exactly as one without.
/// Input: a flag byte (bit 0: keep the lines as given; clear: the lines that parse are
/// made canonical and blank lines dropped, so that most files get an index; bit 1: cut
/// the last `\n`; bit 2: append an entry in the first writer; bit 3: in the second),
/// then the lines.
pub fn check_index_writer(data: &[u8]) {
    index_writer_rounds(data);
}

/// [`check_index_writer`]; returns whether the first writer left an index (so that a
/// test can check that the seeds reach the writer).
pub fn index_writer_rounds(data: &[u8]) -> bool {
    use session::{Store, index_path};
    let [flags, rest @ ..] = data else {
        return false;
    };
    let mut file = Vec::with_capacity(rest.len() + 1);
    let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
    for line in rest.split(|&b| b == b'\n') {
        match parse_entry(line) {
            Ok(entry) if flags & 1 == 0 => file.extend_from_slice(entry.json().as_bytes()),
            _ if flags & 1 == 0 && line.iter().all(u8::is_ascii_whitespace) => continue,
            _ => file.extend_from_slice(line),
        }
        file.push(b'\n');
    }
    if flags & 2 != 0 {
        file.pop();
    }
    // The fuzz targets include this file without `common`: the same tempfile guard as
    // `common::temp_dir`, which removes the folder also when a check panics.
    let dir = tempfile::Builder::new()
        .prefix("libsession-test-index-writer-")
        .tempdir()
        .expect("scratch folder");
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, &file).expect("write the session");
    let mut indexed = false;
    for (round, append) in [(1, flags & 4 != 0), (2, flags & 8 != 0)] {
        if let Ok((store, _)) = Store::open_jsonl(&path) {
            if append {
                let parent = store.latest_leaf().ok().flatten().map(|leaf| leaf.id);
                let parent = serde_json::to_string(&parent).expect("a JSON string or null");
                let line = format!(
                    r#"{{"id":"fuzz-{round}","parentId":{parent},"timestamp":{round},"type":"message","message":{{"role":"user","content":"x"}}}}"#
                );
                let _ = store.append(&line);
            }
            drop(store);
        }
        indexed |= round == 1 && index_path(&path).exists();
        let (with, without) = (index_outcome(&path, true), index_outcome(&path, false));
        if with != without {
            panic!("round {round}: with the index:\n{with}\nwithout:\n{without}");
        }
    }
    indexed
}
