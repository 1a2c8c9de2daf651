//! The PostgreSQL store in a build without the `postgres` feature: the same names,
//! every entry point failing with [`Error::Unsupported`], and a sink that cannot exist.

use crate::error::{Error, IoFailure};

use super::{PgListOptions, PgOptions, PgSessionInfo, check_session_id};

/// Without the `postgres` feature no connection can exist.
pub(crate) enum PgSink {}

/// Matched by the store; never made, as no connection exists.
#[allow(dead_code)]
pub(crate) enum Inserted {
    Committed(u64),
    Taken,
}

/// The one error of a function whose cargo feature this build lacks (as search's).
fn unsupported() -> Error {
    Error::Unsupported {
        feature: "postgres",
    }
}

impl PgSink {
    pub(crate) fn open(_: &str, session_id: &str, _: &PgOptions) -> Result<PgSink, Error> {
        check_session_id(session_id)?;
        Err(unsupported())
    }

    pub(crate) fn rows_from(&mut self, _: u64) -> Result<Vec<(u64, Vec<u8>, String)>, IoFailure> {
        match *self {}
    }

    pub(crate) fn read_only(&self) -> bool {
        match *self {}
    }

    pub(crate) fn is_closed(&self) -> bool {
        match *self {}
    }

    pub(crate) fn insert(
        &mut self,
        _: u64,
        _: &str,
        _: Option<&str>,
        _: &str,
    ) -> Result<Inserted, IoFailure> {
        match *self {}
    }

    pub(crate) fn conflict(&mut self, _: &str) -> Result<Option<u64>, IoFailure> {
        match *self {}
    }
}

pub(crate) fn list(_: &str, _: &PgListOptions) -> Result<Vec<PgSessionInfo>, Error> {
    Err(unsupported())
}

pub(crate) fn load_base(sink: &PgSink) -> Option<crate::store::log::Log> {
    match *sink {}
}

pub(crate) fn write_index(sink: &PgSink, _: &crate::store::log::Log) -> bool {
    match *sink {}
}

pub(crate) fn copy_in(
    _: &str,
    session_id: &str,
    _: &PgOptions,
    _: &[crate::entry::Entry],
    _: &mut dyn FnMut(&crate::entry::Entry) -> Result<(), Error>,
    _: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    check_session_id(session_id)?;
    Err(unsupported())
}
