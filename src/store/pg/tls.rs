//! TLS for the PostgreSQL store (docs/contract.md §14), with libpq's `sslmode` meanings.
//!
//! The client crate's conninfo parser knows `sslmode` `disable`, `prefer` and `require`
//! only, and no `sslrootcert`; so both keys are taken out of the conninfo here (in either
//! form, `key=value …` or a `postgresql://` URI) before the rest goes to that parser:
//!
//! - `disable`: plain;
//! - `prefer` (the default): TLS when the server offers it, else plain; no check of the
//!   certificate (as libpq);
//! - `require`: TLS or no connection; no check of the certificate (as libpq), unless
//!   `sslrootcert` names a file, which makes it `verify-ca` (as libpq);
//! - `verify-ca`: TLS, the certificate chain checked against the roots;
//! - `verify-full`: `verify-ca` and the host name checked against the certificate.
//!
//! The roots are the PEM file `sslrootcert` names, or the system's store when it is
//! absent or `system`. A server whose certificate is itself in the root file (the usual
//! self-signed setup) is trusted as that pinned certificate. TLS is never tried over a
//! Unix socket (the server refuses it there; libpq ignores `sslmode` for sockets).

use std::io;
use std::sync::Arc;

use postgres::config::{Host, SslMode};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, IoFailure, IoOp};

use super::failure::Secret;

/// `sslmode`, as libpq names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The TLS keys of a conninfo.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) mode: Mode,
    /// `sslrootcert`: a PEM file, or `system`.
    pub(crate) root_cert: Option<String>,
}

/// `conninfo` without its `sslmode` and `sslrootcert`, and what they said. A conninfo
/// this cannot read is returned whole, for the client crate's parser to refuse.
pub(crate) fn split(conninfo: &str) -> Result<(String, Params), Error> {
    let (rest, pairs) =
        if conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://") {
            split_uri(conninfo)?
        } else {
            split_key_values(conninfo).unwrap_or_else(|| (conninfo.to_owned(), Vec::new()))
        };
    let mut mode = None;
    let mut root_cert = None;
    for (key, value) in pairs {
        if key == "sslmode" {
            mode = Some(match value.as_str() {
                "disable" => Mode::Disable,
                // libpq's `allow` (plain first, TLS if the server insists) is read as
                // `prefer`: both take TLS when the server asks for it.
                "allow" | "prefer" => Mode::Prefer,
                "require" => Mode::Require,
                "verify-ca" => Mode::VerifyCa,
                "verify-full" => Mode::VerifyFull,
                _ => {
                    return Err(Error::InvalidArgument {
                        argument: "conninfo",
                        message: "conninfo: invalid value for option `sslmode` (disable, allow, \
                                  prefer, require, verify-ca or verify-full)"
                            .to_owned(),
                    });
                }
            });
        } else {
            root_cert = Some(value);
        }
    }
    let mut mode = mode.unwrap_or(Mode::Prefer);
    // libpq: "if a root CA file exists, sslmode=require behaves as verify-ca".
    if mode == Mode::Require && root_cert.as_deref().is_some_and(|r| r != "system") {
        mode = Mode::VerifyCa;
    }
    Ok((rest, Params { mode, root_cert }))
}

fn is_tls_key(key: &str) -> bool {
    key == "sslmode" || key == "sslrootcert"
}

/// `key = value` pairs as libpq reads them: values bare or in single quotes, with
/// backslash escapes. `None` when the text does not read as such.
fn split_key_values(conninfo: &str) -> Option<(String, Vec<(String, String)>)> {
    let bytes = conninfo.as_bytes();
    let mut rest = String::with_capacity(conninfo.len());
    let mut pairs = Vec::new();
    let mut kept_from = 0;
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i == bytes.len() {
            break;
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &conninfo[start..i];
        i = skip_space(i);
        if i == bytes.len() || bytes[i] != b'=' {
            return None;
        }
        i = skip_space(i + 1);
        let mut value = Vec::new();
        if i < bytes.len() && bytes[i] == b'\'' {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < bytes.len() => {
                        value.push(bytes[i + 1]);
                        i += 2;
                    }
                    Some(&b) => {
                        value.push(b);
                        i += 1;
                    }
                }
            }
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    i += 1;
                }
                value.push(bytes[i]);
                i += 1;
            }
        }
        if is_tls_key(key) {
            rest.push_str(&conninfo[kept_from..start]);
            kept_from = i;
            pairs.push((key.to_owned(), String::from_utf8(value).ok()?));
        }
    }
    rest.push_str(&conninfo[kept_from..]);
    Some((rest, pairs))
}

/// The query of a `postgresql://` URI without the TLS keys, read as the client crate
/// reads it: the user part ends at the first `@`, the query starts at the next `?`.
fn split_uri(uri: &str) -> Result<(String, Vec<(String, String)>), Error> {
    let after_user = uri.find('@').map_or(0, |at| at + 1);
    let Some(question) = uri[after_user..].find('?').map(|q| after_user + q) else {
        return Ok((uri.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut pairs = Vec::new();
    for param in uri[question + 1..].split('&') {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        if is_tls_key(key) {
            pairs.push((key.to_owned(), percent_decode(value)?));
        } else {
            kept.push(param);
        }
    }
    let mut rest = uri[..question].to_owned();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    Ok((rest, pairs))
}

fn percent_decode(text: &str) -> Result<String, Error> {
    let invalid = || Error::InvalidArgument {
        argument: "conninfo",
        message: "conninfo: invalid percent-encoding in `sslmode` or `sslrootcert`".to_owned(),
    };
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).ok_or_else(invalid)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| invalid())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| invalid())
}

/// The client crate's `sslmode` for `params` on `config`'s hosts.
pub(crate) fn client_mode(params: &Params, hosts: &[Host]) -> SslMode {
    let sockets_only = !hosts.is_empty() && hosts.iter().all(|h| !matches!(h, Host::Tcp(_)));
    match params.mode {
        _ if sockets_only => SslMode::Disable,
        Mode::Disable => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
    }
}

fn open_failure(secret: &Secret, message: &str, err: Option<&io::Error>) -> Error {
    Error::Io(
        IoFailure {
            op: IoOp::Open,
            kind: err.map_or(io::ErrorKind::InvalidData, io::Error::kind),
            os_error: err.and_then(io::Error::raw_os_error),
            message: secret.scrub(message),
            change: None,
        }
        .into(),
    )
}

/// The TLS connector for `params`: rustls with the `ring` provider. Messages pass
/// through `secret` (a root file's path is echoed).
pub(crate) fn connector(params: &Params, secret: &Secret) -> Result<MakeRustlsConnect, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let check = match params.mode {
        Mode::Disable | Mode::Prefer | Mode::Require => None,
        Mode::VerifyCa | Mode::VerifyFull => Some(roots(params.root_cert.as_deref(), secret)?),
    };
    let verifier = Verifier {
        algorithms: provider.signature_verification_algorithms,
        chain: match &check {
            None => None,
            Some((roots, _)) => Some(
                WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots.clone()),
                    Arc::clone(&provider),
                )
                .build()
                .map_err(|e| {
                    open_failure(
                        secret,
                        &format!("PostgreSQL: TLS roots unusable: {e}"),
                        None,
                    )
                })?,
            ),
        },
        pinned: check.map(|(_, pinned)| pinned).unwrap_or_default(),
        name: params.mode == Mode::VerifyFull,
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| open_failure(secret, &format!("PostgreSQL: TLS setup failed: {e}"), None))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The roots to check against, and the certificates of the root file (pinned: a server
/// presenting one of them is trusted as it).
fn roots(
    root_cert: Option<&str>,
    secret: &Secret,
) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), Error> {
    let mut store = RootCertStore::empty();
    match root_cert {
        None | Some("system") => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(open_failure(
                    secret,
                    "PostgreSQL: sslmode verify-ca/verify-full without sslrootcert needs the \
                     system's root certificates, and none were found",
                    None,
                ));
            }
            Ok((store, Vec::new()))
        }
        Some(path) => {
            let unreadable = |e: String| {
                open_failure(
                    secret,
                    &format!("PostgreSQL: sslrootcert {path:?}: cannot read: {e}"),
                    None,
                )
            };
            let text = std::fs::read(path).map_err(|e| {
                open_failure(
                    secret,
                    &format!("PostgreSQL: sslrootcert {path:?}: cannot read: {e}"),
                    Some(&e),
                )
            })?;
            let certs = CertificateDer::pem_slice_iter(&text)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| unreadable(e.to_string()))?;
            let (added, _) = store.add_parsable_certificates(certs.iter().cloned());
            if added == 0 {
                return Err(unreadable("no PEM certificate in it".to_owned()));
            }
            Ok((store, certs))
        }
    }
}

/// Checks the server's certificate as the mode asks (nothing for `prefer`/`require`);
/// the handshake's signatures are always checked.
#[derive(Debug)]
struct Verifier {
    algorithms: WebPkiSupportedAlgorithms,
    /// The chain check (`verify-ca`, `verify-full`).
    chain: Option<Arc<WebPkiServerVerifier>>,
    pinned: Vec<CertificateDer<'static>>,
    /// Whether the host name is checked too (`verify-full`).
    name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Ok(verified) => Ok(verified),
            // The chain is good; only the name differs, which verify-ca does not check.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(ServerCertVerified::assertion()),
            // The server's own certificate is in the root file (a self-signed server
            // certificate, often marked as a CA, which the chain check refuses as a leaf).
            Err(_)
                if self
                    .pinned
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                if self.name {
                    let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
                    rustls::client::verify_server_name(&cert, server_name)?;
                }
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_ok(conninfo: &str) -> (String, Params) {
        split(conninfo).unwrap()
    }

    #[test]
    fn the_tls_keys_leave_a_key_value_conninfo_and_the_rest_stays_as_written() {
        let (rest, params) = split_ok(
            "host=db port=5432 sslmode = verify-full password='a b\\'c' sslrootcert='/x y/ca.pem'",
        );
        assert_eq!(rest, "host=db port=5432  password='a b\\'c' ");
        assert_eq!(params.mode, Mode::VerifyFull);
        assert_eq!(params.root_cert.as_deref(), Some("/x y/ca.pem"));
        let (rest, params) = split_ok("host=db");
        assert_eq!((rest.as_str(), params.mode), ("host=db", Mode::Prefer));
    }

    #[test]
    fn the_tls_keys_leave_a_uri_query() {
        let (rest, params) = split_ok(
            "postgresql://u:p%3Fw@db:5432/x?sslmode=verify-ca&connect_timeout=3&sslrootcert=%2Fca.pem",
        );
        assert_eq!(rest, "postgresql://u:p%3Fw@db:5432/x?connect_timeout=3");
        assert_eq!(params.mode, Mode::VerifyCa);
        assert_eq!(params.root_cert.as_deref(), Some("/ca.pem"));
        let (rest, params) = split_ok("postgresql://db/x?sslmode=require");
        assert_eq!(
            (rest.as_str(), params.mode),
            ("postgresql://db/x", Mode::Require)
        );
    }

    #[test]
    fn require_with_a_root_file_checks_the_chain_as_libpq_does() {
        assert_eq!(
            split_ok("sslmode=require sslrootcert=ca.pem").1.mode,
            Mode::VerifyCa
        );
        assert_eq!(
            split_ok("sslmode=require sslrootcert=system").1.mode,
            Mode::Require
        );
    }

    #[test]
    fn an_unknown_sslmode_is_invalid_argument_without_its_value() {
        match split("password=hunter2 sslmode=hunter2") {
            Err(Error::InvalidArgument { message, .. }) => assert!(!message.contains("hunter2")),
            other => panic!("{other:?}"),
        }
    }
}
