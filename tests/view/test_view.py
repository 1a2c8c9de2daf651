"""The session view in a real headless chromium: what a person sees, clicking another
branch, expanding a tool result, searching, hostile text that must stay text, and no
network request of any kind. One browser for the module; the pages are opened from disk
(file://), as a person opens a shared file."""
import json
import os

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import browser

INJECT_SCRIPT = "</script><script>window.pwned=1;alert(1)</script>"
INJECT_IMG = '<img src=x onerror="window.pwned=2;alert(2)">'
LONG_RESULT = "\n".join("line %d" % i for i in range(1, 41))


def entry(id, parent, ts, **rest):
    return dict(id=id, parentId=parent, timestamp=1733000000000 + ts * 1000, **rest)


def message(id, parent, ts, role, content, **extra):
    return entry(id, parent, ts, type="message", message=dict(role=role, content=content, **extra))


# The b-branch first, so that the latest leaf (the last line) is a2 on the main branch.
HOSTILE = [
    message("r", None, 0, "user", "Start " + INJECT_SCRIPT),
    message("b1", "r", 1, "assistant", [{"type": "text", "text": "the other branch"}]),
    message("bu", "b1", 2, "user", "second question"),
    message("ba", "bu", 3, "assistant", [{"type": "text", "text": "second answer"}]),
    entry("bc", "ba", 4, type="compaction", summary="**Summary** of the other branch",
          firstKeptEntryId="bu", tokensBefore=1000),
    message("a1", "r", 5, "assistant", [
        {"type": "thinking", "thinking": "secret plan"},
        {"type": "text", "text": "Look: " + INJECT_IMG + " and [click](javascript:alert(3))"
                                 " and [docs](https://example.com/docs), **bold** `code`"},
        {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {"command": "seq 1 40"}},
    ]),
    message("t1", "a1", 6, "toolResult", [{"type": "text", "text": LONG_RESULT}],
            toolCallId="call-1", toolName="bash", isError=False),
    entry("m1", "t1", 7, type="metadata", key="cwd", value="/work"),
    message("a2", "m1", 8, "assistant", [{"type": "text", "text": "all done"}]),
]


# The same session after a root of its own with 300 long messages: over the size from
# which the page carries the entries deflated, for the browser to inflate.
FILLER = [message("f%d" % i, "f%d" % (i - 1) if i else None, 0, "user", "filler %d " % i + "x" * 1000)
          for i in range(300)]
DEFLATED = FILLER + HOSTILE


@pytest.fixture(scope="module")
def drv():
    d = browser.driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def pages():
    work = browser.workdir()
    hostile = os.path.join(work, "hostile.jsonl")
    browser.write_jsonl(hostile, HOSTILE)
    deflated = os.path.join(work, "deflated.jsonl")
    browser.write_jsonl(deflated, DEFLATED)
    tiny = os.path.join(browser.REPO, "examples", "tiny-pi.jsonl")
    corpus = os.path.join(browser.REPO, "tests", "interop", "corpus")
    claude = browser.imported(
        os.path.join(corpus, "claude-code", "spotter-tool_heavy.jsonl"),
        os.path.join(work, "claude.jsonl"))
    codex = browser.imported(os.path.join(corpus, "codex", "agentsessions-codex-small.jsonl"),
                             os.path.join(work, "codex.jsonl"))
    pi = browser.imported(os.path.join(corpus, "pi", "pimono-compact.jsonl"), os.path.join(work, "pi.jsonl"))
    # Their branch of the last message: an import ends with a report entry on the root
    # (`pi.unmapped`), which is then the latest leaf.
    return {
        "codex": browser.view(codex, os.path.join(work, "codex.html"), last_message(codex)),
        "pi": browser.view(pi, os.path.join(work, "pi.html"), last_message(pi)),
        "tiny": browser.view(tiny, os.path.join(work, "tiny.html")),
        "hostile": browser.view(hostile, os.path.join(work, "hostile.html")),
        "deflated": browser.view(deflated, os.path.join(work, "deflated.html")),
        "claude": browser.view(claude, os.path.join(work, "claude.html")),
    }


def last_message(session_file):
    with open(session_file, encoding="utf-8") as f:
        return [e["id"] for e in map(json.loads, f) if e.get("type") == "message"][-1]


def open_page(drv, url):
    drv.get(url)
    WebDriverWait(drv, 10).until(lambda d: d.execute_script("return document.body.dataset.ready"))
    assert_no_alert(drv)


def assert_no_alert(drv):
    with pytest.raises(NoAlertPresentException):
        drv.switch_to.alert.text


def shown_ids(drv):
    return [e.get_attribute("data-id") for e in drv.find_elements(By.CSS_SELECTOR, "#messages [data-id]")]


def row(drv, id):
    return drv.find_element(By.CSS_SELECTOR, '#rows .row[data-id="%s"]' % id)


def expand(drv, details):
    """Opens a collapsed <details> by clicking its summary, and waits until its body is
    built: the page builds it on the details' toggle event, which the browser fires as a
    task of its own after the click has returned (asserting at once fails now and then)."""
    details.find_element(By.TAG_NAME, "summary").click()
    WebDriverWait(drv, 5).until(lambda d: len(details.find_elements(By.XPATH, "./*")) > 1)


def test_the_tiny_example_shows_its_tree_and_the_latest_branch(drv, pages):
    open_page(drv, pages["tiny"])
    rows = drv.find_elements(By.CSS_SELECTOR, "#rows .row")
    assert [r.get_attribute("data-id") for r in rows] == \
        ["u-1", "a-read", "r-read", "a-final", "meta-cwd", "a-alt"]
    assert "chosen" in row(drv, "meta-cwd").get_attribute("class")
    assert "latest" in row(drv, "meta-cwd").text
    # The tool result is shown with its call, not as a message of its own.
    assert shown_ids(drv) == ["u-1", "a-read", "a-final", "meta-cwd"]
    messages = drv.find_element(By.ID, "messages").text
    assert "项目名是 tiny-pi" in messages and "A tiny coding agent." in messages
    assert "我无法读取该文件" not in messages
    assert drv.find_element(By.ID, "messages").is_displayed()


def test_clicking_a_node_on_another_branch_shows_that_branch(drv, pages):
    open_page(drv, pages["tiny"])
    row(drv, "a-alt").click()
    WebDriverWait(drv, 5).until(lambda d: "a-alt" in shown_ids(d))
    assert shown_ids(drv) == ["u-1", "a-alt"]
    assert "我无法读取该文件" in drv.find_element(By.ID, "messages").text
    assert "chosen" in row(drv, "a-alt").get_attribute("class")
    assert "path" in row(drv, "u-1").get_attribute("class")
    assert "path" not in row(drv, "a-read").get_attribute("class")


def test_clicking_a_tool_result_in_the_tree_marks_the_call_it_is_shown_with(drv, pages):
    open_page(drv, pages["hostile"])
    row(drv, "t1").click()
    WebDriverWait(drv, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#messages .focus"))
    assert [e.get_attribute("data-id") for e in drv.find_elements(By.CSS_SELECTOR, "#messages .focus")] == ["a1"]


def test_a_long_tool_result_is_collapsed_and_expands(drv, pages):
    open_page(drv, pages["hostile"])
    result = drv.find_element(By.CSS_SELECTOR, '[data-id="a1"] details.result')
    assert result.get_attribute("open") is None
    assert "line 40" not in result.text
    expand(drv, result)
    pre = result.find_element(By.TAG_NAME, "pre")
    assert pre.is_displayed() and "line 40" in pre.text
    thinking = drv.find_element(By.CSS_SELECTOR, '[data-id="a1"] details.thinking')
    assert "secret plan" not in thinking.text


def page_text(url):
    with open(url[len("file://"):], encoding="utf-8") as f:
        return f.read()


def test_a_large_session_is_carried_deflated_and_a_small_one_as_plain_json(pages):
    small, large = page_text(pages["hostile"]), page_text(pages["deflated"])
    assert '"entries":[' in small and '"entriesDeflate"' not in small
    assert '"entriesDeflate":"' in large and '"entries":[' not in large
    assert "filler 1 " not in large and "second answer" not in large
    assert len(large) < sum(len(json.dumps(e)) for e in DEFLATED) / 5


def test_a_deflated_page_shows_every_entry(drv, pages):
    open_page(drv, pages["deflated"])
    stats = drv.find_element(By.ID, "stats").text
    assert stats.startswith("%d entries \u00b7 3 leaves \u00b7 2 roots" % len(DEFLATED)), stats
    assert shown_ids(drv) == ["r", "a1", "m1", "a2"]
    row(drv, "bc").click()
    WebDriverWait(drv, 5).until(lambda d: "bc" in shown_ids(d))
    assert shown_ids(drv) == ["bu", "ba", "bc"]
    drv.execute_script("document.getElementById('tree').scrollTop = 0")
    WebDriverWait(drv, 5).until(lambda d: d.find_elements(By.CSS_SELECTOR, '#rows .row[data-id="f0"]'))
    row(drv, "f0").click()
    WebDriverWait(drv, 5).until(lambda d: len(shown_ids(d)) == 150)
    assert shown_ids(drv)[:2] == ["f0", "f1"]
    assert "filler 0 " + "x" * 1000 in drv.find_element(By.CSS_SELECTOR, '#messages [data-id="f0"]').text


def test_a_browser_without_decompression_says_it_cannot_read_a_deflated_page(drv, pages):
    added = drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                {"source": "delete window.DecompressionStream;"})
    try:
        open_page(drv, pages["deflated"])
        assert drv.find_elements(By.CSS_SELECTOR, "#rows .row") == []
        assert drv.find_element(By.CSS_SELECTOR, "body > .empty").text == (
            "The session could not be read: this browser has no DecompressionStream"
            " (Chrome 80, Firefox 113, Safari 16.4 and later have it)")
        open_page(drv, pages["hostile"])  # a small page needs no DecompressionStream
        assert shown_ids(drv) == ["r", "a1", "m1", "a2"]
    finally:
        drv.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", added)


@pytest.mark.parametrize("name", ["hostile", "deflated"])
def test_injected_markup_and_scripts_never_run(drv, pages, name):
    open_page(drv, pages[name])
    assert drv.execute_script("return window.pwned") is None
    assert drv.find_elements(By.CSS_SELECTOR, "img") == []
    assert len(drv.find_elements(By.TAG_NAME, "script")) == 2
    text = drv.find_element(By.ID, "messages").text
    assert INJECT_SCRIPT in text and INJECT_IMG in text
    assert_no_alert(drv)


def test_a_javascript_link_stays_text_and_an_https_link_is_a_link(drv, pages):
    open_page(drv, pages["hostile"])
    links = drv.find_elements(By.CSS_SELECTOR, "#messages a")
    assert [a.get_attribute("href") for a in links] == ["https://example.com/docs"]
    assert "[click](javascript:alert(3))" in drv.find_element(By.ID, "messages").text
    assert drv.find_elements(By.CSS_SELECTOR, '[data-id="a1"] strong')[0].text == "bold"


@pytest.mark.parametrize("name", ["hostile", "deflated"])
def test_a_compaction_shows_its_summary_and_folds_what_it_replaced(drv, pages, name):
    open_page(drv, pages[name])
    row(drv, "bc").click()
    WebDriverWait(drv, 5).until(lambda d: "bc" in shown_ids(d))
    assert shown_ids(drv) == ["bu", "ba", "bc"]
    folded = drv.find_element(By.CSS_SELECTOR, "#messages details.folded")
    assert "2 entries replaced by a compaction" in folded.text
    expand(drv, folded)
    assert shown_ids(drv) == ["r", "b1", "bu", "ba", "bc"]
    summary = drv.find_element(By.CSS_SELECTOR, '[data-id="bc"] strong')
    assert summary.text == "Summary"


@pytest.mark.parametrize("name", ["hostile", "deflated"])
def test_the_search_box_filters_the_branch(drv, pages, name):
    open_page(drv, pages[name])
    drv.find_element(By.ID, "search").send_keys("all done")
    WebDriverWait(drv, 5).until(lambda d: shown_ids(d) == ["a2"])
    assert "1 matching" in drv.find_element(By.ID, "info").text


def test_an_imported_claude_code_session_renders(drv, pages):
    open_page(drv, pages["claude"])
    assert len(drv.find_elements(By.CSS_SELECTOR, "#rows .row")) > 10
    assert len(drv.find_elements(By.CSS_SELECTOR, "#messages .msg.user")) >= 1
    assert len(drv.find_elements(By.CSS_SELECTOR, "#messages .msg.assistant")) >= 1
    assert len(drv.find_elements(By.CSS_SELECTOR, "#messages .tool")) >= 1
    severe = [r for r in drv.get_log("browser") if r["level"] == "SEVERE"]
    assert severe == [], "%d console errors" % len(severe)


@pytest.mark.parametrize("name", ["codex", "pi"])
def test_imported_codex_and_pi_sessions_render_without_a_console_error(drv, pages, name):
    open_page(drv, pages[name])
    assert len(drv.find_elements(By.CSS_SELECTOR, "#rows .row")) > 10
    assert len(drv.find_elements(By.CSS_SELECTOR, "#messages .msg.user")) >= 1
    assert len(drv.find_elements(By.CSS_SELECTOR, "#messages .msg.assistant")) >= 1
    severe = [r for r in drv.get_log("browser") if r["level"] == "SEVERE"]
    assert severe == [], "%d console errors" % len(severe)


@pytest.mark.parametrize("name", ["tiny", "hostile", "deflated", "claude", "codex", "pi"])
def test_no_page_makes_a_network_request(drv, pages, name):
    browser.requests(drv, None)  # forget what earlier tests did
    open_page(drv, pages[name])
    for id in ("a-alt", "bc", None):
        found = drv.find_elements(By.CSS_SELECTOR, '#rows .row[data-id="%s"]' % id) if id else \
            drv.find_elements(By.CSS_SELECTOR, "#rows .row")[-1:]
        for r in found:
            r.click()
    for d in drv.find_elements(By.CSS_SELECTOR, "#messages details"):
        drv.execute_script("arguments[0].open = true", d)
    assert drv.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert browser.requests(drv, pages[name]) == []
    severe = [r for r in drv.get_log("browser") if r["level"] == "SEVERE"]
    assert severe == [], "%d console errors (a CSP violation is one)" % len(severe)
