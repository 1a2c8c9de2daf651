"""Navigating the chapter's tree: children, roots, leaves, latest_leaf, tree pages,
labels, list_sessions."""

import json

import libsession
import pytest
from conftest import CHAPTER


def ids(nodes):
    return [n["id"] for n in nodes]


@pytest.fixture
def store():
    with libsession.Store.memory() as s:
        for line in CHAPTER:
            s.append(line)
        yield s


def test_children_roots_leaves_and_latest_leaf_of_the_chapter(store):
    assert ids(store.children("u-1")) == ["a-read", "a-alt"]
    assert store.children("meta-cwd") == []
    assert ids(store.roots()) == ["u-1"]
    leaves = store.leaves()
    assert ids(leaves["leaves"]) == ["a-alt", "meta-cwd"]
    assert leaves["latestBySeq"] == "meta-cwd"
    latest = store.latest_leaf()
    assert (latest["id"], latest["seq"], latest["depth"], latest["type"]) == ("meta-cwd", 5, 4, "metadata")
    with pytest.raises(libsession.UnknownLeaf) as info:
        store.children("nope")
    assert info.value.details["id"] == "nope"


def test_nodes_carry_no_message_body(store):
    (a_read,) = [n for n in store.children("u-1") if n["id"] == "a-read"]
    assert a_read["role"] == "assistant" and a_read["toolCalls"] == 1 and a_read["childCount"] == 1
    assert "message" not in a_read and "content" not in a_read


def test_tree_pages_follow_commit_order_and_flag_the_path(store):
    first = store.tree(limit=4, leaf="a-alt", preview_chars=5)
    assert ids(first["nodes"]) == ["u-1", "a-read", "r-read", "a-final"]
    assert (first["count"], first["nextAfterSeq"]) == (6, 3)
    assert [n.get("onPath", False) for n in first["nodes"]] == [True, False, False, False]
    assert first["nodes"][0]["preview"] == "读取 RE"
    rest = store.tree(after_seq=first["nextAfterSeq"])
    assert ids(rest["nodes"]) == ["a-alt", "meta-cwd"] and rest["nextAfterSeq"] is None
    with pytest.raises(libsession.InvalidArgument):
        store.tree(limit=-1)


def test_labels_last_label_wins_and_a_null_label_clears(store):
    def label(id, target, text):
        return {"id": id, "parentId": "meta-cwd", "timestamp": 9, "type": "metadata",
                "key": "session.label", "value": {"targetId": target, "label": text}}

    store.append(label("l-1", "a-alt", "dead end"))
    store.append(label("l-2", "u-1", "start"))
    store.append(label("l-3", "a-alt", "alternative"))
    assert store.labels() == [
        {"targetId": "u-1", "label": "start", "entryId": "l-2", "seq": 7},
        {"targetId": "a-alt", "label": "alternative", "entryId": "l-3", "seq": 8},
    ]
    store.append(label("l-4", "u-1", None))
    assert [l["targetId"] for l in store.labels()] == ["a-alt"]
    with pytest.raises(libsession.UnknownLeaf) as info:  # the target must be committed
        store.append(label("l-5", "ghost", "x"))
    assert info.value.details["id"] == "ghost"


def test_list_sessions_lists_every_jsonl_file_with_its_state(tmp_path, chapter_file):
    (tmp_path / "notes.txt").write_text("not a session")
    (tmp_path / "half.jsonl").write_text(CHAPTER[0] + "\n" + CHAPTER[1][:9], encoding="utf-8")
    listing = libsession.list_sessions(tmp_path, sort="path")
    by_name = {s["path"].rsplit("/", 1)[1]: s for s in listing["sessions"]}
    assert sorted(by_name) == ["chapter.jsonl", "half.jsonl"]
    chapter = by_name["chapter.jsonl"]
    assert (chapter["state"], chapter["latestLeafId"], chapter["entries"]) == ("ready", "meta-cwd", 6)
    assert chapter["firstUserText"].startswith("读取 README.md")
    assert by_name["half.jsonl"]["state"] == "needs_repair"
    assert json.loads(libsession.list_sessions(str(tmp_path), limit=1, raw=True))["sessions"].__len__() == 1


def test_search_finds_a_hit_on_a_side_branch(tmp_path, chapter_file):
    result = libsession.search(tmp_path, "无法读取")
    assert [(h["entryId"], h["onLatestPath"]) for h in result["hits"]] == [("a-alt", False)]
    assert (result["sessions"], result["entries"]) == (1, 6)
    assert libsession.search(tmp_path, "无法读取", latest_path_only=True)["hits"] == []
    roles = libsession.search(tmp_path, "tiny-pi", roles=["toolResult"], limit=5)
    assert [h["entryId"] for h in roles["hits"]] == ["r-read"]
    with pytest.raises(libsession.InvalidArgument):
        libsession.search(tmp_path, " ")
