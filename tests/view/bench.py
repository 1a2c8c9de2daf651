"""How long a page of a large session takes to open in headless chromium: a figure,
not a test. Writes a session of N entries (default 100000: user, assistant with a
tool call, tool result, repeated, with a side branch every 100 entries), runs
`session view` on it, opens the page from disk and prints the page's size against the
session's and the time until the page's script has drawn the tree and the first chunk
of the branch (its performance mark `session-drawn`, counted from the navigation's
start; a page without the mark, from before it, is drawn when its
domContentLoadedEventEnd comes), then the time to choose a node near the end and to
search the branch. With --before BIN, the page `BIN view` writes of the same session
is opened in turn with it, for figures side by side in one run.

    tests/view/run.sh --bench [N] [--before BIN]
"""
import os
import shutil
import subprocess
import sys
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import browser


def session(n):
    entries, parent, i = [], None, 0
    while len(entries) < n:
        k = len(entries)
        if k % 3 == 0:
            e = dict(type="message", message=dict(role="user", content="question %d: what is in src/file%d.rs?" % (i, i)))
        elif k % 3 == 1:
            e = dict(type="message", message=dict(role="assistant", content=[
                {"type": "text", "text": "Let me **read** `src/file%d.rs`." % i},
                {"type": "toolCall", "id": "call-%d" % i, "name": "read", "arguments": {"path": "src/file%d.rs" % i}}]))
        else:
            e = dict(type="message", message=dict(role="toolResult", toolCallId="call-%d" % i, toolName="read",
                                                  content=[{"type": "text", "text": "fn main() {}\n" * 5}], isError=False))
            i += 1
        e.update(id="e%d" % k, parentId=parent, timestamp=1733000000000 + k)
        entries.append(e)
        if k % 100 == 99 and len(entries) < n:
            entries.append(dict(id="s%d" % k, parentId=parent, timestamp=1733000000000 + k, type="message",
                                message=dict(role="user", content="a side branch")))
        parent = e["id"]
    return entries[:n]


def drawn(drv):
    """[until drawn, file read, HTML parse with the inline script, the script's own
    marks] in ms."""
    return drv.execute_script(
        "var t = performance.getEntriesByType('navigation')[0],"
        " m = function (name) { var e = performance.getEntriesByName(name)[0]; return e ? e.startTime : null; };"
        "return [m('session-drawn') || t.domContentLoadedEventEnd, t.responseEnd, t.domInteractive - t.responseEnd,"
        " [m('session-inflated'), m('session-parsed')]]")


def open_page(drv, url):
    drv.get("about:blank")
    t = time.perf_counter()
    drv.get(url)
    WebDriverWait(drv, 60).until(lambda d: d.execute_script("return document.body.dataset.ready"))
    wall = time.perf_counter() - t
    return drawn(drv) + [wall * 1000]


def main():
    args = sys.argv[1:]
    before = None
    if "--before" in args:
        k = args.index("--before")
        before = args[k + 1]
        del args[k:k + 2]
    n = int(args[0]) if args else 100000
    work = browser.workdir()
    try:
        run(work, n, before)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # about 50 MB at 100,000 entries


def run(work, n, before):
    jsonl, html = os.path.join(work, "big.jsonl"), os.path.join(work, "big.html")
    browser.write_jsonl(jsonl, session(n))
    pages = []
    for label, binary, out in (("before", before, os.path.join(work, "before.html")),
                               ("now", browser.SESSION, html)):
        if binary is None:
            continue
        t = time.perf_counter()
        if os.path.exists(out):
            os.remove(out)
        subprocess.run([binary, "view", jsonl, "-o", out], check=True)
        written = time.perf_counter() - t
        print("%-6s entries %d, JSONL %.1f MB, page %.1f MB (%.2fx the session), session view %.2f s (%s build)" % (
            label, n, os.path.getsize(jsonl) / 1e6, os.path.getsize(out) / 1e6,
            os.path.getsize(out) / os.path.getsize(jsonl), written, "debug" if "/debug/" in binary else "release"))
        pages.append((label, "file://" + os.path.abspath(out)))
    drv = browser.driver()
    try:
        for attempt in range(3):
            for label, page_url in pages:
                until, read, parse, (inflated, parsed), wall = open_page(drv, page_url)
                after = "after it %.0f ms" % (until - read - parse)
                if inflated is not None and parsed is not None:
                    after += ": inflated at %.0f ms, JSON parsed at %.0f ms" % (inflated, parsed)
                print("%-6s open #%d: %.0f ms until the page is drawn (file read %.0f ms, HTML parse with the"
                      " inline script %.0f ms, %s), %.0f ms wall"
                      % (label, attempt + 1, until, read, parse, after, wall))
        # The last page opened is this build's: the figures below are of it.
        rows = len(drv.find_elements(By.CSS_SELECTOR, "#rows .row"))
        shown = len(drv.find_elements(By.CSS_SELECTOR, "#messages [data-id]"))
        print("DOM: %d tree rows, %d messages drawn (of %d entries)" % (rows, shown, n))
        # The tree lists the main chain first (depth-first, first child first), one row
        # per entry, then the side branches.
        entries = session(n)
        chain = [e["id"] for e in entries if e["id"].startswith("e")]
        target = chain[-50]
        fraction = (len(chain) - 50) / len(entries)
        t = time.perf_counter()
        drv.execute_script("var t = document.getElementById('tree');"
                           "t.scrollTop = t.scrollHeight * arguments[0] - t.clientHeight / 2", fraction)
        WebDriverWait(drv, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, '#rows .row[data-id="%s"]' % target))
        drv.find_element(By.CSS_SELECTOR, '#rows .row[data-id="%s"]' % target).click()
        WebDriverWait(drv, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, '#messages .focus'))
        print("scroll the tree to %s (near the end of the main branch) and choose it: %.0f ms"
              % (target, (time.perf_counter() - t) * 1000))
        t = time.perf_counter()
        drv.find_element(By.ID, "search").send_keys("file777.rs")
        WebDriverWait(drv, 30).until(lambda d: "matching" in d.find_element(By.ID, "info").text)
        print("search the branch: %.0f ms (including the 150 ms typing pause): %s"
              % ((time.perf_counter() - t) * 1000, drv.find_element(By.ID, "info").text))
    finally:
        drv.quit()


if __name__ == "__main__":
    main()
