//! Where a session is: the one parser of the store locations every verb takes.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Where a session is: a file, or a session in a PostgreSQL database. Every verb that
/// reads or writes a session takes one ([`location`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres {
        conninfo: String,
        session_id: String,
    },
}

impl Location {
    /// How the location is named in a message: the path, or `SESSION_ID in the database`.
    pub fn describe(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Postgres { session_id, .. } => {
                format!("session {session_id} in the database")
            }
        }
    }
}

/// What `ls` lists: a folder, or a database's sessions.
pub enum LsPlace {
    Dir(PathBuf),
    Postgres(String),
}

pub fn is_pg_uri(arg: &OsStr) -> bool {
    arg.to_str()
        .is_some_and(|t| t.starts_with("postgres://") || t.starts_with("postgresql://"))
}

/// The one parser of store locations. With `--pg CONNINFO`, `arg` is the session id
/// in that database. Else a `postgres://` or `postgresql://` URI names the session
/// after `#` (`postgresql://alice@/agents?host=/var/run/postgresql#SESSION_ID`: the
/// URI before `#` is the connection string); anything else is a file path.
pub fn location(arg: OsString, pg: Option<&str>) -> Result<Location, &'static str> {
    if let Some(conninfo) = pg {
        if is_pg_uri(&arg) {
            return Err("with --pg CONNINFO, give the session id, not a postgres:// URI");
        }
        let session_id = utf8(arg, "with --pg, the session id must be UTF-8 text")?;
        if session_id.is_empty() {
            return Err("with --pg CONNINFO, name the session: --pg CONNINFO SESSION_ID");
        }
        return Ok(Location::Postgres {
            conninfo: conninfo.to_owned(),
            session_id,
        });
    }
    if !is_pg_uri(&arg) {
        return Ok(Location::File(PathBuf::from(arg)));
    }
    let text = utf8(arg, "a postgres:// argument must be UTF-8 text")?;
    match text.rsplit_once('#') {
        Some((conninfo, session_id)) if !session_id.is_empty() => Ok(Location::Postgres {
            conninfo: conninfo.to_owned(),
            session_id: session_id.to_owned(),
        }),
        _ => Err(
            "a postgres:// location names its session after #: postgres://…#SESSION_ID \
             (list them with `session ls postgres://…`)",
        ),
    }
}

/// A file verb's FILE: a path only (`verify`, `salvage`, `repair` check a file's bytes,
/// which a database does not have).
pub fn file_only(file: PathBuf, pg: Option<&str>) -> Result<PathBuf, &'static str> {
    if pg.is_some() || is_pg_uri(file.as_os_str()) {
        return Err("verify, salvage, repair, import and export read a file; \
                    for a session in a database, `session copy` it to a file first");
    }
    Ok(file)
}

const LEAF_NOT_UTF8: &str = "LEAF is not UTF-8 text, so it cannot be an entry id";

pub fn leaf_id(leaf: Option<OsString>) -> Result<Option<String>, &'static str> {
    leaf.map(|l| utf8(l, LEAF_NOT_UTF8)).transpose()
}

pub fn utf8(text: OsString, reason: &'static str) -> Result<String, &'static str> {
    text.into_string().map_err(|_| reason)
}

#[cfg(test)]
mod tests {
    use super::{Location, location};
    use std::ffi::OsString;
    use std::path::PathBuf;

    fn pg(conninfo: &str, id: &str) -> Location {
        Location::Postgres {
            conninfo: conninfo.into(),
            session_id: id.into(),
        }
    }

    #[test]
    fn a_location_is_a_uri_with_its_session_after_the_hash_or_a_file() {
        let uri = "postgresql://alice@/agents?host=/var/run/postgresql";
        assert_eq!(
            location(OsString::from(format!("{uri}#s-1")), None),
            Ok(pg(uri, "s-1"))
        );
        assert_eq!(
            location(OsString::from("postgres://h/db#a#b"), None),
            Ok(pg("postgres://h/db#a", "b"))
        );
        assert_eq!(
            location(OsString::from("dir/s.jsonl"), None),
            Ok(Location::File(PathBuf::from("dir/s.jsonl")))
        );
        assert!(location(OsString::from("postgres://h/db"), None).is_err());
        assert!(location(OsString::from("postgres://h/db#"), None).is_err());
    }

    #[test]
    fn with_pg_the_location_is_the_session_id() {
        let conninfo = "host=/tmp dbname=agents";
        assert_eq!(
            location(OsString::from("s-1"), Some(conninfo)),
            Ok(pg(conninfo, "s-1"))
        );
        assert!(location(OsString::from("postgres://h/db#s"), Some(conninfo)).is_err());
        assert!(location(OsString::new(), Some(conninfo)).is_err());
    }
}
