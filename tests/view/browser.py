"""What the browser tests and the benchmark share: headless chromium through
chromium-driver, pages written by `session view`, and the requests a page made."""
import json
import os
import shutil
import subprocess
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

SESSION = os.environ.get("SESSION_BIN", "session")
REPO = os.environ.get("SESSION_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))


def driver():
    """Headless chromium with its DevTools performance log (the Network events)."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,800", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


def workdir():
    return tempfile.mkdtemp(prefix="session-view-")


def write_jsonl(path, entries):
    with open(path, "w", encoding="utf-8") as f:
        for entry in entries:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def view(session_file, out_html, *leaf):
    """`session view FILE [LEAF] -o OUT`; returns the page's file:// URL."""
    if os.path.exists(out_html):
        os.remove(out_html)
    subprocess.run([SESSION, "view", session_file, *leaf, "-o", out_html], check=True)
    return "file://" + os.path.abspath(out_html)


def imported(source, out_jsonl):
    """`session import SRC OUT` (the report on stderr is not shown)."""
    subprocess.run([SESSION, "import", source, out_jsonl], check=True,
                   stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return out_jsonl


def requests(drv, page_url):
    """Every URL the browser asked for since the last call, other than the page itself
    and `data:` URLs (an image embedded in the session: no request leaves the page)."""
    urls = []
    for record in drv.get_log("performance"):
        message = json.loads(record["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if url != page_url and not url.startswith("data:"):
                urls.append(url)
    return urls
