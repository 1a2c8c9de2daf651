//! The one mapping from errors to a status code and the error JSON (docs/contract.md §4, §5).

use std::sync::Arc;

use super::status::*;
use crate::error::{Error, FileChange, IoFailure};
use crate::json;
use crate::store::warnings_json;

/// An error as the C caller sees it.
pub(crate) enum FfiError {
    Core(Error),
    /// A NULL or non-UTF-8 argument.
    Argument {
        name: &'static str,
        problem: &'static str,
    },
    /// A panic caught at the boundary.
    Panic(String),
    /// A call on a store whose earlier operation panicked; `cause` is that panic's
    /// error object.
    Poisoned(Arc<str>),
}

impl From<Error> for FfiError {
    fn from(e: Error) -> FfiError {
        FfiError::Core(e)
    }
}

/// Builds a JSON object member by member, in the order written.
struct Object(String);

impl Object {
    fn new(code: &str, message: &str) -> Object {
        let mut out = String::from("{\"code\":");
        json::push_string(&mut out, code);
        out.push_str(",\"message\":");
        json::push_string(&mut out, message);
        Object(out)
    }

    fn string(mut self, key: &str, value: &str) -> Object {
        self.key(key);
        json::push_string(&mut self.0, value);
        self
    }

    fn number(mut self, key: &str, value: u64) -> Object {
        self.key(key);
        self.0.push_str(&value.to_string());
        self
    }

    /// A member whose value is already JSON.
    fn raw(mut self, key: &str, json: &str) -> Object {
        self.key(key);
        self.0.push_str(json);
        self
    }

    fn key(&mut self, key: &str) {
        self.0.push(',');
        json::push_string(&mut self.0, key);
        self.0.push(':');
    }

    fn finish(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

impl FfiError {
    pub(crate) fn status(&self) -> SessionStatus {
        match self {
            FfiError::Argument { .. } => SESSION_ERR_INVALID_ARGUMENT,
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
            },
        }
    }

    /// `{"error":{"code":…,"message":…,…details}}`.
    pub(crate) fn to_json(&self) -> String {
        format!("{{\"error\":{}}}", self.object())
    }

    /// The inner error object (what `cause` repeats for a tainted store).
    fn object(&self) -> String {
        let code = status_name_str(self.status());
        match self {
            FfiError::Argument { name, problem } => {
                Object::new(code, &format!("argument {name} {problem}"))
                    .string("argument", name)
                    .finish()
            }
            FfiError::Panic(message) => Object::new(code, message).finish(),
            FfiError::Poisoned(cause) => Object::new(
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
    let object = Object::new(code, &message);
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
            .number("owner_pid", u64::from(*owner))
            .number("pid", u64::from(*current))
            .finish(),
        Error::InvalidOption { .. } => object.string("argument", "options_json").finish(),
        Error::ReadOnly | Error::Internal { .. } => object.finish(),
    }
}

/// A file that changed under the writer has its own status; any other failed file
/// operation is `io`.
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

/// `{"code":"io","message":…,"op":…,"os_error":N}` (or `{"code":"file_changed",…,
/// "reason":…}`): the same bytes every time for the same failure, so a tainted store's
/// `cause` is identical in every result.
fn io_object(failure: &IoFailure) -> String {
    let object = Object::new(status_name_str(io_status(failure)), &failure.message)
        .string("op", failure.op.name());
    let object = match failure.change {
        Some(FileChange::SizeChanged { expected, actual }) => object
            .string("reason", "size_changed")
            .number("expected_size", expected)
            .number("actual_size", actual),
        Some(change) => object.string("reason", change.reason()),
        None => object,
    };
    match failure.os_error {
        Some(errno) if errno >= 0 => object.number("os_error", errno as u64).finish(),
        _ => object.finish(),
    }
}
