"""Store.postgres (docs/contract.md §14) against the throwaway cluster that run_tests.sh
starts through tests/c/run_pg.sh (SESSION_TEST_PG names it): the chapter's answers, a
second store on the same session, refusals, no password in an error."""

import os
import uuid

import pytest

import libsession
from conftest import CHAPTER

CONNINFO = os.environ.get("SESSION_TEST_PG")
pytestmark = pytest.mark.skipif(
    CONNINFO is None,
    reason="SESSION_TEST_PG is not set: run through tests/c/run_pg.sh (run_tests.sh does)",
)


def test_a_postgres_store_answers_as_a_memory_store_and_a_second_store_agrees():
    session = "py-" + uuid.uuid4().hex
    memory = libsession.Store.memory()
    pg = libsession.Store.postgres(CONNINFO, session, durability="fsync")
    for line in CHAPTER:
        assert pg.append(line) == memory.append(line)
    other = libsession.Store.postgres(CONNINFO, session)
    for store in (pg, other):
        assert store.entries(raw=True) == memory.entries(raw=True)
        assert store.messages_on_path("a-alt", raw=True) == memory.messages_on_path("a-alt", raw=True)
    with pytest.raises(libsession.SessionError) as caught:
        other.append(CHAPTER[0].replace("README", "OTHER"))
    assert caught.value.code == "duplicate_id"
    # The identical entry again is that entry.
    assert other.append(CHAPTER[1]) == 1
    pg.close()
    other.close()


def test_an_open_error_never_holds_the_password():
    secret = "Wr0ng-" + uuid.uuid4().hex
    with pytest.raises(libsession.SessionError) as caught:
        libsession.Store.postgres("host=/nonexistent-libsession user=u password=%s" % secret, "s")
    assert caught.value.code == "io"
    assert secret not in str(caught.value) and secret not in caught.value.json
    with pytest.raises(libsession.SessionError) as caught:
        libsession.Store.postgres(CONNINFO, "")
    assert caught.value.code == "invalid_argument"
    assert caught.value.details["argument"] == "session_id"
