//! The C functions of secrets in sessions (docs/contract.md §16): find them, redact
//! them.

use std::ffi::c_char;
use std::path::Path;

use super::boundary::{guard, options_arg, str_arg};
use super::errors::FfiError;
use super::status::SessionStatus;
use crate::secrets::{SecretsOptions, redact_session, scan_secrets};

/// Section 10. Secrets: find them, redact them.
///
/// Finds the secrets in the session file path (UTF-8), or in the *.jsonl files
/// directly in the folder path. Files in a folder are read in name order; symbolic
/// links and anything that is not a regular file are passed over, never followed.
///
/// What is found:
///
/// - API keys and tokens, by their vendors' documented formats (AWS, GCP, Azure,
///   OpenAI, Anthropic, Google, Hugging Face, GitHub, GitLab, Slack, Discord,
///   Stripe);
/// - private key blocks and JWTs;
/// - passwords in URLs (scheme://user:password@host);
/// - password=, secret:, api_key= and the like, with a random-looking value;
/// - whatever the caller's rules match.
///
/// Every string of every line is checked, on its decoded value: a key written with
/// a \u escape in it is found. A line that is not JSON is checked as text. Keys,
/// and the values of members named id or ending in Id, are never checked.
///
/// options_json (NULL: the defaults) is {"rules": "default" or [{"name",
/// "pattern"}, …] (replaces the built-in rules), "extraRules": [{"name",
/// "pattern"}, …] (added to them), "allow": [string, …] (values never reported)},
/// every member optional. A pattern is a regular expression in the syntax of Rust's
/// regex crate, matched in linear time. If it has a group named secret, only that
/// group is the secret. A rule's name is 1 to 64 letters, digits, '-', '_' or '.'.
///
/// The result is {"findings":[{"path", "entryId", "pointer", "rule",
/// "fingerprint"}, …], "sessions": N}.
///
/// - path: the file as given, or its name in the folder;
/// - entryId: the line's id (null for a line that is not an entry);
/// - pointer: the JSON Pointer of the string in the line (null for a line that is
///   not JSON);
/// - rule: the rule's name;
/// - fingerprint: the first 12 hex digits of the SHA-256 of the secret, the same
///   wherever the same secret occurs;
/// - sessions: the number of files scanned.
///
/// No output, error or log of this function holds a secret or a line of the file.
///
/// Returns SESSION_OK, or:
///
/// - SESSION_ERR_INVALID_ARGUMENT: a NULL or non-UTF-8 path; with argument
///   options_json, options that are not a JSON object, an unknown member or wrong
///   type, inPlace, or an invalid rule (named without quoting its pattern);
/// - SESSION_ERR_IO when the path or a file cannot be read;
/// - SESSION_ERR_INTERNAL.
///
/// Ownership: path and options_json are borrowed for the call. out_json may be
/// NULL; otherwise *out_json is always set, to the result or to {"error":{…}}, and
/// the caller frees it with session_string_free. Thread-safe; it touches no store.
///
/// Safety: path and options_json are NULL or NUL-terminated; out_json is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_secrets(
    path: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `path` is NULL or NUL-terminated.
            let path = str_arg(path, "path")?;
            // SAFETY: the caller guarantees `options_json` is NULL or NUL-terminated.
            let options = options_arg(options_json, SecretsOptions::from_json)?;
            Ok(scan_secrets(Path::new(path), &options)?
                .to_json()
                .into_bytes())
        })
    }
}

/// Writes the session file src_path to dst_path, a new file, with every secret
/// that session_secrets finds replaced by [REDACTED:<rule>]. Only the bytes that
/// spell a secret are rewritten. Every other byte is unchanged: ids, the tree,
/// numbers, keys, the rest of each string and its escapes. So the entries, their
/// tool pairing and the context built from them keep their shape.
///
/// dst_path must not exist: it is never replaced. The text is written to a
/// temporary file beside it (.NAME.redact-K.tmp), with src_path's permissions,
/// never wider. That file is synced and renamed to dst_path. After a failure
/// nothing is left.
///
/// dst_path NULL with {"inPlace": true} rewrites src_path itself, under the
/// writer's lock, so no writer appends meanwhile. The temporary file is renamed
/// over it, so the file is whole at every moment. No copy of a secret is kept (no
/// backup). A file with nothing to redact is not rewritten. The session index
/// beside it is removed; the next open rebuilds it.
///
/// options_json (NULL: the defaults) is as for session_secrets, plus "inPlace":
/// bool (default false). The result is {"redactions": N, "findings": [ … as for
/// session_secrets … ]}.
///
/// Returns SESSION_OK, or:
///
/// - SESSION_ERR_INVALID_ARGUMENT, with argument naming it: a NULL or non-UTF-8
///   src_path, a non-UTF-8 dst_path, or dst_path NULL without inPlace. With
///   argument options_json: bad options, an invalid rule, or dst_path given with
///   inPlace.
/// - SESSION_ERR_LOCKED when a writer holds src_path (inPlace).
/// - SESSION_ERR_IO when a file cannot be read, created or renamed (dst_path
///   exists: op "write", OS error 17).
/// - SESSION_ERR_INTERNAL.
///
/// Ownership: every string is borrowed for the call. out_json may be NULL;
/// otherwise *out_json is always set, to the result or to {"error":{…}}, and the
/// caller frees it with session_string_free. Thread-safe; it touches no store.
///
/// Safety: src_path, dst_path and options_json are NULL or NUL-terminated; out_json
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_redact(
    src_path: *const c_char,
    dst_path: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `src_path` is NULL or NUL-terminated.
            let src = str_arg(src_path, "src_path")?;
            // SAFETY: the caller guarantees `options_json` is NULL or NUL-terminated.
            let options = options_arg(options_json, SecretsOptions::from_json)?;
            let dst = if dst_path.is_null() {
                if !options.in_place {
                    return Err(FfiError::Argument {
                        name: "dst_path",
                        problem: "is NULL without {\"inPlace\": true}",
                    });
                }
                None
            } else {
                // SAFETY: non-NULL and NUL-terminated (the caller's promise).
                Some(Path::new(str_arg(dst_path, "dst_path")?))
            };
            Ok(redact_session(Path::new(src), dst, &options)?
                .to_json()
                .into_bytes())
        })
    }
}
