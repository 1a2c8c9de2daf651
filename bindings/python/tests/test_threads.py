"""Several threads on one store; close() waits for the calls in flight."""

import threading

import libsession
import pytest
from conftest import entry, run_threads

THREADS = 8
PER_THREAD = 300


def test_threads_appending_commit_every_entry_once_in_each_threads_order(tmp_path):
    path = tmp_path / "t.jsonl"
    with libsession.Store.open(path) as store:
        seqs = [[] for _ in range(THREADS)]
        start = threading.Barrier(THREADS)

        def work(t):
            start.wait()
            parent = None
            for i in range(PER_THREAD):
                id = "t%d-%d" % (t, i)
                seqs[t].append(store.append(entry(id, parent)))
                parent = id
                if i % 50 == 0:
                    assert len(store.path_to(id)) == i + 1

        run_threads(work, THREADS)
        every = sorted(s for per in seqs for s in per)
        assert every == list(range(THREADS * PER_THREAD))
        for per in seqs:
            assert per == sorted(per)  # a thread's appends commit in its order
        entries = store.entries()
        for t in range(THREADS):
            mine = [e["id"] for e in entries if e["id"].startswith("t%d-" % t)]
            assert mine == ["t%d-%d" % (t, i) for i in range(PER_THREAD)]
    with libsession.Store.open(path, read_only=True) as again:
        assert len(again.entries()) == THREADS * PER_THREAD


def test_close_waits_for_calls_in_flight_and_later_calls_raise(tmp_path):
    path = tmp_path / "c.jsonl"
    store = libsession.Store.open(path)
    acked = [0] * THREADS
    outcomes = [None] * THREADS
    warmed = [threading.Event() for _ in range(THREADS)]

    def work(t):
        parent = None
        try:
            for i in range(1_000_000):
                id = "w%d-%d" % (t, i)
                store.append(entry(id, parent))
                acked[t] += 1
                parent = id
                if i == 20:
                    warmed[t].set()
        except libsession.StoreClosedError:
            outcomes[t] = "closed"
        except BaseException as exc:
            outcomes[t] = exc
        finally:
            warmed[t].set()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for ev in warmed:
        ev.wait()
    store.close()  # while the other threads keep appending
    assert store.closed
    for th in threads:
        th.join()
    assert outcomes == ["closed"] * THREADS
    with pytest.raises(libsession.StoreClosedError):
        store.entries()
    with pytest.raises(libsession.StoreClosedError):
        store.state
    store.close()  # idempotent
    # Every append that returned is in the file, and nothing else.
    with libsession.Store.open(path, read_only=True) as again:
        assert len(again.entries()) == sum(acked)


def test_concurrent_closes_all_return_after_the_store_is_closed(tmp_path):
    store = libsession.Store.open(tmp_path / "s.jsonl")
    go = threading.Barrier(4)

    def closer(_):
        go.wait()
        store.close()

    run_threads(closer, 4)
    assert store.closed and store._h.ptr is None
    with libsession.Store.open(tmp_path / "s.jsonl") as again:  # the lock was released
        assert again.state == "ready"
