//! One line about a navigation node, shared by `tree`, `children` and `leaves`:
//! `ID  WHAT: PREVIEW`, every part safe for a terminal.

use session::Node;

use crate::term;

/// How much of an entry's first text a line shows.
pub const PREVIEW_CHARS: u64 = 48;

/// `ID  WHAT: PREVIEW`: the id escaped, what the entry is (`user`, `assistant
/// [2 tool calls]`, `toolResult call-1`, `metadata KEY`, `compaction`), and the
/// preview the query made (its control characters are already escaped; the other
/// characters a terminal acts on become spaces).
pub fn line(node: &Node, labels: bool) -> String {
    let mut what = match (node.kind.as_str(), &node.role) {
        ("message", Some(role)) => term::escape(role).into_owned(),
        ("metadata", _) => format!(
            "metadata {}",
            term::escape(node.key.as_deref().unwrap_or_default())
        ),
        (kind, _) => term::escape(kind).into_owned(),
    };
    match node.tool_calls {
        Some(1) => what.push_str(" [1 tool call]"),
        Some(n) if n > 1 => what.push_str(&format!(" [{n} tool calls]")),
        _ => {}
    }
    if let Some(call) = &node.tool_call_id {
        what.push(' ');
        what.push_str(&term::escape(call));
    }
    let preview = node
        .preview
        .as_deref()
        .map(term::flatten)
        .unwrap_or_default();
    let label = match (&node.label, labels) {
        (Some(label), true) => format!(" [{}]", term::escape(label)),
        _ => String::new(),
    };
    format!("{}{label}  {what}: {preview}", term::escape(&node.id))
}
