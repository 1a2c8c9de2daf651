#!/usr/bin/env bash
# The session view in a real browser: builds the `session` tool, then drives Debian's
# headless chromium through chromium-driver with Selenium (from PyPI, in a virtualenv
# under target/view-venv made by scripts/venv.sh, as bindings/python/run_tests.sh's), on pages
# written by `session view` from examples/tiny-pi.jsonl, from a hand-made hostile session
# and from a Claude Code, a Codex and a pi file of tests/interop/corpus/, imported. Needs chromium,
# chromium-driver and python3 with venv (scripts/prereqs.sh installs them).
#
#   tests/view/run.sh [pytest args...]   the browser tests (a few seconds)
#   tests/view/run.sh --bench [N]        prints how long a page of N entries (100000)
#                                        takes to open in the browser; not a test
#   tests/view/run.sh --screenshots      rewrites docs/images/view-*.png (the README's)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${SESSION_VIEW_VENV:-$repo/target/view-venv}"
. "$repo/scripts/venv.sh"

step() { printf -- '-- %s\n' "$*"; }

for tool in chromium chromedriver; do
  command -v "$tool" >/dev/null || {
    echo "tests/view/run.sh: $tool not found (Debian: apt-get install chromium chromium-driver)" >&2
    exit 1
  }
done
venv_make "$venv"
step "pip install selenium pytest   ($("$venv/bin/python" --version))"
venv_pip "$venv" "selenium>=4.10" pytest

step "cargo build --bin session"
(cd "$repo" && cargo build --quiet --bin session)
export SESSION_BIN="$repo/target/debug/session"
export SESSION_REPO="$repo"

if [ "${1:-}" = "--bench" ]; then
  shift
  exec "$venv/bin/python" "$here/bench.py" "$@"
fi
if [ "${1:-}" = "--screenshots" ]; then
  exec "$venv/bin/python" "$here/screenshots.py"
fi
step "pytest tests/view   (chromium $(chromium --version 2>/dev/null | awk '{print $2}'))"
cd "$here"
"$venv/bin/python" -m pytest -p no:cacheprovider -q test_view.py "$@"
echo "PASS session view in chromium"
