//! `children`: the direct children of an entry, in commit order.

use std::io::Write;
use std::path::Path;

use session::TreeOptions;

use crate::exit;
use crate::node::{PREVIEW_CHARS, line};
use crate::output::{Out, Outcome, open};

pub fn children(out: &mut Out, file: &Path, id: &str) -> Outcome {
    let (store, report) = open(file, false)?;
    let children = store.children(id)?;
    writeln!(out, "{} children", children.len())?;
    for child in &children {
        // Previews come with a one-node page at the child's seq.
        let page = store.tree(&TreeOptions {
            after_seq: child.seq.checked_sub(1),
            limit: Some(1),
            leaf: None,
            preview_chars: PREVIEW_CHARS,
        })?;
        let node = page.nodes.first().unwrap_or(child);
        let count = node.child_count;
        writeln!(out, "{}  ({count} children)", line(node, true))?;
    }
    Ok(exit::for_state(report.state))
}
