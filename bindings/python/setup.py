"""Builds the `libsession` wheel: the Rust library (cargo) plus a thin cffi layer.

Why setuptools + cffi (ABI mode) rather than maturin/PyO3: libsession already has a C
ABI that C, C++ and Go use; the Python package binds that same ABI (`ffi.dlopen` of the
bundled `libsession.so`), so there is no Rust-side Python code, no second API to keep in
step, and nothing to compile against Python's headers. The wheel is tagged `py3-none-
<platform>`: one wheel serves every Python 3 version on a platform.

The build step (`build_py`):

1. runs `cargo build --release --lib` in the repository (the crate two folders up, or
   `LIBSESSION_SOURCE_DIR`), or takes a prebuilt library from `LIBSESSION_PREBUILT_LIB`;
2. copies `libsession.so` into the package (debug info stripped when `strip` exists);
3. extracts the cffi declarations from `include/session.h` (comments, include guards and
   the C++ `extern "C"` block removed; integer `#define`s kept) into
   `libsession/_session_cdef.h`, and checks that cffi parses them, so the declarations
   are the header's and cannot drift from it.
"""

import json
import os
import re
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py as _build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))


def source_dir():
    """The libsession crate: LIBSESSION_SOURCE_DIR or the repository around bindings/python."""
    root = os.environ.get("LIBSESSION_SOURCE_DIR") or os.path.normpath(os.path.join(HERE, "..", ".."))
    if not os.path.isfile(os.path.join(root, "Cargo.toml")) or not os.path.isfile(
        os.path.join(root, "include", "session.h")
    ):
        sys.exit(
            "libsession: cannot find the crate (Cargo.toml and include/session.h) at %s; "
            "build from a checkout of the repository or set LIBSESSION_SOURCE_DIR" % root
        )
    return root


def crate_version(root):
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        m = re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', f.read(), re.M | re.S)
    if not m:
        sys.exit("libsession: no [package] version in Cargo.toml")
    return m.group(1)


_CONDITIONALS = re.compile(r"#\s*(ifdef|ifndef|if|else|elif|endif)\b\s*(\S*)")
_INT_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)\s+(-?\d+)\s*$")


def cdef_from_header(text):
    """The declarations of session.h in the subset of C that cffi's cdef() accepts."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out, skipping = [], []
    for line in text.splitlines():
        stripped = line.strip()
        cond = _CONDITIONALS.match(stripped)
        if cond:
            kind, arg = cond.groups()
            if kind in ("ifdef", "ifndef"):
                # Only the C++ block is left out; the include guard's body is the header.
                skipping.append(kind == "ifdef" and arg == "__cplusplus")
            elif kind == "endif":
                skipping.pop()
            else:
                raise ValueError("session.h: unexpected conditional %r" % stripped)
            continue
        if any(skipping):
            continue
        if stripped.startswith("#"):
            m = _INT_DEFINE.match(stripped)
            if m:
                out.append("#define %s %s" % m.groups())
            continue
        if stripped:
            out.append(line.rstrip())
    return "\n".join(out) + "\n"


def run(cmd, cwd):
    print("libsession: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def build_library(root):
    """Path of a freshly built (or the prebuilt) libsession shared library."""
    prebuilt = os.environ.get("LIBSESSION_PREBUILT_LIB")
    if prebuilt:
        return prebuilt
    cargo = os.environ.get("CARGO", "cargo")
    if shutil.which(cargo) is None:
        sys.exit("libsession: building needs Rust's cargo (https://rustup.rs) on PATH")
    run([cargo, "build", "--release", "--lib", "--locked"], root)
    meta = subprocess.run(
        [cargo, "metadata", "--format-version", "1", "--no-deps"],
        cwd=root, check=True, stdout=subprocess.PIPE,
    )
    target = json.loads(meta.stdout)["target_directory"]
    name = {"darwin": "libsession.dylib", "win32": "session.dll"}.get(sys.platform, "libsession.so")
    return os.path.join(target, "release", name)


class build_py(_build_py):
    def run(self):
        super().run()
        root = source_dir()
        pkg = os.path.join(self.build_lib, "libsession")
        os.makedirs(pkg, exist_ok=True)

        with open(os.path.join(root, "include", "session.h"), encoding="utf-8") as f:
            cdef = cdef_from_header(f.read())
        import cffi  # a build requirement: fail here, not at import, on a bad declaration

        cffi.FFI().cdef(cdef)
        with open(os.path.join(pkg, "_session_cdef.h"), "w", encoding="utf-8") as f:
            f.write("/* Extracted from include/session.h by setup.py at build time; do not edit. */\n")
            f.write(cdef)

        lib = build_library(root)
        dest = os.path.join(pkg, "libsession.so")
        shutil.copyfile(lib, dest)
        os.chmod(dest, 0o755)
        if shutil.which("strip") and not os.environ.get("LIBSESSION_NO_STRIP"):
            subprocess.run(["strip", "--strip-debug", dest], check=True)


class BinaryDistribution(Distribution):
    """Holds a native library: a platform wheel, installed into platlib."""

    def has_ext_modules(self):
        return True


class bdist_wheel(_bdist_wheel):
    """A platform wheel that any Python 3 can load (no extension module, only cffi)."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(
    distclass=BinaryDistribution,
    version=crate_version(source_dir()),
    cmdclass={"build_py": build_py, "bdist_wheel": bdist_wheel},
)
