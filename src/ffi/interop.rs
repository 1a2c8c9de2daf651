//! The C functions of session import (issue 14) and export (issue 35): another
//! agent's session file in, a new libsession file out, and back.

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::ptr;

use super::boundary::{guard, str_arg};
use super::errors::FfiError;
use super::status::SessionStatus;
use crate::interop::{
    ExportOptions, Format, ImportOptions, ImportProgress, export_file, import_file_with,
};

/// Converts the session file of another agent at src_path into a new libsession
/// JSONL file at out_path and returns the import report.
///
/// format is "pi" (pi's session file, versions 1–3), "claude-code" (a Claude
/// Code transcript), "codex" (a Codex rollout file), or "auto" or NULL: detected
/// from the first lines of the source (at most 64 non-blank ones): pi by its
/// {"type":"session"} header line, Claude Code by parentUuid, sessionId or its line
/// types (user, assistant, summary, system, progress, file-history-snapshot,
/// queue-operation), Codex by its line types (session_meta, response_item,
/// event_msg, turn_context, compacted) or an older rollout's record_type or
/// id/timestamp/instructions header. A source that looks like another format than
/// the one given, or in which no line maps to a conversation entry (a message or a
/// compaction), is SESSION_ERR_INVALID_ARGUMENT with argument src_path and
/// detected (the format it looks like, or null), and nothing is written. Every line of the source ends
/// up in the output: as what it says (message, compaction, label, …) or, when it
/// cannot be mapped (a torn or corrupt line, an unknown kind), as a metadata entry
/// <format>.unmapped holding its raw text and line number. A compaction that the
/// store would refuse at append is written as the source has it and listed in
/// refusedCompactions. out_path must not exist (an import never overwrites a
/// file): the entries are written through a buffer into a temporary file beside it
/// (.NAME.import-PID-K.tmp), synced, then renamed to out_path unless that exists
/// by then; on any failure nothing is left at out_path. The source is read a line at
/// a time (two or three passes): memory follows the longest line and the ids kept
/// (about 40 bytes an entry; up to about 200 for a line kept raw, which the report
/// lists), never the size of the source.
///
/// A pi entry's own member named like one of the importer's marks (isoTimestamp,
/// piType, importedParentId, or such a name followed by ~) is kept with one more
/// ~, so that it is never read as a mark; the export to pi takes it off again.
///
/// The report: {"linesRead", "entriesWritten", "entryTypes":{type: count},
/// "sourceKinds":{source kind: count}, "unmapped":[{"line","reason","entryId"}],
/// "reparented":[{"line","id","parentId"}], "refusedCompactions":[{"line","id",
/// "reason"}], "unterminatedTail":bool, "format":NAME, "resumeLeafId":ID,
/// "unknownKinds":{source kind: count}, "redactions": N}; reason of an unmapped line is
/// invalid_json, unknown_kind, invalid_shape, invalid_entry or
/// duplicate_id. format is the format imported (given or detected); the root
/// entry records it as importedFormat. resumeLeafId is the leaf the source agent
/// resumes: the latest entry in commit order with a message or compaction on its
/// path and no children other than lines kept raw, so a line of an unknown kind
/// (kept raw, hung under the root) is never it. The session records it too: its
/// last entry is {"id","parentId":ID,"timestamp","type":"metadata",
/// "key":"session.resumeLeaf","value":{"leafId":ID}}, a child of that leaf (counted
/// in entriesWritten), so the session's latest leaf is on the branch the agent
/// resumes and a reader finds the leaf without the report. unknownKinds counts the
/// lines kept raw as unknown_kind by their source kind (a Claude Code last-prompt, a
/// Codex world_state, …). redactions counts the secrets replaced (0 without
/// "redact": true).
///
/// options_json is NULL or {"redact": bool, "rules": "default" | [{"name",
/// "pattern"}…], "extraRules": [{"name","pattern"}…], "allow": [string…]}. With
/// "redact": true (default false) every entry has the secrets in its strings
/// replaced by [REDACTED:<rule>] before it is written, as session_redact does (ids,
/// parent ids and tool call ids never change, so the tree is the same); rules,
/// extraRules and allow choose the rules as for session_secrets and are refused
/// without "redact": true. An unknown member, or an invalid rule, is
/// SESSION_ERR_INVALID_ARGUMENT.
///
/// Returns SESSION_OK; SESSION_ERR_IO when the source cannot be read (one that is
/// not a regular file, such as a FIFO or /dev/zero, is refused at once: op
/// "open", "… is a FIFO, not a regular file"), when the output cannot be created
/// (it exists already: op "open", OS error 17) or written, or when memory runs
/// out (an error, never an abort: "out of memory for …");
/// SESSION_ERR_CORRUPT_LINE (reason line_too_long, line the source line) when
/// a source line, or the entry it becomes, is longer than SESSION_MAX_LINE_BYTES:
/// no store could read such an entry back, so the import writes nothing;
/// SESSION_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 string, an unknown format,
/// bad options), with argument naming it; SESSION_ERR_INVALID_ARGUMENT with
/// argument src_path and detected for a source of another format or without a
/// conversation entry (see above); SESSION_ERR_INTERNAL.
///
/// Ownership: every string is borrowed for the call. out_json may be NULL;
/// otherwise *out_json is always set, to the report or to {"error":{…}}, and the
/// caller frees it with session_string_free. Thread-safe; it touches no store.
///
/// Safety: format, src_path, out_path and options_json are NULL or NUL-terminated;
/// out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_import(
    format: *const c_char,
    src_path: *const c_char,
    out_path: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller's promises are those of session_import_with_progress, with
    // no callback.
    unsafe {
        session_import_with_progress(
            format,
            src_path,
            out_path,
            options_json,
            None,
            ptr::null_mut(),
            out_json,
        )
    }
}

/// Told how far a long call has come: pass (from 1) of the passes the call makes over
/// its input, done of total bytes of that pass, and the user_data given to the call.
/// Returning non-zero asks the call to stop: it returns SESSION_ERR_CANCELLED and
/// writes nothing. It is called on the calling thread, never after the call returns,
/// and must not unwind (a C++ exception) or longjmp out.
pub type SessionProgress =
    Option<unsafe extern "C" fn(pass: u32, done: u64, total: u64, user_data: *mut c_void) -> c_int>;

/// session_import, telling progress how far it has read: at the start of each pass
/// over the source (two or three) and after every mebibyte read, with total the
/// source's size in bytes. progress may be NULL (then this is session_import);
/// user_data is passed to it untouched and may be NULL. When progress returns
/// non-zero the import stops: SESSION_ERR_CANCELLED, and nothing is left at
/// out_path (the temporary file is removed).
///
/// Returns what session_import returns, and SESSION_ERR_CANCELLED. Ownership and
/// threads: as session_import.
///
/// Safety: format, src_path, out_path and options_json are NULL or NUL-terminated;
/// out_json is NULL or writable; progress is NULL or follows SessionProgress's
/// contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_import_with_progress(
    format: *const c_char,
    src_path: *const c_char,
    out_path: *const c_char,
    options_json: *const c_char,
    progress: SessionProgress,
    user_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees each string is NULL or NUL-terminated.
            let format = match format.is_null() {
                true => "auto",
                false => str_arg(format, "format")?,
            };
            // SAFETY: as above.
            let src = str_arg(src_path, "src_path")?;
            // SAFETY: as above.
            let out = str_arg(out_path, "out_path")?;
            let options = match options_json.is_null() {
                true => ImportOptions::default(),
                // SAFETY: as above.
                false => ImportOptions::from_json(str_arg(options_json, "options_json")?)?,
            };
            let format = match format {
                "auto" => None,
                name => Some(Format::from_name(name).ok_or(FfiError::Argument {
                    name: "format",
                    problem: "is not \"pi\", \"claude-code\", \"codex\" or \"auto\"",
                })?),
            };
            let mut tell = |p: ImportProgress| match progress {
                // SAFETY: the caller guarantees the callback follows SessionProgress.
                Some(callback) => callback(p.pass, p.done, p.total, user_data) == 0,
                None => true,
            };
            let report =
                import_file_with(format, Path::new(src), Path::new(out), &options, &mut tell)?;
            Ok(report.to_json().into_bytes())
        })
    }
}

/// Writes the libsession session file at src_path as a new file at out_path that
/// another agent resumes, and returns the export report.
///
/// format is "pi" (a pi session file: the whole tree, every entry kept, the leaf
/// written last, where pi resumes), "claude-code" (a Claude Code transcript, resumed
/// with claude --resume and the sessionId its lines carry) or "codex" (a Codex rollout,
/// resumed with codex resume and the id of its session_meta line). Claude Code and
/// Codex resume one linear history and apply their own rules to it: their file holds
/// what that agent sends for the leaf, the messages of session_build_context with the
/// profile of that agent, each as the line the agent writes (a compaction as a Claude
/// Code compact boundary and its summary line, or as a Codex compacted line whose
/// replacement history is the summary message, the other items after it). What the agent's format cannot carry is
/// converted or left out and listed in the report: a message of a role the agent
/// lacks (pi's custom, branchSummary, bashExecution; Codex's developer for Claude Code)
/// is sent as user text, after the results of tool calls pending before it; a
/// thinking block to Codex becomes a reasoning item with the text as its summary, and
/// one without a signature is left out for Claude Code (which sends none); an
/// error flag on a result to Codex is not carried; a Codex item with no Claude Code
/// equivalent (a web or tool search) is left out for Claude Code; metadata, labels,
/// other branches and messages before the compaction are not written. The session's
/// id is the source's (a Claude Code sessionId, a Codex or pi session id) when it is a
/// UUID, else a UUID made from the first message's entry id; line ids are the entry
/// ids where the format has them.
///
/// options_json is NULL or {"leaf": id, "redact": bool, "rules": "default" |
/// [{"name","pattern"}…], "extraRules": [{"name","pattern"}…], "allow":
/// [string…]}: leaf is the leaf to resume (default: the latest leaf). Secrets are
/// redacted by default: every line written has the secrets in its strings replaced
/// by [REDACTED:<rule>], as session_redact does (ids, parent ids, tool call ids and
/// the agents' own ids such as uuid, parentUuid, tool_use_id and call_id never
/// change); "redact": false writes them as they are. rules, extraRules and allow
/// choose the rules as for session_secrets and are refused with "redact": false. An
/// unknown member, or an invalid rule, is SESSION_ERR_INVALID_ARGUMENT.
///
/// The report: {"format":NAME,"entries":N,"converted":[{"kind","count","reason"}…],
/// "dropped":[{"kind","count","reason"}…],"redactions":N}; redactions is the number
/// of secrets replaced; entries is the number of lines written
/// (a header line included), kind names what was changed (metadata, label, branch,
/// message, compaction, role:ROLE, block:TYPE, thinking, toolResult.isError, order,
/// codexItem:TYPE, compaction.summary), count how many, reason why in a sentence.
///
/// out_path must not exist (an export never overwrites a file): the text is written
/// into a temporary file beside it whose permissions are no wider than the source's
/// (a 0600 source gives a 0600 file), synced, then renamed to out_path unless that
/// exists by then; on any failure nothing is left at out_path. The source is opened
/// read-only and may have a writer.
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 string, a
/// format other than the three, bad options), with argument naming it;
/// SESSION_ERR_UNKNOWN_LEAF when no entry has the leaf's id; SESSION_ERR_IO when the
/// source cannot be read or the output cannot be created (it exists already: op
/// "open", OS error 17) or written; the statuses of opening a session file
/// (SESSION_ERR_CORRUPT_LINE, …); for claude-code and codex, the statuses of
/// session_build_context for the leaf under that agent's profile
/// (SESSION_ERR_INVALID_COMPACTION, SESSION_ERR_TOOL_PAIRING for a duplicate call);
/// SESSION_ERR_INTERNAL.
///
/// Ownership: every string is borrowed for the call. out_json may be NULL; otherwise
/// *out_json is always set, to the report or to {"error":{…}}, and the caller frees
/// it with session_string_free. Thread-safe; it touches no open store.
///
/// Safety: format, src_path, out_path and options_json are NULL or NUL-terminated;
/// out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_export(
    format: *const c_char,
    src_path: *const c_char,
    out_path: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees each string is NULL or NUL-terminated.
            let format = str_arg(format, "format")?;
            // SAFETY: as above.
            let src = str_arg(src_path, "src_path")?;
            // SAFETY: as above.
            let out = str_arg(out_path, "out_path")?;
            let options = match options_json.is_null() {
                true => ExportOptions::default(),
                // SAFETY: as above.
                false => ExportOptions::from_json(str_arg(options_json, "options_json")?)?,
            };
            let format = Format::from_name(format).ok_or(FfiError::Argument {
                name: "format",
                problem: "is not \"pi\", \"claude-code\" or \"codex\"",
            })?;
            let report = export_file(format, Path::new(src), Path::new(out), &options)?;
            Ok(report.to_json().into_bytes())
        })
    }
}
