//! Claude Code's send-time rules (docs/contract.md §12): a reply written one block per
//! line is one message, its parts and results written off the path are taken back, a
//! whitespace-only reply is left out, and a conversation ending on the user's side
//! gets "No response requested.".

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::super::ChildrenOf;
use super::super::pairing::{Item, Kept};
use super::{member, with_content, with_member};
use crate::entry::{Body, Role};
use crate::error::Error;
use crate::json::{self, MAX_DEPTH, Tape};
use crate::tree::PathEntry;
use crate::tree::checks::ToolReader;
/// Claude Code's reading of a reply written one content block per line: consecutive
/// assistant messages with one `responseId` (results between them allowed) are one
/// assistant message at the place of the first, its content the parts' blocks in
/// order and its other members the last part's; the results follow it. An assistant
/// message of whitespace-only text is left out.
pub(in crate::context) fn merge_split_replies(
    items: Vec<Item<'_>>,
) -> Result<Vec<Item<'_>>, Error> {
    let mut tape = Tape::default();
    let mut out: Vec<Item<'_>> = Vec::with_capacity(items.len());
    // The reply being read.
    let mut reply: Option<SplitReply<'_>> = None;
    for item in items {
        let role = member(&mut tape, item.text.as_bytes(), "role");
        match role.as_deref() {
            Some("assistant") if whitespace_only(&tape) => {}
            Some("assistant") => {
                let id = tape
                    .get(0, "responseId")
                    .map(|v| tape.string(v).into_owned());
                match (&mut reply, id) {
                    (Some(current), Some(id)) if current.response_id == id => {
                        current.add(&out[current.at].text, &tape, item.text)?;
                    }
                    (_, id) => {
                        if let Some(done) = reply.take() {
                            done.finish(&mut out)?;
                        }
                        reply = id.map(|response_id| SplitReply::new(out.len(), response_id));
                        out.push(item);
                    }
                }
            }
            Some("toolResult") => out.push(item),
            _ => {
                if let Some(done) = reply.take() {
                    done.finish(&mut out)?;
                }
                out.push(item);
            }
        }
    }
    if let Some(done) = reply.take() {
        done.finish(&mut out)?;
    }
    for item in &mut out {
        if let Some(renamed) = renamed_calls(&item.text)? {
            item.text = Cow::Owned(renamed);
        }
    }
    Ok(out)
}

/// A reply written one block per line, while its parts are read: the blocks gathered so
/// far and the last part, so that the merged message is written once, when the reply
/// ends (writing it at each part would copy the reply once per part).
struct SplitReply<'r> {
    /// Where its first part is in the output.
    at: usize,
    response_id: String,
    /// The content blocks (JSON texts) of the reply as merged so far; `None` until a
    /// second part comes.
    blocks: Option<Vec<String>>,
    /// The last part after the first, whose other members the merged message takes.
    last: Option<Cow<'r, str>>,
}

impl<'r> SplitReply<'r> {
    fn new(at: usize, response_id: String) -> SplitReply<'r> {
        SplitReply {
            at,
            response_id,
            blocks: None,
            last: None,
        }
    }

    /// Adds a later part, `part`, scanned into `tape`; `first` is the first part.
    fn add(&mut self, first: &str, tape: &Tape, part: Cow<'r, str>) -> Result<(), Error> {
        let blocks = match &mut self.blocks {
            Some(blocks) => blocks,
            None => {
                let mut first_tape = Tape::default();
                json::scan(first.as_bytes(), MAX_DEPTH, &mut first_tape)
                    .map_err(|_| Error::internal("a committed message does not scan"))?;
                self.blocks.insert(content_blocks(&first_tape)?)
            }
        };
        // A part without `content` leaves the merged message without one: what came
        // before it is not sent.
        if tape.get(0, "content").is_none() {
            blocks.clear();
        }
        blocks.extend(content_blocks(tape)?);
        self.last = Some(part);
        Ok(())
    }

    /// Writes the merged message in the place of the first part.
    fn finish(self, out: &mut [Item<'r>]) -> Result<(), Error> {
        let (Some(blocks), Some(last)) = (self.blocks, self.last) else {
            return Ok(());
        };
        let mut tape = Tape::default();
        json::scan(last.as_bytes(), MAX_DEPTH, &mut tape)
            .map_err(|_| Error::internal("a committed message does not scan"))?;
        if let Some(item) = out.get_mut(self.at) {
            item.text = Cow::Owned(with_content(&tape, &blocks));
        }
        Ok(())
    }
}

/// The content blocks (JSON texts) of the message scanned into `t`: none when its
/// `content` is absent or not an array.
pub(in crate::context) fn content_blocks(t: &Tape) -> Result<Vec<String>, Error> {
    let mut blocks = Vec::new();
    if let Some(content) = t.get(0, "content") {
        for block in t.elements(content) {
            blocks.push(crate::entry::utf8(t.raw(block))?.to_owned());
        }
    }
    Ok(blocks)
}

/// What Claude Code puts after a conversation that ends on the user's side.
const NO_RESPONSE_REQUESTED: &str = r#"{"role":"assistant","content":[{"type":"text","text":"No response requested."}],"synthetic":true}"#;

/// Claude Code resuming a conversation whose last message (local commands' output
/// aside) is the user's — an interrupted turn, a prompt never answered — puts an
/// assistant "No response requested." right after it, so that what it sends next is
/// a new turn.
pub(in crate::context) fn no_response_requested(runs: &mut [Vec<Item<'_>>], tape: &mut Tape) {
    for items in runs.iter_mut().rev() {
        let last = items.iter().rposition(|item| {
            json::scan(item.text.as_bytes(), MAX_DEPTH, tape).is_ok()
                && tape.get(0, "localCommand").is_none()
        });
        let Some(last) = last else {
            continue;
        };
        let role = member(tape, items[last].text.as_bytes(), "role");
        if matches!(role.as_deref(), Some("user" | "toolResult")) {
            let names = items[last].names;
            items.insert(
                last + 1,
                Item {
                    text: Cow::Borrowed(NO_RESPONSE_REQUESTED),
                    entry: None,
                    names,
                },
            );
        }
        return;
    }
}

/// Claude Code's tool renamed since older transcripts were written: it sends an old
/// call under the new name, so that the history matches its tool list (seen with
/// Claude Code 2.1: `Task`, its sub-agent tool, is sent as `Agent`).
const RENAMED_TOOLS: [(&str, &str); 1] = [("Task", "Agent")];

/// `message` with its `toolCall` blocks under their new names, `None` when none is
/// renamed.
pub(in crate::context) fn renamed_calls(message: &str) -> Result<Option<String>, Error> {
    if !RENAMED_TOOLS
        .iter()
        .any(|(old, _)| message.contains(&format!("\"name\":\"{old}\"")))
    {
        return Ok(None);
    }
    let bad = |_| Error::internal("a committed message does not scan");
    let mut t = Tape::default();
    json::scan(message.as_bytes(), MAX_DEPTH, &mut t).map_err(bad)?;
    let Some(content) = t.get(0, "content") else {
        return Ok(None);
    };
    let mut changed = false;
    let mut blocks = Vec::new();
    for block in t.elements(content) {
        let raw = crate::entry::utf8(t.raw(block))?;
        let call = t
            .get(block, "type")
            .is_some_and(|v| t.string(v) == "toolCall");
        let new_name = t.get(block, "name").and_then(|v| {
            let name = t.string(v);
            RENAMED_TOOLS
                .iter()
                .find(|(old, _)| *old == name)
                .map(|(_, new)| *new)
        });
        match new_name.filter(|_| call) {
            Some(new_name) => {
                changed = true;
                blocks.push(with_member(&t, block, "name", |o| {
                    o.string("name", new_name)
                }));
            }
            None => blocks.push(raw.to_owned()),
        }
    }
    Ok(changed.then(|| with_content(&t, &blocks)))
}

/// An assistant message (scanned into `tape`) whose content is text blocks holding only
/// whitespace: Claude Code leaves such a message (a reply's `"\n\n"` part) out of what it
/// sends, as the API refuses a whitespace-only text block.
pub(in crate::context) fn whitespace_only(tape: &Tape) -> bool {
    let Some(content) = tape.get(0, "content") else {
        return false;
    };
    let mut blocks = tape.elements(content).peekable();
    if blocks.peek().is_none() {
        return false;
    }
    blocks.all(|block| {
        tape.get(block, "type")
            .is_some_and(|t| tape.string(t) == "text")
            && tape
                .get(block, "text")
                .is_some_and(|t| tape.string(t).trim().is_empty())
    })
}

/// How many levels of non-message lines (`progress`) the walk for a side result goes
/// through, and how many entries it visits for one reply at most.
const SIDE_DEPTH: usize = 4;
const SIDE_VISITS: usize = 4096;

/// Claude Code's reading of a reply written in parallel: it writes one reply as one line
/// per content block (one `responseId`), and while the calls run it may hang later
/// parts and each result on the block line it answers (or on a `progress` line under
/// it), so the path to the leaf misses them. For each reply on the kept path, the
/// parts and results found among the children of its lines that are off the path
/// (walking through non-message lines, bounded) are taken back, as Claude Code's own
/// reader takes them back: the reply's parts in the order they were written (commit
/// order), so that the merged reply holds every block, then its results, on the path
/// and off it, in the order they were written.
pub(in crate::context) fn recover_side_results<'a>(
    kept: &mut Vec<(usize, Kept<'a>)>,
    path: &[PathEntry<'a>],
    children: ChildrenOf<'a, '_>,
    position: &dyn Fn(&str) -> Option<u64>,
    reader: &mut ToolReader,
    tape: &mut Tape,
) -> Result<(), Error> {
    let answered: HashSet<String> = kept
        .iter()
        .filter_map(|(_, m)| m.tools.result_for.clone())
        .collect();
    let response_id = |tape: &mut Tape, role: Role, message: &[u8]| -> Option<String> {
        if role != Role::Assistant {
            return None;
        }
        member(tape, message, "responseId")
    };
    // First what is found for each group, then the kept list rebuilt once: splicing
    // each group back in place would move the rest of the list once per group.
    let mut recovered: Vec<Recovered<'a>> = Vec::new();
    let mut k = 0;
    while k < kept.len() {
        let Some(group) = response_id(tape, kept[k].1.role, kept[k].1.message) else {
            k += 1;
            continue;
        };
        // The group: its parts, results allowed between them; `last` its last part.
        let mut last = k;
        let mut j = k + 1;
        while j < kept.len() {
            match kept[j].1.role {
                Role::ToolResult => {}
                Role::Assistant
                    if response_id(tape, Role::Assistant, kept[j].1.message).as_deref()
                        == Some(&group) =>
                {
                    last = j;
                }
                _ => break,
            }
            j += 1;
        }
        // The results that follow the group on the path.
        let mut end = last + 1;
        while end < kept.len() && kept[end].1.role == Role::ToolResult {
            end += 1;
        }
        // How many times each call of the group is still unanswered.
        let mut missing: HashMap<String, usize> = HashMap::new();
        for call in kept[k..=last]
            .iter()
            .flat_map(|(_, m)| m.tools.calls.iter())
            .filter(|call| !answered.contains(*call))
        {
            *missing.entry(call.clone()).or_default() += 1;
        }
        // The parts found off the path, with the path index of the line they hang under.
        let mut parts: Vec<(usize, Kept<'a>)> = Vec::new();
        let mut found: Vec<Kept<'a>> = Vec::new();
        let (from, to) = (kept[k].0, kept[end - 1].0);
        let mut queue: Vec<(PathEntry<'a>, usize, usize)> = Vec::new();
        for p in from..=to {
            let next = path.get(p + 1).map(|e| e.id());
            for child in children(path[p].id())? {
                if Some(child.id()) != next {
                    queue.push((child, 0, p));
                }
            }
        }
        let mut at = 0;
        while at < queue.len() && at < SIDE_VISITS {
            let (entry, depth, under) = queue[at];
            at += 1;
            match (entry.facts.role(), entry.message()) {
                (Some(Role::ToolResult), Some(message)) => {
                    let tools = reader.read(&entry, message)?;
                    let Some(call) = tools.result_for.as_deref() else {
                        continue;
                    };
                    if let Some(unanswered) = missing.get_mut(call).filter(|n| **n > 0) {
                        *unanswered -= 1;
                        // Later parts of the reply may hang under a result.
                        for child in children(entry.id())? {
                            queue.push((child, 0, under));
                        }
                        found.push(Kept {
                            entry,
                            message,
                            role: Role::ToolResult,
                            tools,
                        });
                    }
                }
                (Some(Role::Assistant), Some(message))
                    if response_id(tape, Role::Assistant, message).as_deref() == Some(&group) =>
                {
                    let tools = reader.read(&entry, message)?;
                    for call in tools.calls.iter().filter(|call| !answered.contains(*call)) {
                        *missing.entry(call.clone()).or_default() += 1;
                    }
                    parts.push((
                        under,
                        Kept {
                            entry,
                            message,
                            role: Role::Assistant,
                            tools,
                        },
                    ));
                    for child in children(entry.id())? {
                        queue.push((child, 0, under));
                    }
                }
                _ if depth < SIDE_DEPTH && matches!(entry.facts.body, Body::Metadata { .. }) => {
                    for child in children(entry.id())? {
                        queue.push((child, depth + 1, under));
                    }
                }
                _ => {}
            }
        }
        if !(parts.is_empty() && found.is_empty()) {
            recovered.push(Recovered {
                start: k,
                end,
                to,
                parts,
                found,
            });
        }
        k = end;
    }
    if recovered.is_empty() {
        return Ok(());
    }
    // Each group rebuilt in commit order, as Claude Code reads its file: every part (the
    // merged reply's blocks in the order they were written), then every result of its
    // calls, on the path or off it.
    let written = |m: &Kept<'_>| position(m.entry.id()).unwrap_or(u64::MAX);
    let mut old = std::mem::take(kept).into_iter().enumerate().peekable();
    for group in recovered {
        while let Some((_, m)) = old.next_if(|(i, _)| *i < group.start) {
            kept.push(m);
        }
        let mut members = Vec::with_capacity(group.end - group.start + group.parts.len());
        while let Some((_, m)) = old.next_if(|(i, _)| *i < group.end) {
            members.push(m);
        }
        let (mut results, mut segment): (Vec<_>, Vec<_>) = members
            .into_iter()
            .chain(group.parts)
            .partition(|(_, m)| m.role == Role::ToolResult);
        results.extend(group.found.into_iter().map(|m| (group.to, m)));
        segment.sort_by_cached_key(|(_, m)| written(m));
        results.sort_by_cached_key(|(_, m)| written(m));
        kept.extend(segment);
        kept.extend(results);
    }
    kept.extend(old.map(|(_, m)| m));
    Ok(())
}

/// What [`recover_side_results`] found for one split reply: the group `[start, end)` of
/// the kept list (its parts and the results after them), the path index of its last
/// entry, and the parts and results found off the path.
struct Recovered<'a> {
    start: usize,
    end: usize,
    to: usize,
    parts: Vec<(usize, Kept<'a>)>,
    found: Vec<Kept<'a>>,
}
