//! The agents' own send-time rules (the option `profile`, docs/contract.md §12): which
//! profile is in force, and the message rewriting the agents' rules share.

pub(super) mod claude;
pub(super) mod codex;
pub(super) mod pi;

use super::Profile;
use crate::agent::Format;
use crate::entry::Body;
use crate::json::{self, MAX_DEPTH, Object, Tape};
use crate::tree::PathEntry;
/// The profile in force: the one given, or for `auto` the root's `importedFormat`;
/// `None` for `none`.
pub(super) fn resolve_profile(root: Option<&PathEntry<'_>>, profile: Profile) -> Option<Profile> {
    match profile {
        Profile::Auto => imported_format(root).map(Profile::of_format),
        Profile::None => None,
        given => Some(given),
    }
}

/// The agent a session was imported from: its root's `importedFormat` (an importer's
/// root is a metadata entry: the root of a native session is not scanned).
pub(super) fn imported_format(root: Option<&PathEntry<'_>>) -> Option<Format> {
    let root = root.filter(|r| matches!(r.facts.body, Body::Metadata { .. }))?;
    let mut tape = Tape::default();
    json::scan(root.json, MAX_DEPTH, &mut tape).ok()?;
    let format = tape.get(0, "importedFormat")?;
    Format::from_name(&tape.string(format))
}

/// A string member of a message's top-level object.
pub(super) fn member(tape: &mut Tape, message: &[u8], name: &str) -> Option<String> {
    json::scan(message, MAX_DEPTH, tape).ok()?;
    let value = tape.get(0, name)?;
    Some(tape.string(value).into_owned())
}

/// The message scanned into `t`, its `content` replaced by `blocks` (JSON texts).
pub(super) fn with_content(t: &Tape, blocks: &[String]) -> String {
    with_member(t, 0, "content", |o| {
        o.raw("content", &json::array(blocks.iter()))
    })
}

/// The object at `node` of `t`, its members copied as written but `key`, which `set`
/// writes in its place.
pub(super) fn with_member(
    t: &Tape,
    node: usize,
    key: &str,
    set: impl Fn(Object) -> Object,
) -> String {
    let mut object = Object::new();
    for (name, value) in t.members(node) {
        let name = t.string(name);
        object = if name == key {
            set(object)
        } else {
            object.raw_bytes(&name, t.raw(value))
        };
    }
    object.finish()
}
