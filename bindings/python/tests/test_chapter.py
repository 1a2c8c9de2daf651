"""The chapter's tree through every API: file store, memory store, pure functions."""

import json

import libsession
import pytest
from conftest import CHAPTER, CHAPTER_FILE, ENTRIES

PATH_META = ["u-1", "a-read", "r-read", "a-final", "meta-cwd"]


def ids(entries):
    return [e["id"] for e in entries]


def test_appending_the_chapter_to_a_file_writes_the_example_file_byte_for_byte(tmp_path):
    path = tmp_path / "s.jsonl"
    with libsession.Store.open(path) as store:
        assert store.report == {"state": "ready", "warnings": []}
        seqs = [store.append(line) for line in CHAPTER]
        assert seqs == [0, 1, 2, 3, 4, 5]
        assert store.state == "ready"
    assert path.read_bytes() == CHAPTER_FILE.read_bytes()


def test_append_takes_a_dict_and_returns_the_seq_or_the_raw_result():
    with libsession.Store.memory() as store:
        assert store.append(ENTRIES[0]) == 0
        assert json.loads(store.append(ENTRIES[1], raw=True)) == {"id": "a-read", "seq": 1}
        assert store.entries() == ENTRIES[:2]


def test_paths_and_messages_of_the_chapter_tree(chapter_file):
    with libsession.Store.open(chapter_file, read_only=True) as store:
        assert store.entries() == ENTRIES
        assert ids(store.path_to("meta-cwd")) == PATH_META
        assert ids(store.path_to("a-alt")) == ["u-1", "a-alt"]
        messages = store.messages_on_path("meta-cwd")
        assert messages == [e["message"] for e in ENTRIES[:4]]
        assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
        assert store.messages_on_path("a-alt") == [ENTRIES[0]["message"], ENTRIES[4]["message"]]
        read = store.read()
        assert read == {"state": "ready", "entries": ENTRIES, "warnings": []}


def test_raw_results_are_the_library_json_text(chapter_file):
    with libsession.Store.open(chapter_file, read_only=True) as store:
        text = store.path_to("meta-cwd", raw=True)
        assert isinstance(text, str)
        assert text == "[" + ",".join(CHAPTER[i] for i in (0, 1, 2, 3, 5)) + "]"
        assert store.entries(raw=True) == "[" + ",".join(CHAPTER) + "]"


def test_pure_path_functions_over_a_list_or_json_text():
    shuffled = list(reversed(ENTRIES))
    assert ids(libsession.path_to(shuffled, "meta-cwd")) == PATH_META
    assert ids(libsession.path_to(json.dumps(shuffled), "a-alt")) == ["u-1", "a-alt"]
    assert libsession.messages_on_path(shuffled, "meta-cwd") == [e["message"] for e in ENTRIES[:4]]


def test_parse_entry_returns_the_normalised_entry_keeping_key_order_and_numbers():
    text = '{ "id" : "m", "parentId" : null, "timestamp" : 1.50,\n "type":"metadata", "key":"k", "value": {"b":1,"a":1e2} }'
    assert libsession.parse_entry(text, raw=True) == (
        '{"id":"m","parentId":null,"timestamp":1.50,"type":"metadata","key":"k","value":{"b":1,"a":1e2}}'
    )
    assert libsession.parse_entry(ENTRIES[2]) == ENTRIES[2]
    assert libsession.parse_entry(CHAPTER[1].encode("utf-8"), raw=True) == CHAPTER[1]


def test_recover_jsonl_returns_the_committed_prefix_and_the_tail_warning():
    data = ("\n".join(CHAPTER[:2]) + "\n" + CHAPTER[2][:20]).encode("utf-8")
    assert libsession.recover_jsonl(data) == {
        "entries": ENTRIES[:2],
        "warnings": [{"code": "unterminated_tail", "line": 3}],
    }
    assert libsession.recover_jsonl(b"") == {"entries": [], "warnings": []}
    assert libsession.recover_jsonl(bytearray(CHAPTER[0].encode() + b"\n"))["entries"] == ENTRIES[:1]


def test_a_failed_append_fails_only_itself_and_the_next_seq_is_not_used():
    with libsession.Store.memory() as store:
        store.append(ENTRIES[0])
        with pytest.raises(libsession.DuplicateId):
            store.append(ENTRIES[0])
        assert store.append(ENTRIES[1]) == 1


def test_append_returns_the_seq_whatever_the_id_spells():
    with libsession.Store.memory() as store:
        tricky = ['"seq":7}', 'x"seq":12', "\\", "}", "seq"]
        parent = None
        for i, id in enumerate(tricky):
            e = {"id": id, "parentId": parent, "timestamp": 1, "type": "metadata", "key": "k", "value": i}
            assert store.append(e) == i
            parent = id
        assert [e["id"] for e in store.path_to("seq")] == tricky
