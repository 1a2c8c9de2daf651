//! The C functions of docs/contract.md §7 and §9 that build a context: over an
//! array of entries and through a store.

use std::ffi::{CString, c_char, c_void};

use super::SessionStore;
use super::boundary::{guard, guard_store, options_arg, str_arg};
use super::status::SessionStatus;
use crate::context::{self, ContextOptions};
use crate::entry::{ParseOptions, parse_entries_with};

/// A host's token estimator for session_store_build_context: returns the cost in
/// tokens of one message, given its normalised JSON (message_json, NUL-terminated,
/// len bytes without the NUL, valid only during the call) and the user_data given
/// to session_store_build_context. A negative, NaN or infinite result fails the
/// build with SESSION_ERR_INVALID_ARGUMENT naming the message's entry (entryId).
///
/// It is called on the thread that called session_store_build_context, never after
/// that call returns, inside the store's FIFO turn: it must not call the same store
/// (that would deadlock), and must not unwind (a C++ exception) or longjmp out.
pub type SessionTokenEstimator = Option<
    unsafe extern "C" fn(message_json: *const c_char, len: usize, user_data: *mut c_void) -> f64,
>;

/// Section 5. Context: what the model sees for a leaf.
///
/// What the model should see for leaf_id (docs/contract.md §7), over entries_json,
/// a JSON array of entries in any order. Tokens are counted with the default
/// estimator: a quarter of the bytes of each message's normalised JSON, rounded up.
///
/// P is the path to leaf_id. C is the compaction on P nearest the leaf; earlier
/// ones are ignored. The kept messages are:
///
/// - every message of P, when there is no C;
/// - the messages after C, when its firstKeptEntryId is null;
/// - else the messages from firstKeptEntryId to the leaf.
///
/// They are split into interactions: one starts at the first kept message and at
/// every user message. They are checked for tool-call pairing. The result is one
/// JSON object, members in this order:
///
/// {"leafId":…,"compaction":{"id","firstKeptEntryId","tokensBefore","summary",
/// "details"?}|null,"messages":[…],"keptEntryIds":[…],"interactions":[{"start",
/// "count","firstEntryId","cutPoint","tokens"?}…],"metadata":{…},"budget":{…}|null,
/// "skipped":[…],"defects":[…]}
///
/// - messages starts with a synthetic user message that holds the summary when
///   there is a C (unless summaryMessage is false). The kept messages follow,
///   byte-identical to session_messages_on_path.
/// - keptEntryIds is aligned with the messages after the summary; it is null for a
///   synthesized result.
/// - metadata is the last value of each key not under session., over the whole of
///   P, in first-set order.
/// - skipped and defects list {interactionStartId, entryId, toolCallId, reason}.
///   A defect answered by a synthesized result adds "action":"synthesized"; a
///   result a profile left out adds "action":"dropped".
///
/// options_json is a JSON object; NULL means the defaults, and an unknown member is
/// SESSION_ERR_INVALID_ARGUMENT. Its members:
///
/// - "onDefect": what a pairing defect does. "error" (default) fails the call.
///   "skip" drops each defective interaction whole and lists it in skipped. "keep"
///   keeps them and lists the defects in defects. "synthesize" answers each tool
///   call that has no result, and lists it in defects; any other defect fails as
///   with "error". The answer is {"role":"toolResult","toolCallId","toolName",
///   "content":[one text block],"isError":true,"timestamp","synthetic":true}. It is
///   placed after the last assistant message of the reply that holds the call, with
///   the timestamp of the message that holds it.
/// - "synthesizedText": the text of a synthesized result (default "aborted").
/// - "budget": {"maxTokens":N,"reservedOutput":N,"safetyMargin":N}, each a finite
///   number >= 0; the last two default to 0. Interactions are kept from the newest
///   backwards while they fit beside the summary; the newest always stays. budget
///   then reports available, used, reason (within_budget, trimmed,
///   single_interaction_overflow), droppedInteractions and
///   suggestedFirstKeptEntryId. Token sums saturate at DBL_MAX, and available at
///   -DBL_MAX, so the output is always JSON. Numbers from 1e21 up are written with
///   an exponent.
/// - "summaryMessage" (default true); "summaryPrefix" and "summarySuffix", the text
///   around the summary (default empty).
/// - "strictRoles" (default false): reject extension roles and blocks.
/// - "profile": whose rules build the messages. "auto" (the default) takes the
///   agent an imported session came from, named by its root's importedFormat, and
///   none for a native session. "none" applies no agent's rules, whatever the
///   origin. "pi", "claude-code" or "codex": the messages are what that agent sends
///   for the leaf.
///
/// What each agent sends:
///
/// - pi leaves out assistant messages stopped with "error" or "aborted". It answers
///   a call without a result with "No result provided", after the results of its
///   reply.
/// - Claude Code merges the parts of a reply that share a responseId into one
///   message, its results after it (parts and results it hung off the path are
///   taken back). It leaves out whitespace-only replies, and replies whose calls
///   have no result ("action":"dropped"). It sends "No response requested." after a
///   conversation that ends on the user's side, and old Task calls as Agent.
/// - Codex answers a call without an output with "aborted", right after it. It
///   drops an output without a call ("action":"dropped"), and pairs tool searches
///   the same way. It sends a compaction's replacement history in place of its
///   summary. At a compaction without one, it sends the history Codex rebuilds
///   there, as one interaction: the user messages before it, then the summary. Those
///   user messages are text only, newest first while they fit in 20,000 tokens of 4
///   bytes; the one that does not fit is shortened as Codex shortens it; Codex's own
///   context messages are left out.
///
/// A profile applies only while onDefect is "error". Other defects are then kept.
/// The compaction's own cut is taken even when it is not an interaction start or
/// leaves a call pending, as those agents take it.
///
/// Returns SESSION_OK, or, in this order:
///
/// - SESSION_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 string, bad options);
/// - SESSION_ERR_INVALID_JSON, SESSION_ERR_INVALID_ENTRY, SESSION_ERR_DUPLICATE_ID;
/// - SESSION_ERR_UNKNOWN_LEAF;
/// - SESSION_ERR_MISSING_PARENT, SESSION_ERR_CYCLE;
/// - SESSION_ERR_INVALID_COMPACTION (compactionId, firstKeptEntryId, reason);
/// - SESSION_ERR_TOOL_PAIRING (entryId, toolCallId, reason, interactionStartId).
///
/// The message of a tool pairing error ends with the option that would build the
/// context. For a session imported from an agent and built without its rules
/// ("profile":"none", or onDefect other than "error"), that is "profile":"auto"
/// with onDefect "error". For a native session, it is onDefect. Take an invalid
/// compaction that the agent's profile would take (not_interaction_start,
/// pending_tool_calls) on such an imported session: its message names
/// "profile":"auto" the same way.
///
/// Ownership: the strings are borrowed for the call. out_json may be NULL;
/// otherwise *out_json is always set, to the result or to {"error":{…}}, and the
/// caller frees it with session_string_free. Thread-safe.
///
/// Safety: entries_json, leaf_id and options_json are NULL or NUL-terminated;
/// out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_build_context(
    entries_json: *const c_char,
    leaf_id: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees the strings are NULL or NUL-terminated.
            let options = options_arg(options_json, ContextOptions::from_json)?;
            // SAFETY: as above.
            let (text, leaf) = (
                str_arg(entries_json, "entries_json")?,
                str_arg(leaf_id, "leaf_id")?,
            );
            let parse = ParseOptions {
                strict_roles: options.strict_roles,
            };
            let entries = parse_entries_with(text, parse)?;
            let built = context::build_context(&entries, leaf, &options)?;
            Ok(built.to_json_bytes())
        })
    }
}

/// session_build_context through the store's own index, for leaf_id: the cost
/// grows with what the context keeps, not with the path or the store. It reads the
/// path from leaf_id back to the first entry the latest compaction keeps (the
/// whole path when there is none, or under strictRoles), the path's root, and the
/// path's metadata entries, each linked to the one above it; the result is the
/// same as session_build_context over session_store_entries. Joins the store's
/// FIFO like every read; a needs_repair store builds from its committed prefix.
///
/// estimate (NULL for the default estimator) is called only when the options give a
/// budget: exactly once per kept message that remains after skips, and once for the
/// summary message, each time with that message's normalised JSON and user_data
/// (passed through untouched, may be NULL). See SessionTokenEstimator for its
/// contract; a negative or non-finite result fails the call with
/// SESSION_ERR_INVALID_ARGUMENT (argument "estimate", entryId).
///
/// Returns as session_build_context (without the entries-array errors), plus
/// SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, and SESSION_ERR_INVALID_ENTRY
/// for an extension entry on the path under strictRoles.
///
/// Ownership as session_build_context. Thread-safe; the estimator runs on the
/// calling thread.
///
/// Safety: store is NULL or an open store; leaf_id and options_json are NULL or
/// NUL-terminated; estimate is NULL or a function that honours
/// SessionTokenEstimator's contract; out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_build_context(
    store: *mut SessionStore,
    leaf_id: *const c_char,
    options_json: *const c_char,
    estimate: SessionTokenEstimator,
    user_data: *mut c_void,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `store` is NULL or open and `out_json` NULL or
    // writable.
    unsafe {
        guard_store(store, out_json, |store| {
            // SAFETY: the caller guarantees the strings are NULL or NUL-terminated.
            let options = options_arg(options_json, ContextOptions::from_json)?;
            // SAFETY: as above.
            let leaf = str_arg(leaf_id, "leaf_id")?;
            let built = match estimate {
                None => store.build_context(leaf, &options, None)?,
                Some(estimate) => {
                    let mut call = |message: &str| {
                        let text = CString::new(message)
                            .map_err(|_| "the message holds a NUL byte".to_owned())?;
                        // SAFETY (inherited unsafe block): `text` is NUL-terminated and
                        // lives for the call; the caller guarantees `estimate` honours
                        // its contract with its own `user_data`.
                        Ok(estimate(text.as_ptr(), message.len(), user_data))
                    };
                    store.build_context(leaf, &options, Some(&mut call))?
                }
            };
            Ok(built.to_json_bytes())
        })
    }
}
