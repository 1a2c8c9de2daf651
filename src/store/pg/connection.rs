//! The connection to the database: the login (with the TLS the conninfo asks for), the
//! schema check after it, and the connection shared by a store's sink and its session
//! index.

use std::error::Error as _;

use postgres::{Client, Config};

use crate::error::{Error, IoOp};
use crate::store::Durability;

use super::failure::{Secret, failure};
use super::{PgOptions, tls};

/// One connection, used by the sink and the session index's sources in turn.
pub(crate) type Shared = std::sync::Arc<std::sync::Mutex<Client>>;

/// The connection; a panic while it was held leaves nothing half done on the client
/// side that a later statement would trip on, so a poisoned lock is taken as is.
pub(crate) fn lock(client: &Shared) -> std::sync::MutexGuard<'_, Client> {
    client
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`connect`], then the connection's `synchronous_commit` as `options` says.
pub(super) fn connect_with(conninfo: &str, options: &PgOptions) -> Result<(Client, Secret), Error> {
    let (mut client, secret) = connect(conninfo)?;
    match options.durability {
        Some(Durability::None) => client.batch_execute("SET synchronous_commit = off"),
        Some(_) => client.batch_execute("SET synchronous_commit = on"),
        None => Ok(()),
    }
    .map_err(|e| Error::Io(failure(&secret, IoOp::Open, "open", &e).into()))?;
    Ok((client, secret))
}

/// Connects and makes sure the schema is there, at this library's version.
pub(super) fn connect(conninfo: &str) -> Result<(Client, Secret), Error> {
    let (mut client, secret) = login(conninfo)?;
    super::schema::ensure(&mut client, &secret)?;
    Ok((client, secret))
}

/// Connects (the login), nothing more.
pub(super) fn login(conninfo: &str) -> Result<(Client, Secret), Error> {
    // `sslmode` and `sslrootcert` are read here: the client crate's parser knows
    // neither verify-ca/verify-full nor a root file.
    let (conninfo, tls) = tls::split(conninfo)?;
    let mut config: Config = conninfo.parse().map_err(|e: postgres::Error| {
        // The parser names a bad key, never a value; the text is not echoed.
        Error::InvalidArgument {
            argument: "conninfo",
            message: format!(
                "conninfo is not a connection string or URI: {}",
                e.source().map_or_else(|| e.to_string(), |s| s.to_string())
            ),
        }
    })?;
    let secret = Secret(
        config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
    );
    config.ssl_mode(tls::client_mode(&tls, config.get_hosts()));
    let client = config
        .connect(tls::connector(&tls, &secret)?)
        .map_err(|e| Error::Io(failure(&secret, IoOp::Open, "connect", &e).into()))?;
    Ok((client, secret))
}
