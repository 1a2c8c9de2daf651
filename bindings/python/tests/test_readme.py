"""The README's Python example runs and prints what the README says it prints."""

import contextlib
import io
import re

from conftest import REPO


def readme_example():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Using it from Python"):]
    section = section[: section.index("\n## ", 1)]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    printed = re.search(r"prints\n\n```text\n(.*?)```", section, re.S).group(1)
    return code, printed


def test_the_readme_python_example_prints_what_the_readme_shows(tmp_path, monkeypatch):
    code, printed = readme_example()
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue() == printed
    assert (tmp_path / "demo.jsonl").read_text(encoding="utf-8").count("\n") == 2
