//! The panic boundary and the pointer conversions every exported function shares.

use std::any::Any;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use super::SessionStore;
use super::errors::FfiError;
use super::status::*;
use crate::error::Error;
use crate::store::{OpenReport, State, Store};

/// Runs f with panics caught, then writes its JSON (or the error JSON) to
/// *out_json and returns the status.
///
/// Safety: out_json is NULL or valid for a write of one pointer.
pub(crate) unsafe fn guard(
    out_json: *mut *mut c_char,
    f: impl FnOnce() -> Result<Vec<u8>, FfiError>,
) -> SessionStatus {
    let result = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p)));
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe { finish(out_json, result) }
}

/// [guard] for an operation on a store: a NULL store is an invalid argument, a
/// poisoned store reports its poisoning, and a panic poisons the store.
///
/// Safety: store is NULL or a live store from this library; out_json is NULL or writable.
pub(crate) unsafe fn guard_store(
    store: *const SessionStore,
    out_json: *mut *mut c_char,
    f: impl FnOnce(&Store) -> Result<Vec<u8>, FfiError>,
) -> SessionStatus {
    // SAFETY: the caller guarantees `store` is NULL or a live store, shared for the call.
    let Some(handle) = (unsafe { store.as_ref() }) else {
        // SAFETY: the caller guarantees `out_json` is NULL or writable.
        return unsafe { finish(out_json, Err(null_argument("store"))) };
    };
    let result = match handle.poisoned.get() {
        Some(cause) => Err(FfiError::Poisoned(cause.clone())),
        None => catch_unwind(AssertUnwindSafe(|| f(&handle.store))).unwrap_or_else(|p| {
            let error = panic_error(p);
            poison(&handle.poisoned, &error);
            Err(error)
        }),
    };
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe { finish(out_json, result) }
}

fn poison(poisoned: &OnceLock<std::sync::Arc<str>>, error: &FfiError) {
    // Only the first panic is the cause; later ones cannot happen (calls stop here).
    let _ = poisoned.set(error.cause_object());
}

/// Writes the outcome and returns its status.
///
/// Safety: out_json is NULL or writable.
unsafe fn finish(out_json: *mut *mut c_char, result: Result<Vec<u8>, FfiError>) -> SessionStatus {
    let (status, text) = match result {
        Ok(text) => (SESSION_OK, text),
        Err(e) => (e.status(), e.to_json().into_bytes()),
    };
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe { write_out(out_json, text) };
    status
}

/// Sets *out_json (when not NULL) to a new C string owned by the caller.
///
/// Safety: out_json is NULL or writable.
unsafe fn write_out(out_json: *mut *mut c_char, mut text: Vec<u8>) {
    if out_json.is_null() {
        return;
    }
    // Our JSON never holds a raw NUL (JSON escapes it); check anyway, with the
    // vectorised memchr (results can be tens of megabytes), and fall back to a fixed
    // error object rather than panic if it ever did.
    let c = if memchr::memchr(0, &text).is_none() {
        text.push(0);
        // SAFETY: `text` was just checked to hold no NUL, and now ends with one.
        unsafe { CString::from_vec_with_nul_unchecked(text) }
    } else {
        CString::from(c"{\"error\":{\"code\":\"internal\",\"message\":\"result held a NUL byte\"}}")
    };
    // SAFETY: `out_json` is non-NULL and the caller guarantees it is writable.
    unsafe { *out_json = c.into_raw() };
}

/// Frees a string made by [write_out].
///
/// Safety: s is NULL or a string from [write_out] not freed yet.
pub(crate) unsafe fn free_string(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    // SAFETY: `s` came from `CString::into_raw` and is freed only once (caller's promise).
    drop(unsafe { CString::from_raw(s) });
}

fn null_argument(name: &'static str) -> FfiError {
    FfiError::Argument {
        name,
        problem: "is NULL",
    }
}

/// Borrows a C string argument as UTF-8.
///
/// Safety: p is NULL or a NUL-terminated string that outlives the call.
pub(crate) unsafe fn str_arg<'a>(
    p: *const c_char,
    name: &'static str,
) -> Result<&'a str, FfiError> {
    if p.is_null() {
        return Err(null_argument(name));
    }
    // SAFETY: `p` is non-NULL and NUL-terminated (caller's promise), and lives for the call.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| FfiError::Argument {
        name,
        problem: "is not valid UTF-8",
    })
}

/// Borrows a byte range argument; (NULL, 0) is empty.
///
/// Safety: p is NULL or points to len readable bytes that outlive the call.
pub(crate) unsafe fn bytes_arg<'a>(
    p: *const u8,
    len: usize,
    name: &'static str,
) -> Result<&'a [u8], FfiError> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null_argument(name));
    }
    if len > isize::MAX as usize {
        return Err(FfiError::Argument {
            name,
            problem: "has a length beyond isize::MAX",
        });
    }
    // SAFETY: `p` is non-NULL with `len` readable bytes (caller's promise); `len` fits
    // in isize.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Options from options_json, parsed by `parse`; NULL means the defaults.
///
/// Safety: options_json is NULL or NUL-terminated.
pub(crate) unsafe fn options_arg<T: Default>(
    options_json: *const c_char,
    parse: impl FnOnce(&str) -> Result<T, Error>,
) -> Result<T, FfiError> {
    if options_json.is_null() {
        return Ok(T::default());
    }
    // SAFETY: non-NULL and NUL-terminated (caller's promise).
    let text = unsafe { str_arg(options_json, "options_json") }?;
    Ok(parse(text)?)
}

/// [guard_store] for a query whose answer is a JSON text.
///
/// Safety: as [guard_store].
pub(crate) unsafe fn guard_store_text(
    store: *const SessionStore,
    out_json: *mut *mut c_char,
    query: impl FnOnce(&Store) -> Result<String, Error>,
) -> SessionStatus {
    // SAFETY: as the caller guarantees.
    unsafe { guard_store(store, out_json, |store| Ok(query(store)?.into_bytes())) }
}

/// Every function that opens a store does it this way: *out_store is NULL on any
/// failure; `args` reads the arguments; a NULL out_store is refused next, before
/// anything is created or connected; `open` opens the store from the arguments; the
/// store goes to *out_store and its report to *out_json.
///
/// Safety: out_store and out_json are NULL or writable; `args` reads only pointers
/// that its caller guarantees.
pub(crate) unsafe fn open_store<A>(
    out_store: *mut *mut SessionStore,
    out_json: *mut *mut c_char,
    args: impl FnOnce() -> Result<A, FfiError>,
    open: impl FnOnce(A) -> Result<(Store, OpenReport), Error>,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` and `out_store` are NULL or writable.
    unsafe {
        guard(out_json, || {
            clear_store(out_store);
            let args = args()?;
            if out_store.is_null() {
                return Err(null_argument("out_store"));
            }
            let (store, report) = open(args)?;
            set_store(out_store, store)?;
            Ok(report.to_json().into_bytes())
        })
    }
}

/// Sets *out_store to NULL when it is not NULL (the state on failure).
///
/// Safety: out_store is NULL or writable.
pub(crate) unsafe fn clear_store(out_store: *mut *mut SessionStore) {
    if !out_store.is_null() {
        // SAFETY: non-NULL and writable (caller's promise).
        unsafe { *out_store = std::ptr::null_mut() };
    }
}

/// Moves store to the heap and hands it to the caller through out_store.
///
/// Safety: out_store is NULL or writable.
pub(crate) unsafe fn set_store(
    out_store: *mut *mut SessionStore,
    store: Store,
) -> Result<(), FfiError> {
    if out_store.is_null() {
        return Err(null_argument("out_store"));
    }
    let handle = Box::new(SessionStore {
        store,
        poisoned: OnceLock::new(),
    });
    // SAFETY: non-NULL and writable (caller's promise); the caller now owns the box.
    unsafe { *out_store = Box::into_raw(handle) };
    Ok(())
}

/// The state of a store handle; NULL reads as tainted.
///
/// Safety: store is NULL or a live store.
pub(crate) unsafe fn store_state(store: *const SessionStore) -> SessionState {
    // SAFETY: NULL or a live store (caller's promise), shared for the call.
    let Some(handle) = (unsafe { store.as_ref() }) else {
        return SESSION_STATE_TAINTED;
    };
    if handle.poisoned.get().is_some() {
        return SESSION_STATE_TAINTED;
    }
    match handle.store.state() {
        State::Ready => SESSION_STATE_READY,
        State::NeedsRepair => SESSION_STATE_NEEDS_REPAIR,
        State::Tainted => SESSION_STATE_TAINTED,
    }
}

/// Frees a store handle; a panic while dropping it is caught.
///
/// Safety: store is NULL or a live store that nothing else uses, now or later.
pub(crate) unsafe fn close_store(store: *mut SessionStore) {
    if store.is_null() {
        return;
    }
    // SAFETY: the caller hands over the last reference to a box made by `set_store`.
    let handle = unsafe { Box::from_raw(store) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(handle)));
}

fn panic_error(payload: Box<dyn Any + Send>) -> FfiError {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    FfiError::Panic(format!(
        "libsession panicked (a bug; please report it): {detail}"
    ))
}
