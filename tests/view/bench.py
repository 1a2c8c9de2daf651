"""How long a page of a large session takes to open in headless chromium: a figure,
not a test. Writes a session of N entries (default 100000: user, assistant with a
tool call, tool result, repeated, with a side branch every 100 entries), runs
`session view` on it, opens the page from disk and prints the time until the page's
script has drawn the tree and the first chunk of the branch (the navigation's
domContentLoadedEventEnd: the script runs before it), then the time to choose a node
near the end and to search the branch.

    tests/view/run.sh --bench [N]
"""
import os
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


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    work = browser.workdir()
    jsonl, html = os.path.join(work, "big.jsonl"), os.path.join(work, "big.html")
    browser.write_jsonl(jsonl, session(n))
    t = time.perf_counter()
    url = browser.view(jsonl, html)
    written = time.perf_counter() - t
    print("entries %d, JSONL %.1f MB, page %.1f MB, session view %.2f s (%s build)" % (
        n, os.path.getsize(jsonl) / 1e6, os.path.getsize(html) / 1e6, written,
        "debug" if "/debug/" in browser.SESSION else "release"))
    drv = browser.driver()
    try:
        for attempt in range(3):
            drv.get("about:blank")
            t = time.perf_counter()
            drv.get(url)
            WebDriverWait(drv, 60).until(lambda d: d.execute_script("return document.body.dataset.ready"))
            wall = time.perf_counter() - t
            nav = drv.execute_script(
                "var t = performance.getEntriesByType('navigation')[0];"
                "return [t.responseEnd, t.domInteractive, t.domContentLoadedEventEnd]")
            print("open #%d: %.0f ms until the page is drawn (domContentLoadedEventEnd: file read %.0f ms,"
                  " HTML parse with the inline script %.0f ms, after it %.0f ms), %.0f ms wall"
                  % (attempt + 1, nav[2], nav[0], nav[1] - nav[0], nav[2] - nav[1], wall * 1000))
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
