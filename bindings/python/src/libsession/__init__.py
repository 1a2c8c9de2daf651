"""libsession: an append-only session tree for AI coding agents, stored as JSONL.

A Python binding of libsession's C ABI (``include/session.h``) through cffi: the wheel
bundles ``libsession.so`` and this module opens it with ``ffi.dlopen``. Results are
Python objects (``json.loads`` of the library's JSON), or the JSON text with
``raw=True``. Errors are exceptions: :class:`SessionError` and one subclass per status
code (``NeedsRepair``, ``Tainted``, ``Locked``, ...), made at import from the library's
own ``session_status_name``, so a status added to the library needs no change here.

    import libsession

    with libsession.Store.open("s.jsonl") as store:
        seq = store.append({"id": "u-1", "parentId": None, "timestamp": 1,
                            "type": "message",
                            "message": {"role": "user", "content": "hi"}})
        store.messages_on_path("u-1")   # [{'role': 'user', 'content': 'hi'}]

A :class:`Store` may be used from many threads at once (the library serialises appends
in arrival order). :meth:`Store.close` waits for the calls in flight on other threads;
calls after it raise :class:`StoreClosedError`.
"""

import json
import math
import os
import threading
import weakref

from cffi import FFI, CDefError

__all__ = [
    "Store",
    "SessionError",
    "StoreClosedError",
    "error_class",
    "status_name",
    "library_version",
    "parse_entry",
    "path_to",
    "messages_on_path",
    "recover_jsonl",
    "repair",
    "build_context",
    "list_sessions",
    "search",
    "export",

    "secrets",
    "redact",
    "STATUS",
]

_HERE = os.path.dirname(os.path.abspath(__file__))

ffi = FFI()
try:
    with open(os.path.join(_HERE, "_session_cdef.h"), encoding="utf-8") as _f:
        ffi.cdef(_f.read())
except FileNotFoundError:
    raise ImportError(
        "libsession is being imported from its source folder, which has no built library: "
        "install it (pip install ./bindings/python) and import it from elsewhere"
    ) from None
lib = ffi.dlopen(os.path.join(_HERE, "libsession.so"))

_NULL = ffi.NULL


def library_version():
    """The version of the bundled libsession (``session_version``)."""
    return ffi.string(lib.session_version()).decode("ascii")


__version__ = library_version()


def status_name(status):
    """The stable name of a status code (``"missing_parent"``, ...; ``"unknown"``)."""
    return ffi.string(lib.session_status_name(status)).decode("ascii")


# ---------------------------------------------------------------------------------------
# Errors


class SessionError(Exception):
    """A libsession call failed.

    ``status`` is the C status code, ``code`` its stable name, ``message`` the library's
    message, ``details`` the other members of the error object (``pointer``, ``line``,
    ``childId``, ``parentId``, ``cause``, ...), ``json`` the error JSON text as the
    library returned it. For ``tainted``, ``cause`` is the original error as a
    :class:`SessionError` (``details["cause"]`` is the same object as a dict).
    """

    status = None
    code = None

    def __init__(self, status, code, message, details=None, json_text=None):
        super().__init__(status, code, message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details if details is not None else {}
        self.json = json_text
        cause = self.details.get("cause")
        self.cause = _error_from_object(cause, None) if isinstance(cause, dict) else None

    def __str__(self):
        extra = {k: v for k, v in self.details.items() if k != "cause"}
        text = "%s: %s" % (self.code, self.message)
        if extra:
            text += " " + json.dumps(extra, ensure_ascii=False, sort_keys=True)
        if self.cause is not None:
            text += " (cause: %s)" % self.cause
        return text

    def __reduce__(self):
        return (_rebuild_error, (self.status, self.code, self.message, self.details, self.json))


def _rebuild_error(status, code, message, details, json_text):
    return error_class(status, code)(status, code, message, details, json_text)


class StoreClosedError(ValueError):
    """A call on a :class:`Store` after :meth:`Store.close` (a usage error, like I/O on a
    closed file; not a library status)."""


def _class_name(code):
    return "".join(part[:1].upper() + part[1:] for part in code.split("_") if part)


_CLASSES = {}  # status -> subclass of SessionError
STATUS = {}  # name -> status code, for every status the library knows


def error_class(status, code=None):
    """The exception class for a status (made on first use for a status that the
    library did not name at import, from ``code``)."""
    cls = _CLASSES.get(status)
    if cls is None:
        code = code or status_name(status)
        cls = type(
            _class_name(code) if code != "unknown" else "Status%d" % status,
            (SessionError,),
            {
                "status": status,
                "code": code,
                "__module__": __name__,
                "__doc__": "libsession status %d, %r." % (status, code),
            },
        )
        _CLASSES[status] = cls
    return cls


def _register_statuses():
    # Status values are stable and only appended to; the library names each one.
    for status in range(1, 256):
        code = status_name(status)
        if code == "unknown":
            continue
        STATUS[code] = status
        cls = error_class(status, code)
        globals()[cls.__name__] = cls
        __all__.append(cls.__name__)


_register_statuses()


def _error_from_object(obj, json_text):
    code = obj.get("code", "unknown")
    status = STATUS.get(code, -1)
    details = {k: v for k, v in obj.items() if k not in ("code", "message")}
    return error_class(status, code)(status, code, obj.get("message", ""), details, json_text)


def _error(status, text):
    try:
        obj = json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        obj = {"code": status_name(status), "message": text or ""}
    code = obj.get("code") or status_name(status)
    details = {k: v for k, v in obj.items() if k not in ("code", "message")}
    return error_class(status, code)(status, code, obj.get("message", ""), details, text)


# ---------------------------------------------------------------------------------------
# Marshalling


def _c_text(value, what):
    """A str/bytes argument as NUL-free UTF-8 bytes for a `const char *`."""
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError("%s must be str or bytes, not %s" % (what, type(value).__name__))
    if b"\0" in data:
        raise ValueError("%s contains a NUL character" % what)
    return data


def _json_arg(value, what):
    """A JSON argument: text (str/bytes) is passed as it is, anything else is dumped."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return _c_text(value, what)
    return _c_text(json.dumps(value, ensure_ascii=False, allow_nan=False), what)


def _options(options):
    """An options object without the members left at None (the library's defaults)."""
    options = {k: v for k, v in options.items() if v is not None}
    if not options:
        return _NULL
    return json.dumps(options, allow_nan=False).encode("utf-8")


def _path_arg(path, what="path"):
    data = os.fsencode(path)
    if b"\0" in data:
        raise ValueError("%s contains a NUL character" % what)
    return data


def _take(out):
    """The string a call returned through out_json, freed exactly once."""
    ptr = out[0]
    if ptr == _NULL:
        return None
    try:
        return ffi.string(ptr).decode("utf-8")
    finally:
        lib.session_string_free(ptr)


def _finish(status, out, raw):
    text = _take(out)
    if status != 0:
        raise _error(status, text)
    return text if raw else json.loads(text)


def _call(fn, raw, *args):
    out = ffi.new("char **")
    status = fn(*args, out)
    return _finish(status, out, raw)


# ---------------------------------------------------------------------------------------
# Pure functions


def parse_entry(entry, *, raw=False):
    """Validates one entry (dict or JSON text) and returns it normalised."""
    return _call(lib.session_parse_entry, raw, _json_arg(entry, "entry"))


def path_to(entries, leaf, *, raw=False):
    """The entries from the root to ``leaf`` over ``entries`` (a list or JSON array)."""
    return _call(lib.session_path_to, raw, _json_arg(entries, "entries"), _c_text(leaf, "leaf"))


def messages_on_path(entries, leaf, *, raw=False):
    """The complete messages on the path to ``leaf`` (metadata skipped)."""
    return _call(
        lib.session_messages_on_path, raw, _json_arg(entries, "entries"), _c_text(leaf, "leaf")
    )


def recover_jsonl(data, *, raw=False):
    """What JSONL bytes commit: ``{"entries": [...], "warnings": [...]}``. Pure."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    return _call(lib.session_recover_jsonl, raw, data, len(data))


def repair(path, *, raw=False):
    """Moves an unterminated tail of the file to a backup and cuts the file to its
    committed lines: ``{"truncatedBytes": N, "backup": path | None, "entries": M}``."""
    return _call(lib.session_jsonl_repair, raw, _path_arg(path))


def _context_options(
    budget, on_defect, summary_message, summary_prefix, summary_suffix, strict_roles, synthesized_text=None, profile=None
):
    if budget is not None and not isinstance(budget, dict):
        budget = {"maxTokens": budget}
    return _options(
        {
            "budget": budget,
            "onDefect": on_defect,
            "summaryMessage": summary_message,
            "summaryPrefix": summary_prefix,
            "summarySuffix": summary_suffix,
            "strictRoles": strict_roles,
            "synthesizedText": synthesized_text,
            "profile": profile,
        }
    )


def build_context(
    entries,
    leaf,
    *,
    budget=None,
    on_defect=None,
    summary_message=None,
    summary_prefix=None,
    summary_suffix=None,
    strict_roles=None,
    synthesized_text=None,
    profile=None,
    raw=False,
):
    """What the model should see for ``leaf`` over ``entries`` (the pure form; the
    default estimator). ``budget`` is a number (``maxTokens``) or the budget object
    ``{"maxTokens", "reservedOutput", "safetyMargin"}``; ``on_defect`` is ``"error"``,
    ``"skip"``, ``"keep"`` or ``"synthesize"`` (each unanswered call gets an error result
    whose text is ``synthesized_text``, ``"aborted"`` by default). ``profile`` is
    ``"auto"`` (the library's default, used when it is None: the agent an imported
    session came from, none for a native one), ``"none"`` (no agent's rules), ``"pi"``,
    ``"claude-code"`` or ``"codex"``: the messages that agent sends when it resumes the
    session."""
    options = _context_options(
        budget, on_defect, summary_message, summary_prefix, summary_suffix, strict_roles, synthesized_text, profile
    )
    return _call(
        lib.session_build_context, raw, _json_arg(entries, "entries"), _c_text(leaf, "leaf"), options
    )


def list_sessions(directory, *, recursive=None, limit=None, sort=None, raw=False):
    """One record per ``*.jsonl`` file of ``directory``: ``{"sessions": [...]}``."""
    options = _options({"recursive": recursive, "limit": limit, "sort": sort})
    return _call(lib.session_list_sessions, raw, _path_arg(directory, "directory"), options)


def search(directory, query, *, limit=None, roles=None, latest_path_only=None, raw=False):
    """The hits of ``query`` in the ``*.jsonl`` sessions of ``directory``, best first:
    ``{"hits": [{"path", "entryId", "seq", "role", "timestamp", "snippet", "score",
    "onLatestPath"}, ...], "sessions", "entries", "errors", "bytesRead", "index"}``.
    Every word of ``query`` must occur (a substring, in any case; CJK matches inside
    words); at most 1 MiB and 256 different words. The index,
    ``directory/.session-search.db``, is brought up to date first, reading only what was
    appended since the last search; ``"index"`` is ``"temporary"`` when it could not be
    used (a folder the caller may only read) and a temporary one answered."""
    request = {"query": query, "limit": limit, "roles": roles, "latestPathOnly": latest_path_only}
    request = {k: v for k, v in request.items() if v is not None}
    query_json = json.dumps(request, allow_nan=False).encode("utf-8")
    return _call(lib.session_search, raw, _path_arg(directory, "directory"), query_json)


def export(format, src, out, *, leaf=None, redact=None, raw=False):
    """Writes the session file ``src`` as a new file ``out`` that another agent resumes
    at ``leaf`` (default: the latest leaf). ``format`` is ``"pi"`` (the whole tree),
    ``"claude-code"`` or ``"codex"`` (what that agent sends for the leaf, as lines it
    resumes). Secrets are replaced by ``[REDACTED:<rule>]`` (ids never change) unless
    ``redact`` is ``False``. Returns the report ``{"format", "entries", "converted":
    [{"kind", "count", "reason"}, ...], "dropped": [...], "redactions": N}``. ``out``
    must not exist; the file is no wider in mode than ``src``."""
    options = _options({"leaf": leaf, "redact": redact})
    return _call(
        lib.session_export, raw, _c_text(format, "format"), _path_arg(src, "src"), _path_arg(out, "out"), options
    )

def _secrets_options(rules, extra_rules, allow, in_place=None):
    options = {"rules": rules, "extraRules": extra_rules, "allow": allow, "inPlace": in_place}
    options = {k: v for k, v in options.items() if v is not None}
    return json.dumps(options, allow_nan=False).encode("utf-8")


def secrets(path, *, rules=None, extra_rules=None, allow=None, raw=False):
    """The secrets (API keys, tokens, private keys, passwords) in the session file
    ``path``, or in the ``*.jsonl`` files of the folder ``path``: ``{"findings": [{"path",
    "entryId", "pointer", "rule", "fingerprint"}, ...], "sessions": N}``, never a secret
    itself. ``rules`` (a list of ``{"name", "pattern"}``) replaces the built-in rules,
    ``extra_rules`` adds to them, ``allow`` lists values never reported."""
    options = _secrets_options(rules, extra_rules, allow)
    return _call(lib.session_secrets, raw, _path_arg(path), options)


def redact(src, dst=None, *, in_place=False, rules=None, extra_rules=None, allow=None, raw=False):
    """Writes ``src`` with each secret replaced by ``[REDACTED:<rule>]`` to ``dst``, a new
    file, every other byte unchanged; with ``dst`` None and ``in_place=True``, rewrites
    ``src`` under the writer's lock. Returns ``{"redactions": N, "findings": [...]}``."""
    options = _secrets_options(rules, extra_rules, allow, True if in_place else None)
    target = _NULL if dst is None else _path_arg(dst, "dst")
    return _call(lib.session_redact, raw, _path_arg(src, "src"), target, options)


# ---------------------------------------------------------------------------------------
# Stores

_STATES = {0: "ready", 1: "needs_repair", 2: "tainted"}

# The store whose estimator is running on this thread: a call on that store from inside
# the estimator would wait for itself in the store's FIFO.
_tls = threading.local()


class _Handle:
    """The C store and the count of calls in flight on it. The finalizer holds this, not
    the Store, so that it can close a Store that is being collected."""

    __slots__ = ("ptr", "lock", "idle", "inflight", "closed", "pid")

    def __init__(self, ptr):
        self.ptr = ptr
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)  # notified when a closing store drains
        self.inflight = 0
        self.closed = False
        self.pid = os.getpid()

    def enter(self):
        with self.lock:
            if self.closed:
                raise StoreClosedError("the store is closed")
            if getattr(_tls, "estimating", None) is self:
                raise RuntimeError("a token estimator must not call the store it is estimating for")
            self.inflight += 1
        return self.ptr

    def leave(self):
        with self.lock:
            self.inflight -= 1
            if self.closed and not self.inflight:
                self.idle.notify_all()

    def close(self):
        with self.lock:
            self.closed = True  # from now on calls raise; wait for those in flight
            while self.inflight:
                self.idle.wait()
            ptr, self.ptr = self.ptr, None
            if ptr is not None and self.pid == os.getpid():
                # In a forked child the store is the parent's: leave it alone.
                lib.session_store_close(ptr)


class Store:
    """An open libsession store: a JSONL file (:meth:`open`) or memory (:meth:`memory`).

    Use it as a context manager, or call :meth:`close`; the finalizer closes a store
    that is dropped unclosed. Safe to share between threads.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("use Store.open(path) or Store.memory()")

    @classmethod
    def _wrap(cls, ptr, report):
        self = object.__new__(cls)
        self._h = _Handle(ptr)
        self.report = report
        self._finalizer = weakref.finalize(self, self._h.close)
        # At interpreter exit a daemon thread may still be inside a call; the OS frees
        # the store and its lock with the process.
        self._finalizer.atexit = False
        return self

    @classmethod
    def open(
        cls,
        path,
        *,
        durability=None,
        read_only=None,
        lock=None,
        check_identity=None,
        salvage=None,
        strict_roles=None,
    ):
        """Opens (creating it if missing) the JSONL file at ``path``.

        ``durability``: ``"none"`` (default), ``"fsync"`` or ``"fsync_batch"``;
        ``read_only``: never create, lock or write the file; ``lock`` (default True): an
        advisory lock against a second writer; ``check_identity`` (default True);
        ``salvage``: read-only and never fail on interior damage; ``strict_roles``:
        reject extension roles and blocks. ``report`` holds the open result
        (``{"state": ..., "warnings": [...]}``).
        """
        options = _options(
            {
                "durability": durability,
                "readOnly": read_only,
                "lock": lock,
                "checkIdentity": check_identity,
                "salvage": salvage,
                "strictRoles": strict_roles,
            }
        )
        out_store = ffi.new("SessionStore **")
        report = _call(lib.session_jsonl_store_open_with, False, _path_arg(path), options, out_store)
        return cls._wrap(out_store[0], report)

    @classmethod
    def postgres(cls, conninfo, session_id, *, durability=None, strict_roles=None):
        """Opens session ``session_id`` of the PostgreSQL database ``conninfo`` names (a
        libpq-style connection string or a ``postgresql://`` URI), creating the schema on
        first use and the session if it is new. The store has the JSONL store's meaning;
        any number of stores in any number of processes may append to one session.

        ``durability``: ``"none"`` (the connection's ``synchronous_commit = off``),
        ``"fsync"`` or ``"fsync_batch"`` (``on``); default the server's setting.
        No error message holds the password of ``conninfo``.
        """
        options = _options({"durability": durability, "strictRoles": strict_roles})
        out_store = ffi.new("SessionStore **")
        report = _call(
            lib.session_pg_store_open,
            False,
            _c_text(conninfo, "conninfo"),
            _c_text(session_id, "session_id"),
            options,
            out_store,
        )
        return cls._wrap(out_store[0], report)

    @classmethod
    def memory(cls, *, strict_roles=None):
        """A new, empty store in memory."""
        out_store = ffi.new("SessionStore **")
        if strict_roles is None:
            status = lib.session_memory_store_open(out_store)
        else:
            status = lib.session_memory_store_open_with(_options({"strictRoles": strict_roles}), out_store)
        if status != 0:
            raise _error(status, None)
        return cls._wrap(out_store[0], {"state": "ready", "warnings": []})

    # -- lifetime ---------------------------------------------------------------------

    def _store_call(self, fn, raw, *args, estimating=None):
        """Calls ``fn(store, *args, out)`` inside the store's count of calls in flight and
        returns its result like :func:`_call`. ``estimating`` is the :class:`_Estimate`
        whose callback is among ``args``: while the call runs, this thread is marked as
        estimating for this store, and an exception the estimator raised is raised
        instead of the library's error."""
        h = self._h
        out = ffi.new("char **")
        ptr = h.enter()
        if estimating is not None:
            previous = getattr(_tls, "estimating", None)
            _tls.estimating = h
        try:
            status = fn(ptr, *args, out)
        finally:
            if estimating is not None:
                _tls.estimating = previous
            h.leave()
        if estimating is not None and estimating.error is not None:
            _take(out)
            error, estimating.error = estimating.error, None
            raise error
        return _finish(status, out, raw)

    def close(self):
        """Closes the store, after the calls in flight on other threads have returned.
        Idempotent; later calls raise :class:`StoreClosedError`."""
        if getattr(_tls, "estimating", None) is self._h:
            raise RuntimeError("a token estimator must not close the store it is estimating for")
        self._h.close()
        self._finalizer.detach()

    @property
    def closed(self):
        return self._h.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<libsession.Store %s>" % ("closed" if self._h.closed else self.state)

    # -- operations -------------------------------------------------------------------

    @property
    def state(self):
        """``"ready"``, ``"needs_repair"`` or ``"tainted"``, at once (no waiting)."""
        h = self._h
        ptr = h.enter()
        try:
            value = lib.session_store_state(ptr)
        finally:
            h.leave()
        return _STATES.get(value, "unknown")

    def append(self, entry, *, raw=False):
        """Appends one entry (a dict or JSON text) and returns its ``seq``, the 0-based
        commit position (with ``raw=True``, the result JSON ``{"id":…,"seq":N}``)."""
        text = self._store_call(lib.session_store_append, True, _json_arg(entry, "entry"))
        if raw:
            return text
        # {"id":…,"seq":N}: a `"seq":` with an unescaped quote cannot be inside the id
        # string, so the last one followed by digits and the closing brace is the member.
        at = text.rfind('"seq":')
        digits = text[at + 6 : -1]
        if at > 0 and digits.isdigit() and text.endswith("}"):
            return int(digits)
        return json.loads(text)["seq"]

    def entries(self, *, raw=False):
        """Every committed entry, in commit order."""
        return self._store_call(lib.session_store_entries, raw)

    def read(self, *, raw=False):
        """``{"state": ..., "entries": [...], "warnings": [...]}`` in one turn."""
        return self._store_call(lib.session_store_read, raw)

    def path_to(self, leaf, *, raw=False):
        """The entries from the root to ``leaf``, through the store's index."""
        return self._store_call(lib.session_store_path_to, raw, _c_text(leaf, "leaf"))

    def messages_on_path(self, leaf, *, raw=False):
        """The complete messages on the path to ``leaf``; metadata is skipped."""
        return self._store_call(lib.session_store_messages_on_path, raw, _c_text(leaf, "leaf"))

    def children(self, id, *, raw=False):
        """The direct children of ``id`` (nodes, commit order)."""
        return self._store_call(lib.session_store_children, raw, _c_text(id, "id"))

    def roots(self, *, raw=False):
        """The root nodes, commit order."""
        return self._store_call(lib.session_store_roots, raw)

    def leaves(self, *, raw=False):
        """``{"leaves": [...], "latestBySeq": id, "latestByTimestamp": id}``."""
        return self._store_call(lib.session_store_leaves, raw)

    def latest_leaf(self, *, raw=False):
        """The node of the last committed entry, or None."""
        return self._store_call(lib.session_store_latest_leaf, raw)

    def tree(self, *, after_seq=None, limit=None, leaf=None, preview_chars=None, raw=False):
        """A page of nodes in commit order: ``{"nodes", "count", "nextAfterSeq"}``."""
        options = _options(
            {"afterSeq": after_seq, "limit": limit, "leaf": leaf, "previewChars": preview_chars}
        )
        return self._store_call(lib.session_store_tree, raw, options)

    def labels(self, *, raw=False):
        """``[{"targetId", "label", "entryId", "seq"}, ...]``."""
        return self._store_call(lib.session_store_labels, raw)

    def build_context(
        self,
        leaf,
        *,
        budget=None,
        estimate=None,
        on_defect=None,
        summary_message=None,
        summary_prefix=None,
        summary_suffix=None,
        strict_roles=None,
        synthesized_text=None,
        profile=None,
        raw=False,
    ):
        """What the model should see for ``leaf``, through the store's index.

        ``estimate``, when given, is called with each message (a dict) and returns its
        token count; it runs on this thread inside the store's turn, so it must not call
        this store. If it raises, the call raises that exception.
        """
        options = _context_options(
            budget, on_defect, summary_message, summary_prefix, summary_suffix, strict_roles, synthesized_text, profile
        )
        leaf_arg = _c_text(leaf, "leaf")
        if estimate is None:
            return self._store_call(lib.session_store_build_context, raw, leaf_arg, options, _NULL, _NULL)
        state = _Estimate(estimate)
        return self._store_call(
            lib.session_store_build_context,
            raw,
            leaf_arg,
            options,
            _estimator,
            ffi.new_handle(state),
            estimating=state,
        )


class _Estimate:
    __slots__ = ("fn", "error")

    def __init__(self, fn):
        self.fn = fn
        self.error = None


def _estimator(message_json, length, user_data):
    # Never lets an exception reach C: it is kept and raised once the call returns, and
    # NaN makes the library fail the call (a non-finite estimate).
    state = ffi.from_handle(user_data)
    if state.error is not None:
        return math.nan
    try:
        return float(state.fn(json.loads(ffi.unpack(message_json, length).decode("utf-8"))))
    except BaseException as exc:  # noqa: B902 -- re-raised on the calling thread
        state.error = exc
        return math.nan


# The estimator type exists from the library version that has build_context on.
try:
    _estimator = ffi.callback("SessionTokenEstimator", _estimator, error=math.nan)
except CDefError:
    _estimator = None
