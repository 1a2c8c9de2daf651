# The one way a test script of this repository makes its Python virtualenv: sourced
# (not run) by bindings/python/run_tests.sh and tests/view/run.sh. Needs python3 with
# the venv module (Debian: python3-venv); pip reaches PyPI for what venv_pip installs.
#
#   venv_make DIR        makes the virtualenv DIR with $PYTHON (default python3),
#                        unless DIR already holds one
#   venv_pip DIR ARGS... pip install ARGS into the virtualenv DIR, quietly

venv_make() {
  local dir="$1" python="${PYTHON:-python3}"
  [ -x "$dir/bin/python" ] && return 0
  "$python" -m venv "$dir" || {
    echo "$0: '$python -m venv' failed (Debian: apt-get install python3-venv)" >&2
    return 1
  }
}

venv_pip() {
  local dir="$1"
  shift
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}
