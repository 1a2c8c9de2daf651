//! `label`: set or clear an entry's label (the contract, docs/contract.md §6.3).
//!
//! The label is a `session.label` metadata entry appended under the latest entry
//! (pi's rule), so labelling never moves "resume the latest" to another branch.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use session::json::Object;
use session::{Error, PgOptions, State, Store};

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
    // An empty TEXT clears the label: `"label":null`.
    let label = Some(text).filter(|t| !t.is_empty());
    let value = Object::new()
        .string("targetId", target)
        .string_or_null("label", label)
        .finish();
    let entry = Object::new()
        .string("id", &id)
        .string("parentId", &latest.id)
        .number("timestamp", now)
        .string("type", "metadata")
        .string("key", "session.label")
        .raw("value", &value)
        .finish();
    let receipt = store.append(&entry)?;
    let what = if text.is_empty() { "cleared" } else { "set" };
    if !out.readable() {
        let doc = Object::new()
            .string("targetId", target)
            .string_or_null("label", label)
            .string("id", &receipt.id)
            .number("seq", receipt.seq)
            .finish();
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
