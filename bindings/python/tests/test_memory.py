"""A loop of 100,000 calls, successes and failures, leaves RSS where it was: every C
string is freed (a leak of even the short error JSON would add megabytes)."""

import gc
import os

import libsession
from conftest import CHAPTER, ENTRIES

CALLS = 100_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def boom(message):
    raise ValueError("estimator failed")


def test_a_hundred_thousand_calls_do_not_grow_rss():
    store = libsession.Store.memory()
    for line in CHAPTER:
        store.append(line)
    tail = ("\n".join(CHAPTER) + "\n" + CHAPTER[0][:15]).encode()
    calls = [
        lambda: store.path_to("meta-cwd"),
        lambda: store.messages_on_path("a-alt", raw=True),
        lambda: store.append(CHAPTER[0]),  # duplicate_id: an error JSON each time
        lambda: store.path_to("nope"),  # unknown_leaf
        lambda: libsession.parse_entry(ENTRIES[1]),
        lambda: libsession.parse_entry('{"id":'),  # invalid_json
        lambda: libsession.recover_jsonl(tail),
        lambda: store.state,
        # build_context with a Python estimator, succeeding and failing
        lambda: store.build_context("meta-cwd", budget=10_000, estimate=len),
        lambda: store.build_context("meta-cwd", budget=10_000, estimate=lambda m: -1),
        lambda: store.build_context("meta-cwd", budget=10_000, estimate=boom),  # raises
    ]

    def loop(n):
        for i in range(n):
            try:
                calls[i % len(calls)]()
            except (libsession.SessionError, ValueError):
                pass

    loop(20_000)  # warm up allocators and caches
    gc.collect()
    before = rss_bytes()
    loop(CALLS)
    gc.collect()
    growth = rss_bytes() - before
    store.close()
    assert growth < 1 << 20, "RSS grew by %d bytes over %d calls" % (growth, CALLS)
