//! The one mapping from errors to a status code and the error JSON (docs/contract.md §4, §5).

use std::sync::Arc;

use super::status::*;
use crate::error::{Error, FileChange, IoFailure};
use crate::json::Object;
use crate::store::warnings_json;

/// An error as the C caller sees it.
pub(crate) enum FfiError {
    Core(Error),
    /// A NULL or non-UTF-8 argument.
    Argument {
        name: &'static str,
        problem: &'static str,
    },
    /// An invalid JSON argument other than options_json (the search's query_json):
    /// invalid_argument naming it.
    InvalidArgumentJson {
        name: &'static str,
        message: String,
    },
    /// A panic caught at the boundary.
    Panic(String),
    /// A call on a store whose earlier operation panicked; cause is that panic's
    /// error object.
    Poisoned(Arc<str>),
}

impl From<Error> for FfiError {
    fn from(e: Error) -> FfiError {
        FfiError::Core(e)
    }
}

/// An error object's first members: code and message.
fn error_object(code: &str, message: &str) -> Object {
    Object::new()
        .string("code", code)
        .string("message", message)
}

impl FfiError {
    pub(crate) fn status(&self) -> SessionStatus {
        match self {
            FfiError::Argument { .. } => SESSION_ERR_INVALID_ARGUMENT,
            FfiError::InvalidArgumentJson { .. } => SESSION_ERR_INVALID_ARGUMENT,
            FfiError::Panic(_) => SESSION_ERR_INTERNAL,
            FfiError::Poisoned(_) => SESSION_ERR_TAINTED,
            FfiError::Core(e) => match e {
                Error::InvalidJson(_) => SESSION_ERR_INVALID_JSON,
                Error::InvalidEntry(_) => SESSION_ERR_INVALID_ENTRY,
                Error::DuplicateId { .. } => SESSION_ERR_DUPLICATE_ID,
                Error::MissingParent { .. } => SESSION_ERR_MISSING_PARENT,
                Error::Cycle { .. } => SESSION_ERR_CYCLE,
                Error::UnknownLeaf { .. } => SESSION_ERR_UNKNOWN_LEAF,
                Error::CorruptLine { .. } => SESSION_ERR_CORRUPT_LINE,
                Error::NeedsRepair { .. } => SESSION_ERR_NEEDS_REPAIR,
                Error::Tainted { .. } => SESSION_ERR_TAINTED,
                Error::Io(failure) => io_status(failure),
                Error::Locked { .. } => SESSION_ERR_LOCKED,
                Error::ReadOnly => SESSION_ERR_READ_ONLY,
                Error::WrongProcess { .. } => SESSION_ERR_WRONG_PROCESS,
                Error::InvalidOption { .. } => SESSION_ERR_INVALID_ARGUMENT,
                Error::Internal { .. } => SESSION_ERR_INTERNAL,
                Error::InvalidCompaction { .. } => SESSION_ERR_INVALID_COMPACTION,
                Error::ToolPairing { .. } => SESSION_ERR_TOOL_PAIRING,
                Error::Estimator { .. } => SESSION_ERR_INVALID_ARGUMENT,
                Error::NotImportable { .. } => SESSION_ERR_INVALID_ARGUMENT,
                Error::Cancelled => SESSION_ERR_CANCELLED,
                Error::Unsupported { .. } => SESSION_ERR_INVALID_ARGUMENT,
                Error::InvalidArgument { .. } => SESSION_ERR_INVALID_ARGUMENT,
            },
        }
    }

    /// {"error":{"code":…,"message":…,…details}}.
    pub(crate) fn to_json(&self) -> String {
        Object::new().raw("error", &self.object()).finish()
    }

    /// The inner error object (what cause repeats for a tainted store).
    fn object(&self) -> String {
        let code = status_name_str(self.status());
        match self {
            FfiError::Argument { name, problem } => {
                error_object(code, &format!("argument {name} {problem}"))
                    .string("argument", name)
                    .finish()
            }
            FfiError::InvalidArgumentJson { name, message } => {
                error_object(code, &format!("invalid {name}: {message}"))
                    .string("argument", name)
                    .finish()
            }
            FfiError::Panic(message) => error_object(code, message).finish(),
            FfiError::Poisoned(cause) => error_object(
                code,
                "an earlier operation on this store panicked; its state can no longer be trusted",
            )
            .raw("cause", cause)
            .finish(),
            FfiError::Core(e) => core_object(code, e),
        }
    }

    /// The error object recorded as the cause of a store's poisoning.
    pub(crate) fn cause_object(&self) -> Arc<str> {
        self.object().into()
    }
}

fn core_object(code: &str, e: &Error) -> String {
    let message = e.to_string();
    let object = error_object(code, &message);
    match e {
        Error::InvalidJson(j) => object
            .string("pointer", &j.pointer)
            .number("offset", j.offset as u64)
            .finish(),
        Error::InvalidEntry(v) => object.string("pointer", &v.pointer).finish(),
        Error::DuplicateId { id, line } => with_line(object.string("id", id), *line),
        Error::MissingParent {
            child_id,
            parent_id,
            line,
        } => with_line(
            object
                .string("childId", child_id)
                .string("parentId", parent_id),
            *line,
        ),
        Error::Cycle { id } | Error::UnknownLeaf { id } => object.string("id", id).finish(),
        Error::CorruptLine { line, fault } => {
            let object = object
                .number("line", *line)
                .string("reason", fault.reason());
            match fault.pointer() {
                Some(pointer) => object.string("pointer", pointer).finish(),
                None => object.finish(),
            }
        }
        Error::NeedsRepair { warnings } => {
            object.raw("warnings", &warnings_json(warnings)).finish()
        }
        Error::Tainted { cause } => object.raw("cause", &io_object(cause)).finish(),
        Error::Io(failure) => io_object(failure),
        Error::Locked { path } => object.string("path", path).finish(),
        Error::WrongProcess { owner, current } => object
            .number("ownerPid", u64::from(*owner))
            .number("pid", u64::from(*current))
            .finish(),
        Error::InvalidOption { .. } => object.string("argument", "options_json").finish(),
        Error::ReadOnly | Error::Internal { .. } | Error::Cancelled => object.finish(),
        Error::InvalidCompaction {
            compaction_id,
            first_kept_entry_id,
            reason,
            ..
        } => {
            let object = object.string("compactionId", compaction_id);
            let object = match first_kept_entry_id {
                Some(id) => object.string("firstKeptEntryId", id),
                None => object.raw("firstKeptEntryId", "null"),
            };
            object.string("reason", reason.as_str()).finish()
        }
        Error::ToolPairing {
            entry_id,
            tool_call_id,
            reason,
            interaction_start_id,
            ..
        } => object
            .string("entryId", entry_id)
            .string("toolCallId", tool_call_id)
            .string("reason", reason.as_str())
            .string("interactionStartId", interaction_start_id)
            .finish(),
        Error::Estimator { entry_id, .. } => object
            .string("argument", "estimate")
            .string("entryId", entry_id)
            .finish(),
        Error::Unsupported { feature } => object.string("feature", feature).finish(),
        Error::InvalidArgument { argument, .. } => object.string("argument", argument).finish(),
        Error::NotImportable { detected, .. } => {
            let object = object.string("argument", "src_path");
            match detected {
                Some(format) => object.string("detected", format.name()),
                None => object.raw("detected", "null"),
            }
            .finish()
        }
    }
}

/// A file that changed under the writer has its own status; any other failed file
/// operation is io.
fn io_status(failure: &IoFailure) -> SessionStatus {
    match failure.change {
        Some(_) => SESSION_ERR_FILE_CHANGED,
        None => SESSION_ERR_IO,
    }
}

fn with_line(object: Object, line: Option<u64>) -> String {
    match line {
        Some(line) => object.number("line", line).finish(),
        None => object.finish(),
    }
}

/// {"code":"io","message":…,"op":…,"osError":N} (or {"code":"file_changed",…,
/// "reason":…}): the same bytes every time for the same failure, so a tainted store's
/// cause is identical in every result.
fn io_object(failure: &IoFailure) -> String {
    let object = error_object(status_name_str(io_status(failure)), &failure.message)
        .string("op", failure.op.name());
    let object = match failure.change {
        Some(FileChange::SizeChanged { expected, actual }) => object
            .string("reason", "size_changed")
            .number("expectedSize", expected)
            .number("actualSize", actual),
        Some(change) => object.string("reason", change.reason()),
        None => object,
    };
    match failure.os_error {
        Some(errno) if errno >= 0 => object.number("osError", errno as u64).finish(),
        _ => object.finish(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::io;
    use std::sync::Arc;

    use super::FfiError;
    use crate::error::{EntryError, Error, FileChange, IoFailure, IoOp, LineFault, Warning};
    use crate::json::{JsonError, JsonErrorKind};

    const HEADER: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/include/session.h"));

    /// The member names of the header's "Errors" table: the first word of each row.
    fn documented_members() -> BTreeSet<&'static str> {
        let table = HEADER
            .split(" *   Errors.")
            .nth(1)
            .and_then(|rest| rest.split("*/").next())
            .expect("an Errors table in include/session.h");
        table
            .lines()
            .filter_map(|line| line.strip_prefix(" *                "))
            .filter(|row| !row.starts_with(' '))
            .filter_map(|row| row.split_whitespace().next())
            .collect()
    }

    fn io_failure(op: IoOp, change: Option<FileChange>) -> Arc<IoFailure> {
        let mut failure = IoFailure::new(op, "s.jsonl", &io::Error::from_raw_os_error(5));
        failure.change = change;
        Arc::new(failure)
    }

    /// One error of every kind the library produces, with every optional member set.
    /// The match below has no wildcard, so a new variant must be added here.
    fn every_error() -> Vec<FfiError> {
        let json = JsonError {
            kind: JsonErrorKind::TrailingData,
            pointer: "/a".into(),
            offset: 3,
        };
        let entry = EntryError {
            pointer: "/id".into(),
            message: "missing".into(),
        };
        let ops = [
            IoOp::Open,
            IoOp::Read,
            IoOp::Write,
            IoOp::Sync,
            IoOp::Lock,
            IoOp::Identity,
            IoOp::Truncate,
        ];
        let changes = [
            None,
            Some(FileChange::Deleted),
            Some(FileChange::Replaced),
            Some(FileChange::SizeChanged {
                expected: 1,
                actual: 2,
            }),
        ];
        let mut core = vec![
            Error::InvalidJson(json.clone()),
            Error::InvalidEntry(entry.clone()),
            Error::DuplicateId {
                id: "a".into(),
                line: Some(2),
            },
            Error::MissingParent {
                child_id: "b".into(),
                parent_id: "a".into(),
                line: Some(2),
            },
            Error::Cycle { id: "a".into() },
            Error::UnknownLeaf { id: "a".into() },
            Error::CorruptLine {
                line: 3,
                fault: LineFault::Json(json),
            },
            Error::CorruptLine {
                line: 3,
                fault: LineFault::Entry(entry),
            },
            Error::CorruptLine {
                line: 3,
                fault: LineFault::TooLong { len: 9, max: 8 },
            },
            Error::CorruptLine {
                line: 3,
                fault: LineFault::NotAnEntry { offset: 0, byte: 0 },
            },
            Error::NeedsRepair {
                warnings: vec![Warning::UnterminatedTail { line: 4 }],
            },
            Error::Locked {
                path: "s.jsonl".into(),
            },
            Error::ReadOnly,
            Error::WrongProcess {
                owner: 1,
                current: 2,
            },
            Error::InvalidOption {
                message: "x".into(),
            },
            Error::Internal {
                message: "x".into(),
            },
            Error::InvalidCompaction {
                compaction_id: "c-1".into(),
                first_kept_entry_id: Some("a-pkg".into()),
                reason: crate::error::CompactionFault::NotInteractionStart,
                hint: crate::error::Hint::Imported(crate::interop::Format::Pi),
            },
            Error::InvalidCompaction {
                compaction_id: "c-1".into(),
                first_kept_entry_id: None,
                reason: crate::error::CompactionFault::PendingToolCalls,
                hint: crate::error::Hint::None,
            },
            Error::ToolPairing {
                entry_id: "r-9".into(),
                tool_call_id: "call-9".into(),
                reason: crate::error::PairingDefect::OrphanResult,
                interaction_start_id: "u-1".into(),
                hint: crate::error::Hint::OnDefect,
            },
            Error::Estimator {
                entry_id: "u-1".into(),
                message: "x".into(),
            },
            Error::NotImportable {
                detected: Some(crate::interop::Format::Codex),
                requested: Some(crate::interop::Format::Pi),
            },
            Error::NotImportable {
                detected: None,
                requested: None,
            },
            Error::Cancelled,
            Error::Unsupported { feature: "search" },
            Error::InvalidArgument {
                argument: "session_id",
                message: "session_id is empty".into(),
            },
        ];
        for op in ops {
            for change in changes {
                core.push(Error::Io(io_failure(op, change)));
                core.push(Error::Tainted {
                    cause: io_failure(op, change),
                });
            }
        }
        for e in &core {
            match e {
                Error::InvalidJson(_)
                | Error::InvalidEntry(_)
                | Error::DuplicateId { .. }
                | Error::MissingParent { .. }
                | Error::Cycle { .. }
                | Error::UnknownLeaf { .. }
                | Error::CorruptLine { .. }
                | Error::NeedsRepair { .. }
                | Error::Tainted { .. }
                | Error::Io(_)
                | Error::Locked { .. }
                | Error::ReadOnly
                | Error::WrongProcess { .. }
                | Error::InvalidOption { .. }
                | Error::Internal { .. }
                | Error::InvalidCompaction { .. }
                | Error::ToolPairing { .. }
                | Error::Estimator { .. }
                | Error::NotImportable { .. }
                | Error::Cancelled
                | Error::InvalidArgument { .. } => {}
                Error::Unsupported { .. } => {}
            }
        }
        let poisoned = FfiError::Core(Error::Io(io_failure(IoOp::Write, None))).cause_object();
        let mut all: Vec<FfiError> = core.into_iter().map(FfiError::Core).collect();
        all.push(FfiError::Argument {
            name: "path",
            problem: "is NULL",
        });
        all.push(FfiError::InvalidArgumentJson {
            name: "query_json",
            message: "limit must be 1..1000".into(),
        });
        all.push(FfiError::Panic("boom".into()));
        all.push(FfiError::Poisoned(poisoned));
        all
    }

    /// Every member name in an error object, nested objects and arrays included.
    fn members(value: &serde_json::Value, into: &mut BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    into.insert(key.clone());
                    members(inner, into);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| members(v, into)),
            _ => {}
        }
    }

    #[test]
    fn every_error_uses_only_members_documented_in_the_header() {
        let documented = documented_members();
        assert!(documented.contains("osError"), "{documented:?}");
        for error in every_error() {
            let text = error.to_json();
            let value: serde_json::Value = serde_json::from_str(&text).expect("error JSON");
            let mut found = BTreeSet::new();
            members(&value["error"], &mut found);
            for member in found {
                assert!(
                    documented.contains(member.as_str()),
                    "{member:?} in {text} is not in the header's Errors table"
                );
            }
        }
    }

    #[test]
    fn every_op_value_is_documented_in_the_header() {
        let op_row = HEADER
            .split(" *                op  ")
            .nth(1)
            .and_then(|rest| rest.split(" *                osError").next())
            .expect("the op row");
        for op in [
            IoOp::Open,
            IoOp::Read,
            IoOp::Write,
            IoOp::Sync,
            IoOp::Lock,
            IoOp::Identity,
            IoOp::Truncate,
        ] {
            assert!(op_row.contains(op.name()), "op {} undocumented", op.name());
        }
    }

    #[test]
    fn error_members_are_camel_case() {
        for member in documented_members() {
            assert!(
                member.chars().all(|c| c.is_ascii_alphabetic())
                    && member.starts_with(|c: char| c.is_ascii_lowercase()),
                "{member}"
            );
        }
    }
}
