"""Shared fixtures: the chapter's example session (examples/tiny-pi.jsonl)."""

import json
import pathlib
import threading

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
CHAPTER_FILE = REPO / "examples" / "tiny-pi.jsonl"
# The six entries of the chapter's tree, as the lines of the example file.
CHAPTER = CHAPTER_FILE.read_text(encoding="utf-8").splitlines()
ENTRIES = [json.loads(line) for line in CHAPTER]


def entry(id, parent, **extra):
    """A small message entry (a user message for a root or when asked, else assistant text)."""
    role = extra.pop("role", "user" if parent is None else "assistant")
    content = "hi" if role == "user" else [{"type": "text", "text": "ok"}]
    e = {
        "id": id,
        "parentId": parent,
        "timestamp": 1,
        "type": "message",
        "message": {"role": role, "content": content},
    }
    e.update(extra)
    return e


def run_threads(work, count):
    """Runs work(0) … work(count - 1) each on its own thread, all at once, and fails the
    test with the exceptions any of them raised."""
    errors = []

    def guarded(t):
        try:
            work(t)
        except BaseException as exc:  # reported by the calling thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


@pytest.fixture
def chapter_file(tmp_path):
    """A session file holding the chapter's six entries."""
    path = tmp_path / "chapter.jsonl"
    path.write_text("".join(line + "\n" for line in CHAPTER), encoding="utf-8")
    return path
