"""The README's pictures of the session view, made in headless chromium (1280x800):
docs/images/view-tiny.png from examples/tiny-pi.jsonl and docs/images/view-claude-code.png
from a short Claude Code transcript of tests/interop/corpus/ (spotter-short.jsonl,
sanitized by its owner), imported with `session import`. Not a test. The tiny example
is in Chinese: chromium needs a CJK font (Debian: fonts-wqy-microhei) or it draws boxes.

    tests/view/run.sh --screenshots
"""
import os

from selenium.webdriver.support.ui import WebDriverWait

import browser

PAGES = [
    ("view-tiny.png", os.path.join("examples", "tiny-pi.jsonl"), False),
    ("view-claude-code.png", os.path.join("tests", "interop", "corpus", "claude-code", "spotter-short.jsonl"), True),
]


def main():
    work = browser.workdir()
    out_dir = os.path.join(browser.REPO, "docs", "images")
    os.makedirs(out_dir, exist_ok=True)
    drv = browser.driver()
    try:
        for name, source, claude in PAGES:
            source = os.path.join(browser.REPO, source)
            if claude:
                source = browser.imported(source, os.path.join(work, os.path.basename(source)))
            url = browser.view(source, os.path.join(work, name + ".html"))
            drv.get(url)
            WebDriverWait(drv, 10).until(lambda d: d.execute_script("return document.body.dataset.ready"))
            out = os.path.join(out_dir, name)
            drv.save_screenshot(out)
            print("%s: %d bytes" % (os.path.relpath(out, browser.REPO), os.path.getsize(out)))
    finally:
        drv.quit()


if __name__ == "__main__":
    main()
