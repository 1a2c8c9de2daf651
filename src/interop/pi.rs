//! pi's session file (`@mariozechner/pi-coding-agent`, session format version 3;
//! versions 1 and 2 are migrated first, the way pi's `SessionManager` migrates them).
//!
//! | pi line | libsession entry |
//! |---|---|
//! | header `{"type":"session",…}` | root `metadata` `pi.session`, value = the header |
//! | `message` | `message`, the message as written (extension roles kept) |
//! | `compaction` | `compaction` (members as written; no `firstKeptEntryId`: null) |
//! | `label` | `metadata` `session.label` `{targetId, label}` (`undefined` → null) |
//! | `model_change`, `thinking_level_change`, `custom`, `session_info` | `metadata` `pi.<type>`, value = the entry's own members |
//! | `branch_summary` | `message` with role `branchSummary` (as pi's context builds it), `piType` marks it |
//! | `custom_message` | `message` with role `custom` (as pi's context builds it), `piType` marks it |
//!
//! Every entry keeps its id; a pi root (`parentId: null`) hangs under the header's
//! entry. ISO timestamps become Unix milliseconds, the text kept as `isoTimestamp`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::lenient::{Lenient, number_value};
use super::time::{iso_to_millis, millis_to_iso};
use super::{Builder, Refusal, Source, entry_head, number, timestamp_of};
use crate::entry::{Entry, RESUME_LEAF_KEY};
use crate::error::Error;

/// The session format version pi 0.73.1 writes.
const CURRENT_VERSION: u64 = 3;

/// Members of a pi entry that every entry has; the rest are the entry's own.
const HEAD: [&str; 4] = ["type", "id", "parentId", "timestamp"];

/// Members the importer adds to an entry; the exporter removes them again. A pi
/// entry's own member of one of these names is data, not a mark: the importer escapes
/// it with a `~` (and one more on a name already escaped, `isoTimestamp~` →
/// `isoTimestamp~~`), the exporter takes one off, so that data is never read as a
/// mark and every name comes back as it was.
const IMPORT_MARKS: [&str; 3] = ["isoTimestamp", "piType", "importedParentId"];

/// For a mark's name followed by `n` tildes (`n` ≥ 0), `n`; `None` for any other name.
fn tildes_after_mark(name: &str) -> Option<usize> {
    IMPORT_MARKS.iter().find_map(|mark| {
        let rest = name.strip_prefix(mark)?;
        rest.bytes().all(|b| b == b'~').then_some(rest.len())
    })
}

/// The name under which the importer keeps a pi entry's own member.
fn escape_member(name: &str) -> String {
    match tildes_after_mark(name) {
        Some(_) => format!("{name}~"),
        None => name.to_owned(),
    }
}

/// The name the exporter gives back to a member of an entry; `None` for a mark.
fn unescape_member(name: &str) -> Option<&str> {
    match tildes_after_mark(name) {
        Some(0) => None,
        Some(_) => Some(&name[..name.len() - 1]),
        None => Some(name),
    }
}

/// The `custom` entry type under which the exporter writes a libsession metadata
/// entry that has no pi equivalent.
const METADATA_CUSTOM_TYPE: &str = "libsession.metadata";

pub(crate) fn import(source: &mut Source<'_>, out: &mut Builder<'_>) -> Result<(), Error> {
    let mut migration = Migration::prescan(source, out)?;
    source.rewind()?;
    let mut header_seen = false;
    while let Some(line) = source.next_line()? {
        out.begin(line.number);
        let mut value = out.parse(&line);
        if let Some(Value::Object(object)) = &mut value {
            migration.apply(object);
        }
        let Some(Value::Object(object)) = value else {
            out.count_kind("invalid_json");
            out.raw(line.number, line.text, "invalid_json", None)?;
            continue;
        };
        let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
        out.count_kind(if kind.is_empty() { "(none)" } else { kind });
        if kind == "session" && !header_seen {
            header_seen = true;
            let (millis, iso) = timestamp_of(object.get("timestamp"));
            let id = object
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("pi-session")
                .to_owned();
            out.set_root(&id, "session", Value::Object(object), millis, iso_mark(iso))?;
            continue;
        }
        match map_entry(&object, out) {
            Ok(entry) => out.push(&line, entry)?,
            Err(Refusal::Raw(reason)) => out.raw(line.number, line.text, reason, None)?,
            Err(Refusal::Fail(e)) => return Err(e),
        }
    }
    Ok(())
}

/// pi's `migrateToCurrentVersion`, applied line by line: a version-1 file gets ids
/// and a linear chain (and `firstKeptEntryIndex` becomes `firstKeptEntryId`); version
/// 2's `hookMessage` role becomes `custom`. Unparseable lines take no part, as in pi.
struct Migration {
    /// The version of the first header (1 without one).
    version: u64,
    /// Version 1 only: the indices, among the source's JSON objects, of the headers
    /// (a `firstKeptEntryIndex` naming one sets no `firstKeptEntryId`), and how many
    /// objects there are.
    headers: Vec<u64>,
    objects: u64,
    /// The index of the next object, and the id of the last entry given one.
    next: u64,
    previous: Option<String>,
}

impl Migration {
    /// Reads the source as far as the migration needs: to the first header, or to the
    /// end for a version-1 file.
    fn prescan(source: &mut Source<'_>, out: &mut Builder<'_>) -> Result<Migration, Error> {
        source.rewind()?;
        let mut version = None;
        let mut headers = Vec::new();
        let mut objects = 0u64;
        while let Some(line) = source.next_line()? {
            let Some(Value::Object(object)) = out.parse(&line) else {
                continue;
            };
            if object.get("type").and_then(Value::as_str) == Some("session") {
                version.get_or_insert(object.get("version").and_then(Value::as_u64).unwrap_or(1));
                headers
                    .try_reserve(1)
                    .map_err(|_| super::out_of_memory("the headers of a pi file"))?;
                headers.push(objects);
            }
            objects += 1;
            if version.is_some_and(|v| v >= 2) {
                break;
            }
        }
        Ok(Migration {
            version: version.unwrap_or(1),
            headers,
            objects,
            next: 0,
            previous: None,
        })
    }

    /// Migrates the next JSON object of the source.
    fn apply(&mut self, entry: &mut Map<String, Value>) {
        if self.version >= CURRENT_VERSION {
            return;
        }
        let index = self.next;
        self.next += 1;
        let id = |i: u64| format!("v1-{i:08x}");
        let kind = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if self.version < 2 && kind != "session" {
            let target = entry
                .get("firstKeptEntryIndex")
                .and_then(Value::as_u64)
                .filter(|&t| t < self.objects);
            entry.insert("id".into(), Value::String(id(index)));
            entry.insert(
                "parentId".into(),
                self.previous.take().map_or(Value::Null, Value::String),
            );
            self.previous = Some(id(index));
            if kind == "compaction" && entry.remove("firstKeptEntryIndex").is_some() {
                // pi sets it only when the target is not the header.
                if let Some(t) = target
                    && self.headers.binary_search(&t).is_err()
                {
                    entry.insert("firstKeptEntryId".into(), Value::String(id(t)));
                }
            }
        }
        if let Some(Value::Object(message)) = entry.get_mut("message")
            && kind == "message"
            && message.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            message.insert("role".into(), Value::String("custom".into()));
        }
    }
}

fn iso_mark(iso: Option<String>) -> Map<String, Value> {
    let mut extra = Map::new();
    if let Some(iso) = iso {
        extra.insert("isoTimestamp".into(), Value::String(iso));
    }
    extra
}

/// The libsession entry for one pi entry, or why it has none.
fn map_entry(
    object: &Map<String, Value>,
    out: &mut Builder<'_>,
) -> Result<Map<String, Value>, Refusal> {
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    let id = match object.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.as_str(),
        _ => return Err(Refusal::Raw("invalid_shape")),
    };
    if out.has_id(id) {
        return Err(Refusal::Raw("duplicate_id"));
    }
    let (millis, iso) = timestamp_of(object.get("timestamp"));
    let parent = match object.get("parentId") {
        Some(Value::String(p)) if !p.is_empty() => p.clone(),
        None | Some(Value::Null) => out.root(millis)?,
        Some(_) => return Err(Refusal::Raw("invalid_shape")),
    };
    let own = |skip: &[&str]| -> Map<String, Value> {
        object
            .iter()
            .filter(|(k, _)| !HEAD.contains(&k.as_str()) && !skip.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    // Members beside the importer's marks: names that could be read as one escaped.
    let own_beside_marks = |skip: &[&str]| -> Map<String, Value> {
        own(skip)
            .into_iter()
            .map(|(k, v)| (escape_member(&k), v))
            .collect()
    };
    let mut entry;
    match kind {
        "message" => {
            entry = entry_head(id, Some(&parent), millis, "message");
            entry.extend(own_beside_marks(&[]));
        }
        "compaction" => {
            entry = entry_head(id, Some(&parent), millis, "compaction");
            entry.extend(own_beside_marks(&[]));
            // pi has no null: a compaction without `firstKeptEntryId` (a version 1
            // one whose index named the header, or one libsession exported) keeps
            // nothing from before it, which libsession spells null.
            if !entry.contains_key("firstKeptEntryId") {
                entry.insert("firstKeptEntryId".into(), Value::Null);
            }
        }
        "label" => {
            let target = object
                .get("targetId")
                .filter(|t| t.is_string())
                .ok_or(Refusal::Raw("invalid_shape"))?;
            let label = object.get("label").cloned().unwrap_or(Value::Null);
            entry = metadata(id, &parent, millis, "session.label");
            entry.insert(
                "value".into(),
                serde_json::json!({"targetId": target, "label": label}),
            );
            entry.extend(own_beside_marks(&["targetId", "label"]));
        }
        "model_change" | "thinking_level_change" | "custom" | "session_info" => {
            entry = metadata(id, &parent, millis, &format!("pi.{kind}"));
            entry.insert("value".into(), Value::Object(own(&[])));
        }
        "branch_summary" => match object.get("summary") {
            Some(Value::String(summary)) if !summary.is_empty() => {
                // pi's createBranchSummaryMessage: {role, summary, fromId, timestamp}.
                let mut message = Map::new();
                message.insert("role".into(), Value::String("branchSummary".into()));
                message.insert("summary".into(), Value::String(summary.clone()));
                if let Some(from) = object.get("fromId") {
                    message.insert("fromId".into(), from.clone());
                }
                message.insert("timestamp".into(), number(millis));
                entry = entry_head(id, Some(&parent), millis, "message");
                entry.insert("message".into(), Value::Object(message));
                entry.insert("piType".into(), Value::String(kind.into()));
                entry.extend(own_beside_marks(&["summary", "fromId"]));
            }
            // pi leaves an empty summary out of the context: so does metadata.
            _ => {
                entry = metadata(id, &parent, millis, "pi.branch_summary");
                entry.insert("value".into(), Value::Object(own(&[])));
            }
        },
        "custom_message" => {
            // pi's createCustomMessage: {role, customType, content, display, details,
            // timestamp}; `details` is absent when the entry has none.
            let mut message = Map::new();
            message.insert("role".into(), Value::String("custom".into()));
            for member in ["customType", "content", "display", "details"] {
                if let Some(value) = object.get(member) {
                    message.insert(member.into(), value.clone());
                }
            }
            message.insert("timestamp".into(), number(millis));
            entry = entry_head(id, Some(&parent), millis, "message");
            entry.insert("message".into(), Value::Object(message));
            entry.insert("piType".into(), Value::String(kind.into()));
            entry.extend(own_beside_marks(&[
                "customType",
                "content",
                "display",
                "details",
            ]));
        }
        _ => return Err(Refusal::Raw("unknown_kind")),
    }
    entry.extend(iso_mark(iso));
    Ok(entry)
}

fn metadata(id: &str, parent: &str, millis: f64, key: &str) -> Map<String, Value> {
    let mut entry = entry_head(id, Some(parent), millis, "metadata");
    entry.insert("key".into(), Value::String(key.into()));
    entry
}

/// Writes the whole tree of `entries` as a pi session file (version 3), every entry
/// in commit order except `leaf`, which comes last: pi resumes at the last line of a
/// file. Fails with [`Error::UnknownLeaf`] when no entry has id `leaf`.
///
/// Lossy only where pi has no equivalent: a metadata entry outside `pi.*` and
/// `session.label` becomes a pi `custom` entry (`customType`
/// `"libsession.metadata"`, `data` `{key, value}`); an object summary is written as
/// its JSON text; a null `firstKeptEntryId` is left out, which is how pi spells
/// "keep nothing before it" (its context builder then finds no first kept entry, as
/// after its own migration of a version 1 compaction that named the header), and
/// what the import reads back as null. An import's `session.resumeLeaf` record is
/// left out (pi resumes at the file's last line, which the leaf is): an entry under
/// it is written under its parent, and a `leaf` that is one exports its parent.
pub fn export_pi(entries: &[Entry], leaf: &str) -> Result<String, Error> {
    if !entries.iter().any(|e| e.id() == leaf) {
        return Err(Error::UnknownLeaf {
            id: leaf.to_owned(),
        });
    }
    let joined: Vec<u8> = entries
        .iter()
        .flat_map(|e| e.json().bytes().chain(std::iter::once(b'\n')))
        .collect();
    let lenient = Lenient::for_input(&joined);
    let mut objects = Vec::with_capacity(entries.len());
    // Each resume record left out, by id: the parent its children take instead.
    let mut records: HashMap<String, Value> = HashMap::new();
    let mut leaf = leaf.to_owned();
    for entry in entries {
        let mut object = match lenient.parse(entry.json().as_bytes()) {
            Ok(Value::Object(o)) => o,
            _ => return Err(Error::internal("a committed entry is not a JSON object")),
        };
        if let Some(Value::String(parent)) = object.get("parentId")
            && let Some(up) = records.get(parent)
        {
            object.insert("parentId".into(), up.clone());
        }
        match object.get("parentId") {
            Some(Value::String(parent))
                if entry
                    .metadata()
                    .is_some_and(|(key, _)| key == RESUME_LEAF_KEY) =>
            {
                if entry.id() == leaf {
                    leaf = parent.clone();
                }
                records.insert(entry.id().to_owned(), Value::String(parent.clone()));
            }
            _ => objects.push(object),
        }
    }
    let leaf_index = objects
        .iter()
        .position(|o| o.get("id").and_then(Value::as_str) == Some(leaf.as_str()))
        .ok_or_else(|| Error::internal("the leaf of an export is not among its entries"))?;
    let header_index = objects.iter().position(|o| {
        o.get("parentId").is_some_and(Value::is_null)
            && o.get("type").and_then(Value::as_str) == Some("metadata")
            && o.get("key").and_then(Value::as_str) == Some("pi.session")
            && o.get("value").is_some_and(Value::is_object)
    });
    let header_id = header_index.and_then(|i| objects[i].get("id")?.as_str().map(str::to_owned));
    let mut lines = Vec::with_capacity(entries.len() + 1);
    lines.push(lenient.write(&Value::Object(header(
        header_index.map(|i| &objects[i]),
        &objects,
    ))));
    let order = (0..objects.len())
        .filter(|&i| i != leaf_index)
        .chain(std::iter::once(leaf_index));
    for i in order {
        if Some(i) == header_index {
            continue;
        }
        lines.push(export_entry(&objects[i], header_id.as_deref(), &lenient));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text)
}

/// The header: the imported one (version 3, as pi would migrate it), or a new one
/// whose `cwd` is the last `cwd` metadata value, if any.
fn header(
    imported: Option<&Map<String, Value>>,
    objects: &[Map<String, Value>],
) -> Map<String, Value> {
    if let Some(Value::Object(header)) = imported.and_then(|o| o.get("value")) {
        let mut header = header.clone();
        header.insert("type".into(), Value::String("session".into()));
        header.insert("version".into(), Value::from(CURRENT_VERSION));
        return header;
    }
    let cwd = objects
        .iter()
        .filter(|o| o.get("key").and_then(Value::as_str) == Some("cwd"))
        .filter_map(|o| o.get("value")?.as_str())
        .next_back()
        .unwrap_or("");
    let first = objects.first();
    let id = first
        .and_then(|o| o.get("id")?.as_str())
        .unwrap_or("session");
    let millis = first
        .and_then(|o| number_value(o.get("timestamp")?))
        .unwrap_or(0.0);
    let mut header = Map::new();
    header.insert("type".into(), Value::String("session".into()));
    header.insert("version".into(), Value::from(CURRENT_VERSION));
    header.insert("id".into(), Value::String(format!("libsession-{id}")));
    header.insert("timestamp".into(), Value::String(iso_of(millis, None)));
    header.insert("cwd".into(), Value::String(cwd.into()));
    header
}

/// The ISO text of an entry's timestamp: the imported text when it still names the
/// same instant, else `toISOString` of the number.
fn iso_of(millis: f64, imported: Option<&str>) -> String {
    if let Some(text) = imported
        && iso_to_millis(text) == Some(millis)
    {
        return text.to_owned();
    }
    millis_to_iso(millis).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

/// One libsession entry as one pi line.
fn export_entry(object: &Map<String, Value>, header_id: Option<&str>, lenient: &Lenient) -> String {
    let get = |k: &str| object.get(k);
    let kind = get("type").and_then(Value::as_str).unwrap_or("");
    let id = get("id").cloned().unwrap_or(Value::Null);
    let millis = get("timestamp").and_then(number_value).unwrap_or(0.0);
    let timestamp = iso_of(millis, get("isoTimestamp").and_then(Value::as_str));
    let parent = match (get("importedParentId"), get("parentId")) {
        (Some(original), _) => original.clone(),
        (None, Some(Value::String(p))) if Some(p.as_str()) == header_id => Value::Null,
        (None, p) => p.cloned().unwrap_or(Value::Null),
    };
    let own = |skip: &[&str]| -> Map<String, Value> {
        object
            .iter()
            .filter(|(k, _)| !HEAD.contains(&k.as_str()) && !skip.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((unescape_member(k)?.to_owned(), v.clone())))
            .collect()
    };
    let head = |pi_type: &str| -> Map<String, Value> {
        let mut line = Map::new();
        line.insert("type".into(), Value::String(pi_type.into()));
        line.insert("id".into(), id.clone());
        line.insert("parentId".into(), parent.clone());
        line.insert("timestamp".into(), Value::String(timestamp.clone()));
        line
    };
    let message = get("message").and_then(Value::as_object);
    let key = get("key").and_then(Value::as_str).unwrap_or("");
    let value = get("value");
    let mut line;
    match (kind, get("piType").and_then(Value::as_str)) {
        ("message", Some("branch_summary")) => {
            line = head("branch_summary");
            for member in ["fromId", "summary"] {
                if let Some(v) = message.and_then(|m| m.get(member)) {
                    line.insert(member.into(), v.clone());
                }
            }
            line.extend(own(&["message"]));
        }
        ("message", Some("custom_message")) => {
            line = head("custom_message");
            for member in ["customType", "content", "display", "details"] {
                if let Some(v) = message.and_then(|m| m.get(member)) {
                    line.insert(member.into(), v.clone());
                }
            }
            line.extend(own(&["message"]));
        }
        ("compaction", _) => {
            line = head("compaction");
            line.extend(own(&[]));
            match line.get("summary") {
                Some(Value::String(_)) => {}
                Some(other) => {
                    let text = lenient.write(other);
                    line.insert("summary".into(), Value::String(text));
                }
                None => {}
            }
            if line.get("firstKeptEntryId").is_some_and(Value::is_null) {
                line.remove("firstKeptEntryId");
            }
        }
        ("metadata", _) if key == "session.label" => {
            line = head("label");
            if let Some(Value::Object(v)) = value {
                line.insert(
                    "targetId".into(),
                    v.get("targetId").cloned().unwrap_or(Value::Null),
                );
                if let Some(label) = v.get("label").filter(|l| !l.is_null()) {
                    line.insert("label".into(), label.clone());
                }
            }
            line.extend(own(&["key", "value"]));
        }
        ("metadata", _) if key == "pi.unmapped" => {
            if let Some(Value::String(raw)) = value.and_then(|v| v.get("raw")) {
                return raw.clone();
            }
            line = custom_metadata(head("custom"), key, value);
        }
        ("metadata", _) if key.starts_with("pi.") && value.is_some_and(Value::is_object) => {
            line = head(&key["pi.".len()..]);
            if let Some(Value::Object(v)) = value {
                line.extend(v.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        ("metadata", _) => line = custom_metadata(head("custom"), key, value),
        _ => {
            line = head("message");
            line.extend(own(&[]));
        }
    }
    lenient.write(&Value::Object(line))
}

fn custom_metadata(
    mut line: Map<String, Value>,
    key: &str,
    value: Option<&Value>,
) -> Map<String, Value> {
    line.insert(
        "customType".into(),
        Value::String(METADATA_CUSTOM_TYPE.into()),
    );
    line.insert(
        "data".into(),
        serde_json::json!({"key": key, "value": value.cloned().unwrap_or(Value::Null)}),
    );
    line
}
