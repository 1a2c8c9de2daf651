"""secrets and redact (issue 36): a key found without being shown, redacted in a copy
and in place; an invalid rule named."""

import random
import string

import pytest

import libsession


def _fake_openai_key():
    # Built at run time, so that no source file holds a string that looks like a key.
    rng = random.Random(99)
    alphabet = string.ascii_letters + string.digits + "-_"
    return "sk-proj-" + "".join(rng.choice(alphabet) for _ in range(100))


def _line(text):
    return (
        '{"id":"u-1","parentId":null,"timestamp":1,"type":"message",'
        '"message":{"role":"user","content":"%s"}}\n' % text
    )


def test_secrets_finds_a_key_and_redact_removes_it(tmp_path):
    key = _fake_openai_key()
    src = tmp_path / "s.jsonl"
    src.write_text(_line("key " + key), encoding="utf-8")

    found = libsession.secrets(tmp_path)
    assert [(f["path"], f["entryId"], f["pointer"], f["rule"]) for f in found["findings"]] == [
        ("s.jsonl", "u-1", "/message/content", "openai-api-key")
    ]
    assert len(found["findings"][0]["fingerprint"]) == 12
    assert key not in libsession.secrets(src, raw=True)
    assert libsession.secrets(src, allow=[key])["findings"] == []

    dst = tmp_path / "out.jsonl"
    done = libsession.redact(src, dst)
    assert done["redactions"] == 1
    assert dst.read_text(encoding="utf-8") == _line("key [REDACTED:openai-api-key]")

    libsession.redact(src, in_place=True)
    assert src.read_bytes() == dst.read_bytes()


def test_an_invalid_rule_is_refused_by_name(tmp_path):
    (tmp_path / "s.jsonl").write_text(_line("x"), encoding="utf-8")
    with pytest.raises(libsession.InvalidArgument) as refused:
        libsession.secrets(tmp_path, extra_rules=[{"name": "mine", "pattern": "(hunter2"}])
    assert "mine" in str(refused.value) and "hunter2" not in str(refused.value)
