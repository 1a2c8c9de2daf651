//! The C functions of session import and export (docs/contract.md §12, §15): another
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

/// Section 7. Import and export: pi, Claude Code, Codex.
///
/// Converts the session file of another agent at src_path into a new libsession
/// JSONL file at out_path, and returns the import report.
///
/// format names the source's format: "pi" (pi's session file, versions 1–3),
/// "claude-code" (a Claude Code transcript) or "codex" (a Codex rollout file).
/// "auto" or NULL detects it from the first lines of the source (at most 64
/// non-blank ones):
///
/// - pi by its {"type":"session"} header line;
/// - Claude Code by parentUuid, sessionId or its line types (user, assistant,
///   summary, system, progress, file-history-snapshot, queue-operation);
/// - Codex by its line types (session_meta, response_item, event_msg,
///   turn_context, compacted), or an older rollout's record_type or
///   id/timestamp/instructions header.
///
/// Two kinds of source are refused, and nothing is written: one that looks like
/// another format than the one given, and one in which no line maps to a
/// conversation entry (a message or a compaction). The error is
/// SESSION_ERR_INVALID_ARGUMENT with argument src_path and detected (the format it
/// looks like, or null).
///
/// Every line of the source ends up in the output. A line becomes what it says
/// (message, compaction, label, …). A line that cannot be mapped (a torn or corrupt
/// line, an unknown kind) becomes a metadata entry <format>.unmapped that holds its
/// raw text and line number. A compaction that the store would refuse at append is
/// written as the source has it, and listed in refusedCompactions.
///
/// out_path must not exist: an import never overwrites a file. The entries are
/// written through a buffer into a temporary file beside it
/// (.NAME.import-PID-K.tmp). That file is synced, then renamed to out_path unless
/// out_path exists by then. On any failure nothing is left at out_path.
///
/// The source is read a line at a time, in two or three passes. Memory follows the
/// longest line and the ids kept, never the size of the source: about 40 bytes an
/// entry, and up to about 200 for a line kept raw (which the report lists).
///
/// A pi entry may have its own member named like one of the importer's marks
/// (isoTimestamp, piType, importedParentId, or such a name followed by ~). It is
/// kept with one more ~, so that it is never read as a mark. The export to pi takes
/// the ~ off again.
///
/// The report is {"linesRead", "entriesWritten", "entryTypes":{type: count},
/// "sourceKinds":{source kind: count}, "unmapped":[{"line","reason","entryId"}],
/// "reparented":[{"line","id","parentId"}], "refusedCompactions":[{"line","id",
/// "reason"}], "unterminatedTail":bool, "format":NAME, "resumeLeafId":ID,
/// "unknownKinds":{source kind: count}, "redactions": N}.
///
/// - The reason of an unmapped line is invalid_json, unknown_kind, invalid_shape,
///   invalid_entry or duplicate_id.
/// - format is the format imported (given or detected). The root entry records it
///   as importedFormat.
/// - resumeLeafId is the leaf the source agent resumes: the latest entry in commit
///   order with a message or compaction on its path and no children other than
///   lines kept raw. So a line of an unknown kind (kept raw, hung under the root)
///   is never it.
/// - The session records that leaf too. Its last entry is {"id","parentId":ID,
///   "timestamp","type":"metadata","key":"session.resumeLeaf",
///   "value":{"leafId":ID}}, a child of that leaf (counted in entriesWritten). So
///   the session's latest leaf is on the branch the agent resumes, and a reader
///   finds the leaf without the report.
/// - unknownKinds counts the lines kept raw as unknown_kind, by their source kind
///   (a Claude Code last-prompt, a Codex world_state, …).
/// - redactions counts the secrets replaced (0 without "redact": true).
///
/// options_json is NULL or {"redact": bool, "rules": "default" | [{"name",
/// "pattern"}…], "extraRules": [{"name","pattern"}…], "allow": [string…]}.
/// "redact": true (default false) replaces the secrets in every entry's strings by
/// [REDACTED:<rule>] before the entry is written, as session_redact does. Ids,
/// parent ids and tool call ids never change, so the tree is the same. rules,
/// extraRules and allow choose the rules as for session_secrets; without "redact":
/// true they are refused. An unknown member, or an invalid rule, is
/// SESSION_ERR_INVALID_ARGUMENT.
///
/// Returns SESSION_OK, or:
///
/// - SESSION_ERR_IO when the source cannot be read, when the output cannot be
///   created or written, or when memory runs out. A source that is not a regular
///   file (a FIFO, /dev/zero) is refused at once: op "open", "… is a FIFO, not a
///   regular file". An output that exists already: op "open", OS error 17. Memory
///   that runs out is an error, never an abort: "out of memory for …".
/// - SESSION_ERR_CORRUPT_LINE (reason line_too_long, line the source line) when a
///   source line, or the entry it becomes, is longer than SESSION_MAX_LINE_BYTES.
///   No store could read such an entry back, so the import writes nothing.
/// - SESSION_ERR_INVALID_ARGUMENT, with argument naming it: a NULL or non-UTF-8
///   string, an unknown format, bad options. With argument src_path and detected:
///   a source of another format, or one without a conversation entry (see above).
/// - SESSION_ERR_INTERNAL.
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
/// format is one of:
///
/// - "pi": a pi session file. It holds the whole tree, every entry kept; the leaf
///   is written last, where pi resumes.
/// - "claude-code": a Claude Code transcript, resumed with claude --resume and the
///   sessionId its lines carry.
/// - "codex": a Codex rollout, resumed with codex resume and the id of its
///   session_meta line.
///
/// Claude Code and Codex resume one linear history and apply their own rules to
/// it. Their file holds what that agent sends for the leaf: the messages of
/// session_build_context with the profile of that agent, each as the line the
/// agent writes. A compaction becomes a Claude Code compact boundary and its
/// summary line, or a Codex compacted line whose replacement history is the
/// summary message, the other items after it.
///
/// What the agent's format cannot carry is converted or left out, and listed in
/// the report:
///
/// - A message of a role the agent lacks (pi's custom, branchSummary,
///   bashExecution; Codex's developer for Claude Code) is sent as user text, after
///   the results of the tool calls pending before it.
/// - A thinking block becomes, for Codex, a reasoning item with the text as its
///   summary. For Claude Code, one without a signature is left out (Claude Code
///   sends none).
/// - An error flag on a result is not carried to Codex.
/// - A Codex item with no Claude Code equivalent (a web or tool search) is left out
///   for Claude Code.
/// - Metadata, labels, other branches and messages before the compaction are not
///   written.
///
/// The session's id is the source's (a Claude Code sessionId, a Codex or pi session
/// id) when it is a UUID; else it is a UUID made from the first message's entry id.
/// Line ids are the entry ids where the format has them.
///
/// options_json is NULL or {"leaf": id, "redact": bool, "rules": "default" |
/// [{"name","pattern"}…], "extraRules": [{"name","pattern"}…], "allow":
/// [string…]}. leaf is the leaf to resume (default: the latest leaf). Secrets are
/// redacted by default: every line written has the secrets in its strings replaced
/// by [REDACTED:<rule>], as session_redact does. Ids, parent ids, tool call ids
/// and the agents' own ids (such as uuid, parentUuid, tool_use_id and call_id)
/// never change. "redact": false writes the secrets as they are. rules, extraRules
/// and allow choose the rules as for session_secrets; with "redact": false they are
/// refused. An unknown member, or an invalid rule, is SESSION_ERR_INVALID_ARGUMENT.
///
/// The report is {"format":NAME,"entries":N,"converted":[{"kind","count",
/// "reason"}…],"dropped":[{"kind","count","reason"}…],"redactions":N}. entries is
/// the number of lines written (a header line included); redactions the number of
/// secrets replaced. kind names what was changed (metadata, label, branch, message,
/// compaction, role:ROLE, block:TYPE, thinking, toolResult.isError, order,
/// codexItem:TYPE, compaction.summary); count says how many, and reason why, in a
/// sentence.
///
/// out_path must not exist: an export never overwrites a file. The text is written
/// into a temporary file beside it, with permissions no wider than the source's (a
/// 0600 source gives a 0600 file). That file is synced, then renamed to out_path
/// unless out_path exists by then. On any failure nothing is left at out_path. The
/// source is opened read-only and may have a writer.
///
/// Returns SESSION_OK, or:
///
/// - SESSION_ERR_INVALID_ARGUMENT, with argument naming it: a NULL or non-UTF-8
///   string, a format other than the three, bad options.
/// - SESSION_ERR_UNKNOWN_LEAF when no entry has the leaf's id.
/// - SESSION_ERR_IO when the source cannot be read, or the output cannot be created
///   or written (it exists already: op "open", OS error 17).
/// - The statuses of opening a session file (SESSION_ERR_CORRUPT_LINE, …).
/// - For claude-code and codex, the statuses of session_build_context for the leaf
///   under that agent's profile (SESSION_ERR_INVALID_COMPACTION,
///   SESSION_ERR_TOOL_PAIRING for a duplicate call).
/// - SESSION_ERR_INTERNAL.
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
