"""The installed package: the bundled library, declarations that match the header, the
version, and type stubs that describe the runtime module."""

import ast
import os
import re

import libsession
from conftest import REPO

PKG = os.path.dirname(libsession.__file__)
HEADER = (REPO / "include" / "session.h").read_text(encoding="utf-8")


def header_functions():
    return set(re.findall(r"^[A-Za-z][\w \*]*?\b(session_\w+)\s*\(", HEADER, re.M))


def test_the_tests_import_the_installed_package_with_its_bundled_library():
    assert "site-packages" in PKG, PKG
    assert os.path.isfile(os.path.join(PKG, "libsession.so"))
    assert os.path.isfile(os.path.join(PKG, "py.typed"))
    assert os.path.isfile(os.path.join(PKG, "__init__.pyi"))


def test_every_function_of_the_header_is_declared_and_found_in_the_library():
    functions = header_functions()
    assert {"session_version", "session_store_append", "session_store_close"} <= functions
    with open(os.path.join(PKG, "_session_cdef.h"), encoding="utf-8") as f:
        cdef = f.read()
    declared = set(re.findall(r"\b(session_\w+)\s*\(", cdef))
    assert declared == functions
    for name in sorted(functions):
        assert getattr(libsession.lib, name) is not None, name


def test_every_constant_of_the_header_has_the_headers_value():
    constants = dict(re.findall(r"^#define (SESSION_\w+) (-?\d+)$", HEADER, re.M))
    assert "SESSION_ERR_TAINTED" in constants
    for name, value in constants.items():
        assert getattr(libsession.lib, name) == int(value), name
    for name, value in constants.items():
        if name.startswith("SESSION_ERR_"):
            code = name[len("SESSION_ERR_"):].lower()
            assert libsession.STATUS[code] == int(value)


def test_the_version_is_the_crates():
    cargo = (REPO / "Cargo.toml").read_text(encoding="utf-8")
    version = re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)
    assert libsession.__version__ == libsession.library_version() == version


def test_the_stubs_describe_names_that_exist_at_runtime():
    with open(os.path.join(PKG, "__init__.pyi"), encoding="utf-8") as f:
        stub = ast.parse(f.read())
    names = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {t.id for n in stub.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in names if not n.startswith("_")}
    error_classes = {
        n.name: re.sub(r"(?<!^)([A-Z])", r"_\1", n.name).lower()
        for n in stub.body
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") == "SessionError" for b in n.bases)
    }
    header_codes = {c[len("SESSION_ERR_"):].lower() for c in re.findall(r"^#define (SESSION_ERR_\w+) ", HEADER, re.M)}
    assert set(error_classes.values()) >= header_codes  # the stub names every status
    for name in public:
        if error_classes.get(name, "") not in header_codes and name in error_classes:
            continue  # a status of a later header than this library was built from
        assert hasattr(libsession, name), name
    # Every public name of the runtime module but the error classes of statuses added
    # after the stub (reached through the stub's module __getattr__) is in the stub.
    runtime = {n for n in libsession.__all__ if not (
        isinstance(getattr(libsession, n), type) and issubclass(getattr(libsession, n), libsession.SessionError)
    )}
    assert runtime <= public
    stub_store = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Store")
    methods = {n.name for n in stub_store.body if isinstance(n, ast.FunctionDef)}
    runtime_methods = {n for n in vars(libsession.Store) if not n.startswith("_")}
    assert runtime_methods == methods - {"__enter__", "__exit__"}
