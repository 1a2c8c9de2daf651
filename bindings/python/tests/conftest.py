"""Shared fixtures: the chapter's example session (examples/tiny-pi.jsonl)."""

import json
import pathlib

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


@pytest.fixture
def chapter_file(tmp_path):
    """A session file holding the chapter's six entries."""
    path = tmp_path / "chapter.jsonl"
    path.write_text("".join(line + "\n" for line in CHAPTER), encoding="utf-8")
    return path
