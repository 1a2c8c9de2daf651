//! `leaves`: every entry without children, in commit order, the latest ones, and the
//! leaf an imported session's agent resumes (the verbs' default LEAF).

use std::io::Write;
use std::path::Path;

use session::nav::RESUME_LEAF_KEY;

use crate::exit;
use crate::node::line;
use crate::output::{Out, Outcome, open};
use crate::term;

/// The mark after the leaf the agent resumes.
const RESUME_MARK: &str = "  <- resume (the default LEAF)";
/// The mark after the import's record of it, written under it (it is a leaf when the
/// resume leaf is not).
const RECORD_MARK: &str = "  <- records the resume leaf, its parent (the default LEAF)";

pub fn leaves(out: &mut Out, file: &Path, json: bool) -> Outcome {
    let (store, report) = open(file, false)?;
    let leaves = store.leaves()?;
    let resume = store.resume_leaf()?;
    if json {
        // The library's leaves object, with the resume leaf as one more member.
        let mut object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&leaves.to_json()).unwrap_or_default();
        object.insert("resumeLeafId".into(), resume.clone().into());
        let text = serde_json::Value::Object(object).to_string();
        writeln!(out, "{}", term::json(&text))?;
        return Ok(exit::for_state(report.state));
    }
    let show = |id: &Option<String>| id.as_deref().map_or("-".into(), term::escape).into_owned();
    writeln!(out, "{} leaves", leaves.leaves.len())?;
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
    for leaf in &leaves.leaves {
        let record = leaf.key.as_deref() == Some(RESUME_LEAF_KEY);
        let mark = match resume.as_deref() {
            Some(r) if r == leaf.id => RESUME_MARK,
            Some(r) if record && leaf.parent_id.as_deref() == Some(r) => RECORD_MARK,
            _ => "",
        };
        writeln!(out, "{}  (depth {}){mark}", line(leaf, true), leaf.depth)?;
    }
    Ok(exit::for_state(report.state))
}
