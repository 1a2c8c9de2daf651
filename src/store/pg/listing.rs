//! The listing of a database's sessions (`session ls` on PostgreSQL): one record per
//! session row, most recently modified first, and its JSON.

use crate::error::Error;
use crate::json::Object;

use super::PgListOptions;
#[cfg(feature = "postgres")]
use super::connection::connect;
#[cfg(not(feature = "postgres"))]
use super::disabled::list;
#[cfg(feature = "postgres")]
use super::failure::failure;
#[cfg(feature = "postgres")]
use crate::error::{IoFailure, IoOp};
#[cfg(feature = "postgres")]
use std::io;

/// One session in the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSessionInfo {
    pub session_id: String,
    /// Committed entries.
    pub entries: u64,
    /// The id of the last committed entry, `None` when there is none.
    pub latest_leaf_id: Option<String>,
    /// When the last entry was committed (or the session created), in ms since the epoch.
    pub modified_ms: u64,
}

impl PgSessionInfo {
    fn to_json(&self) -> String {
        Object::new()
            .string("sessionId", &self.session_id)
            .number("entries", self.entries)
            .string_or_null("latestLeafId", self.latest_leaf_id.as_deref())
            .number("modifiedMs", self.modified_ms)
            .finish()
    }
}

/// `{"sessions":[…]}`.
pub fn pg_sessions_json(sessions: &[PgSessionInfo]) -> String {
    Object::new()
        .raw(
            "sessions",
            &crate::json::array(sessions.iter().map(PgSessionInfo::to_json)),
        )
        .finish()
}

/// Every session of the PostgreSQL database `conninfo` names, most recently modified
/// first (docs/contract.md §14). Creates the schema on first use, as an open does.
pub fn list_pg_sessions(
    conninfo: &str,
    options: &PgListOptions,
) -> Result<Vec<PgSessionInfo>, Error> {
    list(conninfo, options)
}

/// An id read back from a `bytea` column: the UTF-8 bytes the store wrote.
#[cfg(feature = "postgres")]
fn id_text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|_| {
        Error::Io(
            IoFailure {
                op: IoOp::Read,
                kind: io::ErrorKind::InvalidData,
                os_error: None,
                message: "PostgreSQL: an id column holds bytes that are not UTF-8 \
                          (written outside libsession)"
                    .to_owned(),
                change: None,
            }
            .into(),
        )
    })
}

/// Every session of the database, most recently modified first.
#[cfg(feature = "postgres")]
pub(crate) fn list(conninfo: &str, options: &PgListOptions) -> Result<Vec<PgSessionInfo>, Error> {
    let (mut client, secret) = connect(conninfo)?;
    let limit = options.limit.map_or(i64::MAX, i64::from);
    let rows = client
        .query(
            "SELECT session_id, entries, latest_leaf_id, modified_ms FROM libsession_sessions \
             ORDER BY modified_ms DESC, session_id LIMIT $1",
            &[&limit],
        )
        .map_err(|e| Error::Io(failure(&secret, IoOp::Read, "listing", &e).into()))?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let get =
            |e: postgres::Error| Error::Io(failure(&secret, IoOp::Read, "listing", &e).into());
        let entries: i64 = row.try_get(1).map_err(get)?;
        let modified: i64 = row.try_get(3).map_err(get)?;
        out.push(PgSessionInfo {
            session_id: row.try_get(0).map_err(get)?,
            entries: u64::try_from(entries).unwrap_or(0),
            latest_leaf_id: row
                .try_get::<_, Option<Vec<u8>>>(2)
                .map_err(get)?
                .map(id_text)
                .transpose()?,
            modified_ms: u64::try_from(modified).unwrap_or(0),
        });
    }
    Ok(out)
}
