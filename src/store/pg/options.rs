//! The options of the PostgreSQL store and of its session listing, as parsed from
//! their JSON by the one options parser.

use crate::error::Error;
use crate::store::Durability;

/// Options of a PostgreSQL store, as JSON:
/// `{"durability":…,"strictRoles":bool,"create":bool,"pool":bool}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PgOptions {
    /// What a successful append promises, as the server's `synchronous_commit` for this
    /// connection: `"none"` → `off` (a server crash may lose the last commits, never
    /// half of one), `"fsync"` and `"fsync_batch"` → `on` (the commit is flushed to the
    /// server's WAL; the server groups concurrent flushes itself). Absent: the server's
    /// own setting.
    pub durability: Option<Durability>,
    /// Reject extension roles and blocks (docs/contract.md §6.1). Default: off.
    pub strict_roles: bool,
    /// Create the session when it does not exist (default). `false`: a session that
    /// does not exist is [`Error::Io`] of kind `NotFound`, and nothing is created (a
    /// reader, such as the source of `session copy`).
    pub create: bool,
    /// Keep the connection when the store closes, for the next open in this process
    /// with the same conninfo and durability, which then skips the login (default).
    /// At most 8 are kept per process; a kept one that turns out dead is replaced by
    /// a new one, never an error. `false`: the store's connection is its own, closed
    /// with it.
    pub pool: bool,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            durability: None,
            strict_roles: false,
            create: true,
            pool: true,
        }
    }
}

impl PgOptions {
    /// Options from a JSON object; unknown members are [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<PgOptions, Error> {
        crate::options::from_json(text)
    }
}

/// Options of the session listing, as JSON: `{"limit":N}` (default: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PgListOptions {
    pub limit: Option<u32>,
}

impl PgListOptions {
    /// Options from a JSON object; unknown members are [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<PgListOptions, Error> {
        crate::options::from_json(text)
    }
}
