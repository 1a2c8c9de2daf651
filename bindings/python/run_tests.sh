#!/usr/bin/env bash
# Python binding tests: a virtualenv under target/python-venv (scripts/venv.sh), `pip install
# ./bindings/python` (which runs `cargo build --release --lib` and bundles
# libsession.so into the wheel), then `python -m pytest` from bindings/python against the
# installed package (the src layout keeps the sources off sys.path). Needs python3 with
# the venv module (Debian: python3-venv) and
# PyPI for setuptools, cffi and pytest (pip's cache makes later runs offline-friendly).
#
#   bindings/python/run_tests.sh [pytest args...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${SESSION_PY_VENV:-$repo/target/python-venv}"
. "$repo/scripts/venv.sh"

step() { printf -- '-- %s\n' "$*"; }

venv_make "$venv"
step "pip install ./bindings/python   ($("$venv/bin/python" --version))"
venv_pip "$venv" "cffi>=1.15" pytest
# --force-reinstall: the version is the crate's and does not change between builds.
venv_pip "$venv" --force-reinstall --no-deps "$here"

step "cd bindings/python && python -m pytest   (as a Python user runs it)"
# The src layout keeps the sources out of sys.path here, so the tests import the
# installed package (test_package.py checks it) even from this folder.
cd "$here"
"$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
step "python -m pytest tests/test_postgres.py   (against a throwaway PostgreSQL cluster: tests/c/run_pg.sh)"
# 77: run_pg.sh found no PostgreSQL server binaries and said so; anything else fails.
"$repo/tests/c/run_pg.sh" "$venv/bin/python" -m pytest -p no:cacheprovider -q tests/test_postgres.py || [ $? = 77 ]
echo "PASS python binding"
