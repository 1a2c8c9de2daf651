//! `label`: set or clear an entry's label (the contract, docs/contract.md §6.3).
//!
//! The label is a `session.label` metadata entry appended under the latest entry
//! (pi's rule), so labelling never moves "resume the latest" to another branch.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use session::{Error, PgOptions, State, Store, json::push_string};

use crate::exit;
use crate::location::Location;
use crate::output::{Doc, Out, Outcome, open, opening};
use crate::term;

pub fn label(out: &mut Out, at: &Location, target: &str, text: &str) -> Outcome {
    let (store, state) = match at {
        Location::File(file) => {
            // Never create a session by labelling it: a missing file fails as it does
            // for every reading verb.
            if std::fs::symlink_metadata(file).is_err() {
                open(file, false)?;
            }
            let (store, report) = Store::open_jsonl(file).map_err(|e| opening(file, e))?;
            (store, report.state)
        }
        Location::Postgres {
            conninfo,
            session_id,
        } => {
            // A writer on a session that must exist: labelling never creates one.
            let writer = PgOptions {
                create: false,
                ..PgOptions::default()
            };
            (
                Store::open_pg(conninfo, session_id, &writer)?.0,
                State::Ready,
            )
        }
    };
    // The target must exist (also checked at append by the entry rules).
    store.children(target)?;
    let Some(latest) = store.latest_leaf()? else {
        return Err(Error::UnknownLeaf {
            id: target.to_owned(),
        }
        .into());
    };
    let id = free_id(&store, store.len()?)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut entry = String::from("{\"id\":");
    push_string(&mut entry, &id);
    entry.push_str(",\"parentId\":");
    push_string(&mut entry, &latest.id);
    entry.push_str(&format!(
        ",\"timestamp\":{now},\"type\":\"metadata\",\"key\":\"session.label\",\"value\":{{\"targetId\":"
    ));
    push_string(&mut entry, target);
    entry.push_str(",\"label\":");
    if text.is_empty() {
        entry.push_str("null");
    } else {
        push_string(&mut entry, text);
    }
    entry.push_str("}}");
    let receipt = store.append(&entry)?;
    let what = if text.is_empty() { "cleared" } else { "set" };
    if !out.readable() {
        let mut doc = String::from("{\"targetId\":");
        push_string(&mut doc, target);
        doc.push_str(",\"label\":");
        if text.is_empty() {
            doc.push_str("null");
        } else {
            push_string(&mut doc, text);
        }
        doc.push_str(",\"id\":");
        push_string(&mut doc, &receipt.id);
        doc.push_str(&format!(",\"seq\":{}}}", receipt.seq));
        out.emit(&Doc::One(doc))?;
        return Ok(exit::for_state(state));
    }
    writeln!(
        out,
        "label of {} {what} by {} (seq {})",
        term::escape(target),
        term::escape(&receipt.id),
        receipt.seq
    )?;
    Ok(exit::for_state(state))
}

/// `label-N`, the first such id not taken, from N = the entry count.
fn free_id(store: &Store, from: usize) -> Result<String, Error> {
    let mut n = from;
    loop {
        let id = format!("label-{n}");
        match store.children(&id) {
            Err(Error::UnknownLeaf { .. }) => return Ok(id),
            Err(e) => return Err(e),
            Ok(_) => n += 1,
        }
    }
}
