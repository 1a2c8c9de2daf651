//! `leaves`: every entry without children, in commit order, and the latest ones.

use std::io::Write;
use std::path::Path;

use crate::exit;
use crate::node::line;
use crate::output::{Out, Outcome, open};
use crate::term;

pub fn leaves(out: &mut Out, file: &Path) -> Outcome {
    let (store, report) = open(file, false)?;
    let leaves = store.leaves()?;
    let show = |id: &Option<String>| id.as_deref().map_or("-".into(), term::escape).into_owned();
    writeln!(out, "{} leaves", leaves.leaves.len())?;
    writeln!(out, "latest by commit: {}", show(&leaves.latest_by_seq))?;
    writeln!(
        out,
        "latest by time:   {}",
        show(&leaves.latest_by_timestamp)
    )?;
    for leaf in &leaves.leaves {
        writeln!(out, "{}  (depth {})", line(leaf, true), leaf.depth)?;
    }
    Ok(exit::for_state(report.state))
}
