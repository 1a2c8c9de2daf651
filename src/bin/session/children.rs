//! `children`: the direct children of an entry, in commit order.

use std::io::Write;

use session::TreeOptions;

use crate::exit;
use crate::location::Location;
use crate::node::{PREVIEW_CHARS, line};
use crate::output::{Doc, Out, Outcome, open_at};
use crate::render::Filter;

pub fn children(out: &mut Out, at: &Location, id: &str, filter: &Filter) -> Outcome {
    let opened = open_at(at)?;
    let store = &opened.store;
    let children = store.children(id)?;
    let mut nodes = Vec::new();
    for child in &children {
        if !filter.keeps(&child.kind, child.role.as_deref(), out.readable()) {
            continue;
        }
        // Previews come with a one-node page at the child's seq.
        let page = store.tree(&TreeOptions {
            after_seq: child.seq.checked_sub(1),
            limit: Some(1),
            leaf: None,
            preview_chars: PREVIEW_CHARS,
        })?;
        nodes.push(
            page.nodes
                .into_iter()
                .next()
                .unwrap_or_else(|| child.clone()),
        );
    }
    let nodes = filter.cut(nodes);
    if !out.readable() {
        out.emit(&Doc::Many(nodes.iter().map(|n| n.to_json()).collect()))?;
        return Ok(exit::for_state(opened.state));
    }
    let hidden = children.len() - nodes.len();
    let more = if hidden > 0 {
        format!(" ({hidden} hidden: --kind metadata shows metadata)")
    } else {
        String::new()
    };
    writeln!(out, "{} children{more}", children.len())?;
    for node in &nodes {
        let count = node.child_count;
        writeln!(out, "{}  ({count} children)", line(node, true))?;
    }
    Ok(exit::for_state(opened.state))
}
