//! A client error as the store's I/O failure, and the password of the connection
//! string, kept only to take it out of every such failure's message.

use std::error::Error as _;
use std::io;

use crate::error::{IoFailure, IoOp};

/// The password of a connection string, kept only to take it out of messages.
#[derive(Clone, Default)]
pub(crate) struct Secret(pub(super) Option<String>);

impl Secret {
    /// `text` with every occurrence of the password replaced.
    pub(crate) fn scrub(&self, text: &str) -> String {
        match &self.0 {
            Some(password) if !password.is_empty() => text.replace(password.as_str(), "********"),
            _ => text.to_owned(),
        }
    }
}

/// A failed database operation as the store's I/O failure, with the password
/// taken out of its message.
pub(super) fn failure(secret: &Secret, op: IoOp, what: &str, e: &postgres::Error) -> IoFailure {
    let mut message = format!("PostgreSQL: {what} failed: {e}");
    let mut source = e.source();
    let mut os: Option<&io::Error> = None;
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            os = Some(io);
        }
        source = cause.source();
    }
    if let Some(db) = e.as_db_error() {
        message.push_str(&format!(" (SQLSTATE {})", db.code().code()));
    }
    IoFailure {
        op,
        kind: os.map_or(io::ErrorKind::Other, io::Error::kind),
        os_error: os.and_then(io::Error::raw_os_error),
        message: secret.scrub(&message),
        change: None,
    }
}
