//! `tree`: every branch, drawn from the library's paged tree query.
//!
//! The nodes come page by page in commit order (no message bodies); the drawing is
//! depth-first with an explicit stack. Its output stays linear in the number of
//! entries however the tree is shaped: a run of only children is drawn as a chain at
//! one indentation (a 100,000-deep linear session does not indent at all), the
//! indentation shows at most [`MAX_LEVELS`] levels, and the path to the leaf is
//! flagged by the query (a set lookup per line, not a rescan of the path).

use std::collections::HashMap;
use std::io::Write;

use session::{Node, TreeOptions};

use crate::exit;
use crate::location::Location;
use crate::node::{PREVIEW_CHARS, line};
use crate::output::{Doc, Out, Outcome, default_leaf, open_at};
use crate::render::Filter;

/// Nodes asked for per page.
const PAGE: u64 = 4096;
/// The most indentation levels drawn; deeper lines start with `[+K]`, the levels
/// left out.
pub const MAX_LEVELS: usize = 16;
const NONE: u32 = u32::MAX;

pub fn tree(out: &mut Out, at: &Location, args: &TreeArgs) -> Outcome {
    let opened = open_at(at)?;
    let store = &opened.store;
    let leaf = match &args.leaf {
        Some(leaf) => Some(leaf.clone()),
        None => default_leaf(store)?,
    };
    let Some(leaf) = leaf else {
        if out.readable() {
            writeln!(out, "(no entries)")?;
        } else {
            out.emit(&Doc::Many(Vec::new()))?;
        }
        return Ok(exit::for_state(opened.state));
    };
    let mut options = TreeOptions {
        after_seq: None,
        limit: Some(PAGE),
        leaf: Some(leaf.clone()),
        preview_chars: PREVIEW_CHARS,
    };
    let readable = out.readable();
    let within = |node: &Node| args.depth.is_none_or(|max| node.depth <= max);
    let kept = |node: &Node| {
        args.filter
            .keeps(&node.kind, node.role.as_deref(), readable)
    };
    let mut nodes = Vec::new();
    let mut values = Vec::new();
    loop {
        let page = store.tree(&options)?;
        if readable {
            nodes.extend(page.nodes);
        } else {
            values.extend(
                page.nodes
                    .iter()
                    .filter(|n| within(n) && kept(n))
                    .map(Node::to_json),
            );
        }
        match page.next_after_seq {
            Some(next) => options.after_seq = Some(next),
            None => break,
        }
    }
    if readable {
        let shown: Vec<bool> = nodes.iter().map(kept).collect();
        let hidden = shown.iter().filter(|s| !**s).count();
        draw(out, &nodes, &shown, &leaf, args)?;
        if hidden > 0 && args.filter.kinds.is_empty() && args.filter.roles.is_empty() {
            let note = format!("({hidden} metadata entries hidden: --kind metadata shows them)");
            let note = out.paint("2", &note);
            writeln!(out, "{note}")?;
        }
    } else {
        out.emit(&Doc::Many(values))?;
    }
    Ok(exit::for_state(opened.state))
}

/// How a line joins its parent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Joint {
    /// A root, or an only child drawn in its parent's column (a chain).
    Flush,
    /// One of several children, more to come.
    Middle,
    /// The last of several children.
    Last,
}

/// One level of indentation: a bar (`│  `, more siblings below) or blank, and the
/// level above it. Shared by every line below it, so the stack holds one index per
/// item and never a copy of the indentation.
struct Level {
    up: u32,
    bar: bool,
    count: u32,
}

/// Draws the nodes for which `shown` is true; a hidden node's children hang from its
/// nearest shown ancestor.
fn draw(
    out: &mut Out,
    nodes: &[Node],
    shown: &[bool],
    leaf: &str,
    args: &TreeArgs,
) -> std::io::Result<()> {
    // Nodes arrive in commit order, so a node's index is its seq; children lists in
    // commit order as first-child / next-sibling links.
    let index: HashMap<&str, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i as u32))
        .collect();
    let mut first_child = vec![NONE; nodes.len()];
    let mut next_sibling = vec![NONE; nodes.len()];
    let mut last_child = vec![NONE; nodes.len()];
    // The nearest shown ancestor of each node; a parent comes before its children in
    // commit order, so one pass finds them all.
    let mut up = vec![NONE; nodes.len()];
    let mut roots = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let parent = node
            .parent_id
            .as_deref()
            .and_then(|p| index.get(p).copied())
            .and_then(|p| {
                let p = p as usize;
                let at = if shown[p] { p as u32 } else { up[p] };
                (at != NONE).then_some(at)
            });
        up[i] = parent.unwrap_or(NONE);
        if !shown[i] {
            continue;
        }
        let Some(parent) = parent else {
            // A root, or an orphan of a damaged file: drawn at the left margin.
            roots.push(i as u32);
            continue;
        };
        let p = parent as usize;
        match last_child[p] {
            NONE => first_child[p] = i as u32,
            last => next_sibling[last as usize] = i as u32,
        }
        last_child[p] = i as u32;
    }
    let mut levels: Vec<Level> = Vec::new();
    let mut stack: Vec<(u32, u32, Joint)> = roots
        .iter()
        .rev()
        .map(|&r| (r, NONE, Joint::Flush))
        .collect();
    let mut kids = Vec::new();
    while let Some((at, indent, joint)) = stack.pop() {
        let node = &nodes[at as usize];
        let connector = match joint {
            Joint::Flush => "",
            Joint::Middle => "├─ ",
            Joint::Last => "└─ ",
        };
        let mark = if node.id == leaf {
            "  <== leaf"
        } else if node.on_path {
            "  *"
        } else {
            ""
        };
        let hidden = args.depth.is_some_and(|max| node.depth >= max) && node.child_count > 0;
        let more = if hidden {
            format!("  (+{} below)", node.child_count)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}{connector}{}{mark}{more}",
            prefix(&levels, indent),
            line(node, args.labels)
        )?;
        if hidden {
            continue;
        }
        kids.clear();
        let mut kid = first_child[at as usize];
        while kid != NONE {
            kids.push(kid);
            kid = next_sibling[kid as usize];
        }
        let inner = match joint {
            Joint::Flush => indent,
            Joint::Middle | Joint::Last => {
                let count = level_count(&levels, indent) + 1;
                levels.push(Level {
                    up: indent,
                    bar: joint == Joint::Middle,
                    count,
                });
                (levels.len() - 1) as u32
            }
        };
        if let [only] = kids[..] {
            stack.push((only, inner, Joint::Flush));
            continue;
        }
        for (i, &kid) in kids.iter().enumerate().rev() {
            let joint = if i + 1 == kids.len() {
                Joint::Last
            } else {
                Joint::Middle
            };
            stack.push((kid, inner, joint));
        }
    }
    Ok(())
}

fn level_count(levels: &[Level], at: u32) -> u32 {
    levels.get(at as usize).map_or(0, |l| l.count)
}

/// The indentation of `at`: its last [`MAX_LEVELS`] levels, after `[+K]` when K
/// more are left out.
fn prefix(levels: &[Level], at: u32) -> String {
    let mut bars = Vec::with_capacity(MAX_LEVELS);
    let mut level = at;
    while let Some(l) = levels.get(level as usize) {
        if bars.len() == MAX_LEVELS {
            break;
        }
        bars.push(l.bar);
        level = l.up;
    }
    let mut out = String::new();
    let total = level_count(levels, at) as usize;
    if total > bars.len() {
        out.push_str(&format!("[+{}] ", total - bars.len()));
    }
    for &bar in bars.iter().rev() {
        out.push_str(if bar { "│  " } else { "   " });
    }
    out
}

/// The options of `tree`.
#[derive(Default)]
pub struct TreeArgs {
    /// The entry whose path is marked; default the default leaf.
    pub leaf: Option<String>,
    /// Hide entries deeper than this.
    pub depth: Option<u64>,
    /// Show each entry's label.
    pub labels: bool,
    /// Which nodes are drawn (`--kind`, `--role`).
    pub filter: Filter,
}
