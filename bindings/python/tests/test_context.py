"""build_context over the chapter's extended tree (the contract's §10): the compaction,
pairing defects, the budget with a Python estimator, and an estimator that raises."""

import libsession
import pytest
from conftest import ENTRIES, run_threads



def msg(id, parent, message):
    return {"id": id, "parentId": parent, "timestamp": 1733000010000, "type": "message", "message": message}


SUMMARY = "User asked for the project name; it is tiny-pi."
EXTENDED = ENTRIES + [
    msg("u-2", "meta-cwd", {"role": "user", "content": "再读 package.json，告诉我版本"}),
    msg("a-pkg", "u-2", {"role": "assistant", "content": [
        {"type": "toolCall", "id": "call-2", "name": "read", "arguments": {"path": "package.json"}}]}),
    msg("r-pkg", "a-pkg", {"role": "toolResult", "toolCallId": "call-2", "toolName": "read",
                           "content": [{"type": "text", "text": '{"version":"0.1.0"}'}], "isError": False}),
    msg("a-ver", "r-pkg", {"role": "assistant", "content": [{"type": "text", "text": "版本是 0.1.0"}]}),
    {"id": "c-1", "parentId": "a-ver", "timestamp": 1733000020000, "type": "compaction",
     "summary": SUMMARY, "firstKeptEntryId": "u-2", "tokensBefore": 1200},
    msg("u-3", "c-1", {"role": "user", "content": "还有什么依赖？"}),
]
KEPT = ["u-2", "a-pkg", "r-pkg", "a-ver", "u-3"]
BY_ID = {e["id"]: e for e in EXTENDED}


@pytest.fixture
def store():
    with libsession.Store.memory() as s:
        for e in EXTENDED:
            s.append(e)
        yield s


def test_build_context_of_u3_is_the_summary_then_the_kept_messages(store):
    ctx = store.build_context("u-3")
    assert ctx["leafId"] == "u-3"
    assert ctx["keptEntryIds"] == KEPT
    assert ctx["messages"][0]["role"] == "user"
    assert ctx["messages"][0]["content"] == [{"type": "text", "text": SUMMARY}]
    assert ctx["messages"][1:] == [BY_ID[i]["message"] for i in KEPT]
    assert ctx["compaction"]["id"] == "c-1" and ctx["compaction"]["firstKeptEntryId"] == "u-2"
    assert ctx["metadata"] == {"cwd": "/workspace/tiny-pi"}
    assert len(store.messages_on_path("u-3")) == 9  # the lossless projection is unchanged
    assert libsession.build_context(EXTENDED, "u-3") == ctx  # the pure form agrees
    assert store.build_context("u-3", raw=True) == libsession.build_context(EXTENDED, "u-3", raw=True)
    assert store.build_context("a-final")["messages"] == store.messages_on_path("a-final")


def test_a_compaction_that_cuts_an_interaction_is_refused_at_append(store):
    bad = dict(BY_ID["c-1"], id="c-2", firstKeptEntryId="a-pkg")
    with pytest.raises(libsession.InvalidCompaction) as info:
        store.append(bad)
    d = info.value.details
    assert (d["compactionId"], d["firstKeptEntryId"], d["reason"]) == ("c-2", "a-pkg", "not_interaction_start")


def test_an_orphan_tool_result_fails_or_is_skipped_on_request(store):
    store.append(msg("r-9", "a-final", {"role": "toolResult", "toolCallId": "call-9", "toolName": "read",
                                        "content": [], "isError": False}))
    with pytest.raises(libsession.ToolPairing) as info:
        store.build_context("r-9")
    assert (info.value.details["reason"], info.value.details["entryId"]) == ("orphan_result", "r-9")
    skipped = store.build_context("r-9", on_defect="skip")
    assert [s["entryId"] for s in skipped["skipped"]] == ["r-9"]


def test_on_defect_synthesize_answers_an_unanswered_call():
    s = libsession.Store.memory()
    s.append({"id": "u-1", "parentId": None, "timestamp": 1, "type": "message",
              "message": {"role": "user", "content": "go"}})
    s.append({"id": "a-1", "parentId": "u-1", "timestamp": 2, "type": "message",
              "message": {"role": "assistant",
                          "content": [{"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {}}]}})
    with pytest.raises(libsession.ToolPairing):
        s.build_context("a-1")
    ctx = s.build_context("a-1", on_defect="synthesize", synthesized_text="No result provided")
    assert ctx["messages"][2] == {"role": "toolResult", "toolCallId": "call-1", "toolName": "bash",
                                  "content": [{"type": "text", "text": "No result provided"}],
                                  "isError": True, "timestamp": 2, "synthetic": True}
    assert ctx["keptEntryIds"] == ["u-1", "a-1", None]
    assert ctx["defects"][0]["action"] == "synthesized"


def test_profile_codex_answers_aborted_and_drops_an_output_without_a_call():
    entries = [
        {"id": "u-1", "parentId": None, "timestamp": 1, "type": "message",
         "message": {"role": "user", "content": "go"}},
        {"id": "a-1", "parentId": "u-1", "timestamp": 2, "type": "message",
         "message": {"role": "assistant",
                     "content": [{"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {}}]}},
        {"id": "r-9", "parentId": "a-1", "timestamp": 3, "type": "message",
         "message": {"role": "toolResult", "toolCallId": "call-9", "toolName": "bash",
                     "content": [], "isError": False}},
    ]
    with pytest.raises(libsession.ToolPairing):
        libsession.build_context(entries, "r-9")
    ctx = libsession.build_context(entries, "r-9", profile="codex")
    assert [m["role"] for m in ctx["messages"]] == ["user", "assistant", "toolResult"]
    assert ctx["messages"][2]["content"][0]["text"] == "aborted"
    assert [d["action"] for d in ctx["defects"]] == ["synthesized", "dropped"]
    with pytest.raises(libsession.InvalidArgument):
        libsession.build_context(entries, "r-9", profile="gemini")


def test_an_imported_session_is_sent_as_its_agent_sends_it_by_default():
    # A session imported from Codex: its root records the format.
    entries = [
        {"id": "root", "parentId": None, "timestamp": 0, "type": "metadata", "key": "codex.session",
         "value": None, "importedFormat": "codex"},
        {"id": "u-1", "parentId": "root", "timestamp": 1, "type": "message",
         "message": {"role": "user", "content": "go"}},
        {"id": "a-1", "parentId": "u-1", "timestamp": 2, "type": "message",
         "message": {"role": "assistant",
                     "content": [{"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {}}]}},
    ]
    ctx = libsession.build_context(entries, "a-1")
    assert ctx["messages"][2]["content"][0]["text"] == "aborted"
    assert ctx == libsession.build_context(entries, "a-1", profile="auto")
    with pytest.raises(libsession.ToolPairing) as raised:
        libsession.build_context(entries, "a-1", profile="none")
    assert 'imported from codex; build it with "profile":"auto"' in str(raised.value)


def test_the_estimator_gets_each_message_once_and_prices_the_budget(store):
    seen = []

    def estimate(message):
        seen.append(message)
        return 10

    ctx = store.build_context("u-3", budget=1000, estimate=estimate)
    assert len(seen) == 6  # the summary message and the five kept messages
    assert seen[0] == ctx["messages"][0] or seen[-1] == ctx["messages"][0]
    assert ctx["budget"]["used"] == 60 and ctx["budget"]["reason"] == "within_budget"
    trimmed = store.build_context("u-3", budget={"maxTokens": 25}, estimate=lambda m: 10)
    assert trimmed["budget"]["reason"] in ("trimmed", "single_interaction_overflow")


class EstimatorBroke(Exception):
    pass


def test_an_estimator_that_raises_raises_that_exception_and_the_store_goes_on(store):
    calls = []

    def estimate(message):
        calls.append(1)
        raise EstimatorBroke("no tokenizer")

    with pytest.raises(EstimatorBroke, match="no tokenizer"):
        store.build_context("u-3", budget=1000, estimate=estimate)
    assert len(calls) == 1  # the first failure ends the estimation
    with pytest.raises(TypeError):
        store.build_context("u-3", budget=1000, estimate=lambda m: object())
    assert store.state == "ready"
    assert store.build_context("u-3", budget=1000, estimate=len)["keptEntryIds"] == KEPT


def test_a_negative_estimate_is_the_librarys_invalid_argument(store):
    with pytest.raises(libsession.InvalidArgument) as info:
        store.build_context("u-3", budget=1000, estimate=lambda m: -1)
    assert "entryId" in info.value.details


def test_an_estimator_calling_its_own_store_raises_instead_of_deadlocking(store):
    with pytest.raises(RuntimeError, match="estimator"):
        store.build_context("u-3", budget=1000, estimate=lambda m: len(store.entries()))
    with pytest.raises(RuntimeError, match="estimator"):
        store.build_context("u-3", budget=1000, estimate=lambda m: store.close())
    assert not store.closed
    with libsession.Store.memory() as other:  # another store is fine
        ctx = store.build_context("u-3", budget=1000, estimate=lambda m: len(other.entries()) + 1)
        assert ctx["budget"]["used"] == 6


def test_estimators_on_several_threads_each_get_their_own_messages(store):
    results = {}

    def work(t):
        results[t] = store.build_context("u-3", budget=10_000, estimate=lambda m, t=t: t + 1)["budget"]["used"]

    run_threads(work, 6)
    assert results == {t: 6 * (t + 1) for t in range(6)}


def test_strict_roles_rejects_extension_messages():
    ext = msg("x-1", None, {"role": "bashExecution", "command": "ls", "output": ""})
    with libsession.Store.memory() as open_roles:
        assert open_roles.append(ext) == 0
    with libsession.Store.memory(strict_roles=True) as strict:
        with pytest.raises(libsession.InvalidEntry):
            strict.append(ext)
