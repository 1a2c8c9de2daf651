//! The C function of the session view (docs/contract.md §8): the store as one
//! self-contained HTML page.

use std::ffi::c_char;

use super::SessionStore;
use super::boundary::{guard_store, options_arg};
use super::status::SessionStatus;
use crate::view::{ViewOptions, render_html};

/// Section 9. View: a store as one HTML page.
///
/// The store as one self-contained HTML document, UTF-8: the tree (branches,
/// labels, the latest leaf) and the messages of the chosen leaf's branch; any node
/// can be chosen in the page, and a search box filters the branch.
///
/// The page works offline: its style and script are inlined, and its
/// Content-Security-Policy forbids every load (default-src 'none'; the inline
/// script and style allowed by their SHA-256 hashes; images only as data: URLs).
/// Text from the session is data, never markup or script: the entries are embedded
/// as JSON with every <, >, &, U+2028 and U+2029 escaped, and the page builds its
/// elements from text; links are kept only for http and https URLs. From 256 KiB of
/// entries on, they are embedded deflated (zlib, base64) and the page inflates them
/// with the browser's DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 and
/// later): the page is then a sixth to a twelfth of the session's size for most
/// sessions. The page renders lazily (the tree as a virtual list, the branch a chunk
/// at a time).
///
/// options_json (NULL: the defaults) is {"leaf":"id", "title":"text", "redact":
/// bool}, every member optional: the leaf whose branch the page opens on (default:
/// the latest leaf, the last committed entry), the page's title (default
/// "Session"), and whether secrets in the entries are replaced by
/// [REDACTED:<rule>] as session_redact does with its default rules (default true: a
/// page is made to be shared; false shows them). From 256 KiB of entries on, the
/// call redacts them on a second thread that it starts and joins before it returns,
/// while the calling thread deflates what is redacted; the page is the same bytes as
/// on one thread, and if no thread can be started the calling thread redacts alone.
/// The entries, labels and latest leaf are read in one turn (one snapshot). Cost: the
/// size of the store.
///
/// Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id) for an unknown leaf;
/// SESSION_ERR_INVALID_ARGUMENT (NULL store; options that are not a JSON object, an
/// unknown member or a wrong type: argument is options_json);
/// SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, SESSION_ERR_INTERNAL.
///
/// Ownership: options_json is borrowed for the call. out_html may be NULL;
/// otherwise *out_html is always set, to the page or to {"error":{…}}, and the
/// caller frees it with session_string_free. Thread-safe (not concurrently with
/// session_store_close).
///
/// Safety: store is NULL or an open store; options_json is NULL or NUL-terminated;
/// out_html is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_render_html(
    store: *mut SessionStore,
    options_json: *const c_char,
    out_html: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe {
        guard_store(store, out_html, |store| {
            // SAFETY: the caller guarantees `options_json` is NULL or NUL-terminated.
            let options = options_arg(options_json, ViewOptions::from_json)?;
            Ok(render_html(store, &options)?.into_bytes())
        })
    }
}
