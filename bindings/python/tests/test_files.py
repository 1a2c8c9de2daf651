"""File stores: a real half write (RLIMIT_FSIZE) taints the store, the reopened file
needs repair, repair makes it ready; options; the finalizer releases the lock."""

import errno
import gc
import json
import subprocess
import sys

import libsession
import pytest
from conftest import CHAPTER, ENTRIES

ROOM = 10  # bytes of the next line that the kernel lets through

# Runs in a child process: lowers RLIMIT_FSIZE so that the kernel accepts only the first
# ROOM bytes of the next line (a short write, then EFBIG), and reports what happened.
HALF_WRITE_CHILD = r"""
import json, os, resource, signal, sys
import libsession

path, room, lines = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
report = {}
with libsession.Store.open(path) as store:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + room, hard))
    try:
        store.append(lines[1])
        report["io"] = None
    except libsession.Io as err:
        report["io"] = err.json
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # nothing may be written anyway
    report["state"] = store.state
    later = []
    for call in (lambda: store.append(lines[4]), store.entries, lambda: store.path_to("u-1")):
        try:
            call()
            later.append(None)
        except libsession.Tainted as err:
            later.append([err.json, type(err.cause).__name__])
    report["later"] = later
print(json.dumps(report))
"""


def test_a_real_half_write_taints_the_store_and_the_file_then_needs_repair(tmp_path):
    path = tmp_path / "half.jsonl"
    first = CHAPTER[0] + "\n"
    path.write_text(first, encoding="utf-8")
    child = subprocess.run(
        [sys.executable, "-c", HALF_WRITE_CHILD, str(path), str(ROOM), json.dumps(CHAPTER)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
    )
    assert child.returncode == 0, child.stderr.decode()
    report = json.loads(child.stdout)

    # The first failing append: the I/O error of the write, with the errno.
    io = json.loads(report["io"])["error"]
    assert (io["code"], io["op"]) == ("io", "write")
    assert io["osError"] == errno.EFBIG
    assert report["state"] == "tainted"
    # Every later call: tainted, with the original error as cause, byte for byte.
    inner = report["io"][len('{"error":'):-1]
    for tainted_json, cause_class in report["later"]:
        assert json.loads(tainted_json)["error"]["code"] == "tainted"
        assert '"cause":' + inner in tainted_json
        assert cause_class == "Io"

    data = path.read_bytes()
    assert data == (first + CHAPTER[1][:ROOM]).encode("utf-8")

    with libsession.Store.open(path) as store:
        assert store.report == {"state": "needs_repair", "warnings": [{"code": "unterminated_tail", "line": 2}]}
        assert store.state == "needs_repair"
        assert store.entries() == ENTRIES[:1]
        with pytest.raises(libsession.NeedsRepair):
            store.append(ENTRIES[1])
        with pytest.raises(libsession.Locked):
            libsession.repair(path)  # not while a writer holds the file

    result = libsession.repair(path)
    assert result["truncatedBytes"] == ROOM and result["entries"] == 1
    backup = result["backup"]
    assert open(backup, "rb").read() == CHAPTER[1][:ROOM].encode("utf-8")
    assert path.read_bytes() == first.encode("utf-8")
    assert libsession.repair(str(path)) == {"truncatedBytes": 0, "backup": None, "entries": 1}
    with libsession.Store.open(path) as store:
        assert store.state == "ready"
        assert store.append(ENTRIES[1]) == 1


@pytest.mark.parametrize("durability", ["none", "fsync", "fsync_batch"])
def test_every_durability_mode_opens_and_appends(tmp_path, durability):
    path = tmp_path / "d.jsonl"
    with libsession.Store.open(path, durability=durability, check_identity=False) as store:
        assert [store.append(line) for line in CHAPTER] == list(range(6))
    with libsession.Store.open(path, read_only=True) as store:
        assert store.entries() == ENTRIES


def test_lock_false_lets_a_second_writer_open(tmp_path):
    path = tmp_path / "s.jsonl"
    with libsession.Store.open(path, lock=False) as a, libsession.Store.open(path, lock=False) as b:
        assert a.state == b.state == "ready"


def test_salvage_loads_every_good_entry_and_lists_the_bad_lines(tmp_path):
    path = tmp_path / "damaged.jsonl"
    path.write_text(CHAPTER[0] + "\n{oops\n" + CHAPTER[1] + "\n", encoding="utf-8")
    with libsession.Store.open(path, salvage=True) as store:
        read = store.read()
        assert read["complete"] is False
        assert [d["line"] for d in read["diagnostics"]] == [2]
        assert read["entries"] == ENTRIES[:2]
        with pytest.raises(libsession.ReadOnly):
            store.append(ENTRIES[2])


def test_open_accepts_str_bytes_and_pathlike(tmp_path):
    path = tmp_path / "p.jsonl"
    for p in (path, str(path), bytes(path)):
        with libsession.Store.open(p) as store:
            assert store.state == "ready"


def test_a_dropped_store_is_closed_by_its_finalizer(tmp_path):
    path = tmp_path / "s.jsonl"
    store = libsession.Store.open(path)
    store.append(ENTRIES[0])
    with pytest.raises(libsession.Locked):
        libsession.Store.open(path)
    del store
    gc.collect()
    with libsession.Store.open(path) as again:  # the lock went with the store
        assert again.entries() == ENTRIES[:1]


def test_export_writes_a_file_the_agent_resumes_with_its_report(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_text(
        '{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi"}}\n'
        '{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message",'
        '"message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"hello"}]}}\n'
    )
    out = tmp_path / "rollout.jsonl"
    report = libsession.export("codex", src, out)
    assert report == {
        "format": "codex",
        "entries": 4,
        "converted": [
            {
                "kind": "thinking",
                "count": 1,
                "reason": "written as a reasoning item whose summary is the text (no encrypted content)",
            }
        ],
        "dropped": [],
        "redactions": 0,
    }
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["session_meta", "response_item", "response_item", "response_item"]
    assert lines[2]["payload"] == {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]}
    with pytest.raises(libsession.SessionError) as failure:
        libsession.export("codex", src, out, leaf="u-1")
    assert failure.value.code == "io"
    with pytest.raises(libsession.SessionError) as failure:
        libsession.export("claude-code", src, tmp_path / "x.jsonl", leaf="nope")
    assert failure.value.code == "unknown_leaf"
