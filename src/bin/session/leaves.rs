//! `leaves`: every entry without children, in commit order, the latest ones, and the
//! leaf an imported session's agent resumes (the verbs' default LEAF).

use session::nav::RESUME_LEAF_KEY;
use std::io::Write;

use crate::exit;
use crate::location::Location;
use crate::node::line;
use crate::output::{Doc, Out, Outcome, open_at};
use crate::render::Filter;
use crate::term;

/// The mark after the leaf the agent resumes.
const RESUME_MARK: &str = "  <- resume (the default LEAF)";
/// The mark after the import's record of it, written under it (it is a leaf when the
/// resume leaf is not).
const RECORD_MARK: &str = "  <- records the resume leaf, its parent (the default LEAF)";

pub fn leaves(out: &mut Out, at: &Location, filter: &Filter) -> Outcome {
    let opened = open_at(at)?;
    let store = &opened.store;
    let leaves = store.leaves()?;
    let resume = store.resume_leaf()?;
    let state = opened.state;
    let filtered = filter.kinds.len() + filter.roles.len() > 0 || filter.limit.is_some();
    if !out.readable() && !filtered {
        // The library's leaves object, with the resume leaf as one more member.
        let mut object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&leaves.to_json()).unwrap_or_default();
        object.insert("resumeLeafId".into(), resume.clone().into());
        out.emit(&Doc::One(serde_json::Value::Object(object).to_string()))?;
        return Ok(exit::for_state(state));
    }
    let kept: Vec<_> = leaves
        .leaves
        .iter()
        .filter(|l| {
            // The import's record of the resume leaf stays in sight: it leads to the
            // default LEAF.
            let record = !filtered && l.key.as_deref() == Some(RESUME_LEAF_KEY);
            record || filter.keeps(&l.kind, l.role.as_deref(), out.readable())
        })
        .collect();
    let kept = filter.cut(kept);
    if !out.readable() {
        // Filtered: the leaves kept, as nodes.
        out.emit(&Doc::Many(kept.iter().map(|l| l.to_json()).collect()))?;
        return Ok(exit::for_state(state));
    }
    let show = |id: &Option<String>| id.as_deref().map_or("-".into(), term::escape).into_owned();
    let hidden = leaves.leaves.len() - kept.len();
    let more = if hidden == 0 {
        String::new()
    } else if filtered {
        format!(" ({} shown)", kept.len())
    } else {
        format!(" ({hidden} metadata leaves hidden: --kind metadata shows them)")
    };
    writeln!(out, "{} leaves{more}", leaves.leaves.len())?;
    writeln!(out, "latest by commit: {}", show(&leaves.latest_by_seq))?;
    writeln!(
        out,
        "latest by time:   {}",
        show(&leaves.latest_by_timestamp)
    )?;
    if resume.is_some() {
        writeln!(
            out,
            "resume leaf:      {}  (where the agent this session was imported from resumes)",
            show(&resume)
        )?;
    }
    for leaf in kept {
        let record = leaf.key.as_deref() == Some(RESUME_LEAF_KEY);
        let mark = match resume.as_deref() {
            Some(r) if r == leaf.id => RESUME_MARK,
            Some(r) if record && leaf.parent_id.as_deref() == Some(r) => RECORD_MARK,
            _ => "",
        };
        writeln!(out, "{}  (depth {}){mark}", line(leaf, true), leaf.depth)?;
    }
    Ok(exit::for_state(state))
}
