"""One exception class per status, made from the library's status names, and each one
raised by the call that the header documents for it, with its details."""

import os
import pickle
import re

import libsession
import pytest
from conftest import CHAPTER, ENTRIES, REPO, entry

HEADER = (REPO / "include" / "session.h").read_text(encoding="utf-8")

# Every status the header defines, with the class name it gets.
EXPECTED = {
    "invalid_argument": "InvalidArgument",
    "invalid_json": "InvalidJson",
    "invalid_entry": "InvalidEntry",
    "duplicate_id": "DuplicateId",
    "missing_parent": "MissingParent",
    "cycle": "Cycle",
    "unknown_leaf": "UnknownLeaf",
    "corrupt_line": "CorruptLine",
    "needs_repair": "NeedsRepair",
    "tainted": "Tainted",
    "io": "Io",
    "internal": "Internal",
    "locked": "Locked",
    "file_changed": "FileChanged",
    "read_only": "ReadOnly",
    "wrong_process": "WrongProcess",
    "invalid_compaction": "InvalidCompaction",
    "tool_pairing": "ToolPairing",
    "cancelled": "Cancelled",
}
# The codes of the header this library was built from (the last two arrive with
# build_context).
IN_HEADER = {c[len("SESSION_ERR_"):].lower() for c in re.findall(r"^#define (SESSION_ERR_\w+) ", HEADER, re.M)}


def test_every_status_of_the_library_has_a_subclass_named_after_its_code():
    names = {libsession.status_name(s) for s in range(1, 256)} - {"unknown"}
    assert IN_HEADER == names == set(libsession.STATUS)
    assert {"invalid_argument", "needs_repair", "tainted", "locked"} <= names
    for code, status in libsession.STATUS.items():
        cls = libsession.error_class(status)
        assert issubclass(cls, libsession.SessionError)
        assert (cls.status, cls.code) == (status, code)
        assert getattr(libsession, cls.__name__) is cls
        assert cls.__name__ in libsession.__all__
    for code, name in EXPECTED.items():
        if code in IN_HEADER:
            assert getattr(libsession, name).code == code


def test_a_status_the_binding_has_never_seen_gets_a_class_from_its_code():
    err = libsession._error(200, '{"error":{"code":"future_thing","message":"m","extra":[1]}}')
    assert type(err).__name__ == "FutureThing"
    assert (err.status, err.code, err.message, err.details) == (200, "future_thing", "m", {"extra": [1]})
    assert libsession.error_class(200) is type(err)


def raises(cls, fn, *args, **kwargs):
    with pytest.raises(cls) as info:
        fn(*args, **kwargs)
    err = info.value
    assert type(err) is cls and err.status == libsession.STATUS[err.code]
    assert err.json.startswith('{"error":{"code":"%s"' % err.code)
    return err


def test_invalid_argument_names_the_argument(tmp_path):
    err = raises(libsession.InvalidArgument, libsession.Store.open, tmp_path / "s.jsonl", durability="sometimes")
    assert err.details["argument"] == "options_json"
    err = raises(libsession.InvalidArgument, libsession.Store.open, os.fsencode(str(tmp_path)) + b"/\xff.jsonl")
    assert "argument" in err.details


def test_invalid_json_and_invalid_entry_carry_a_pointer():
    err = raises(libsession.InvalidJson, libsession.parse_entry, '{"id":"a","id":"b"}')
    assert "pointer" in err.details and "offset" in err.details
    err = raises(libsession.InvalidEntry, libsession.parse_entry, {"id": "a", "parentId": None, "type": "message"})
    assert err.details["pointer"] == "/timestamp"


def test_tree_errors_carry_their_ids():
    with libsession.Store.memory() as store:
        store.append(entry("r", None))
        assert raises(libsession.DuplicateId, store.append, entry("r", None)).details["id"] == "r"
        err = raises(libsession.MissingParent, store.append, entry("c", "ghost"))
        assert (err.details["childId"], err.details["parentId"]) == ("c", "ghost")
        assert raises(libsession.UnknownLeaf, store.path_to, "nope").details["id"] == "nope"
    loop = [entry("x", "y"), entry("y", "x")]
    assert raises(libsession.Cycle, libsession.path_to, loop, "x").details["id"] in ("x", "y")


def test_corrupt_line_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(CHAPTER[0] + "\n\nnot json\n", encoding="utf-8")
    err = raises(libsession.CorruptLine, libsession.Store.open, path)
    assert (err.details["line"], err.details["reason"]) == (3, "invalid_json")


def test_needs_repair_refuses_appends_and_reports_the_warning(tmp_path):
    path = tmp_path / "tail.jsonl"
    path.write_text(CHAPTER[0] + "\n" + CHAPTER[1][:30], encoding="utf-8")
    with libsession.Store.open(path) as store:
        assert store.state == "needs_repair"
        err = raises(libsession.NeedsRepair, store.append, ENTRIES[1])
        assert err.details["warnings"] == [{"code": "unterminated_tail", "line": 2}]


def test_locked_read_only_and_file_changed(tmp_path):
    path = tmp_path / "s.jsonl"
    with libsession.Store.open(path) as writer:
        assert raises(libsession.Locked, libsession.Store.open, path).details["path"] == str(path)
        with libsession.Store.open(path, read_only=True) as reader:
            raises(libsession.ReadOnly, reader.append, ENTRIES[0])
        writer.append(ENTRIES[0])
        os.unlink(path)
        err = raises(libsession.FileChanged, writer.append, ENTRIES[1])
        assert err.details["reason"] == "deleted"
        assert writer.state == "tainted"
        tainted = raises(libsession.Tainted, writer.append, ENTRIES[1])
        assert isinstance(tainted.cause, libsession.FileChanged)
        assert tainted.cause.details["reason"] == "deleted"


def test_wrong_process_in_a_forked_child(tmp_path):
    with libsession.Store.open(tmp_path / "s.jsonl") as store:
        pid = os.fork()
        if pid == 0:  # the child: report through the exit code only
            code = 1
            try:
                store.append(ENTRIES[0])
            except libsession.WrongProcess as err:
                code = 0 if (err.details["ownerPid"], err.details["pid"]) == (os.getppid(), os.getpid()) else 2
            except BaseException:
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        assert store.append(ENTRIES[0]) == 0  # the parent's store is untouched


def test_errors_pickle_to_the_same_class_and_fields():
    with pytest.raises(libsession.MissingParent) as info:
        libsession.path_to([entry("c", "p")], "c")
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is libsession.MissingParent
    assert (copy.status, copy.code, copy.details, copy.json) == (
        info.value.status, info.value.code, info.value.details, info.value.json)


def test_str_arguments_with_a_nul_are_refused_before_the_call():
    with libsession.Store.memory() as store:
        with pytest.raises(ValueError, match="NUL"):
            store.path_to("a\0b")
    with pytest.raises(TypeError):
        libsession.path_to([], 42)
