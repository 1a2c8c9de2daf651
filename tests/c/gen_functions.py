#!/usr/bin/env python3
"""Generates the list of every function session.h declares, as X-macros for C tests.

    gen_functions.py include/session.h OUT.h

CMake runs it whenever the header changes, so a function added to the library is in the
list (and in the tests that iterate it: the C99 prototype check, the NULL-argument sweep)
without anyone editing a table. For each function it emits

    X(return type, name, (parameters), pointer count, (call arguments), (optional mask),
      "pointer,parameter,names")

where each pointer parameter p (the i-th pointer) becomes P(i, p) and each other
parameter s becomes S(s) in the call arguments, and OPT(i, p) in the optional mask. The
test defines P, S and OPT; a parameter name it has no value for is a compile error that
names it, so a new kind of argument cannot be skipped silently.

SESSION_FOR_EACH_STATUS_FUNCTION lists the functions returning SessionStatus;
SESSION_FOR_EACH_OTHER_FUNCTION the rest; SESSION_FOR_EACH_FUNCTION both.
"""
import re
import sys

POINTER_TYPEDEFS = {"SessionTokenEstimator", "SessionProgress"}  # function pointer typedefs


def declarations(header):
    text = re.sub(r"/\*.*?\*/", " ", header, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    pattern = re.compile(
        r"(?:^|[;}]\s*|\n)\s*((?:const\s+)?[A-Za-z_][A-Za-z0-9_]*(?:\s*\*)*)\s*"
        r"\b(session_[a-z0-9_]+)\s*\(([^()]*)\)\s*;"
    )
    for m in pattern.finditer(text):
        ret = " ".join(m.group(1).split())
        name = m.group(2)
        params = " ".join(m.group(3).split())
        yield ret, name, params


def parameters(params):
    if params in ("", "void"):
        return []
    out = []
    for p in params.split(","):
        p = p.strip()
        m = re.match(r"(.*?)([A-Za-z_][A-Za-z0-9_]*)$", p)
        if not m:
            sys.exit(f"gen_functions.py: cannot read parameter {p!r}")
        ptype, pname = m.group(1).strip(), m.group(2)
        is_pointer = "*" in ptype or ptype in POINTER_TYPEDEFS
        out.append((ptype, pname, is_pointer))
    return out


def entry(ret, name, params):
    args, optional, names = [], [], []
    i = 0
    for _, pname, is_pointer in parameters(params):
        if is_pointer:
            args.append(f"P({i}, {pname})")
            optional.append(f"OPT({i}, {pname})")
            names.append(pname)
            i += 1
        else:
            args.append(f"S({pname})")
    mask = " | ".join(optional) if optional else "0"
    return (f"X({ret}, {name}, ({params or 'void'}), {i}, ({', '.join(args)}), ({mask}), "
            f"\"{','.join(names)}\")")


def macro(name, entries):
    lines = [f"#define {name}(X)"] + [f"    {e}" for e in entries]
    return " \\\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        found = list(declarations(f.read()))
    if not found:
        sys.exit(f"gen_functions.py: no session_* function found in {sys.argv[1]}")
    status = [entry(*d) for d in found if d[0] == "SessionStatus"]
    other = [entry(*d) for d in found if d[0] != "SessionStatus"]
    out = [
        "/* Generated from session.h by tests/c/gen_functions.py at build time; do not edit. */\n",
        "#ifndef LIBSESSION_TEST_FUNCTIONS_H\n#define LIBSESSION_TEST_FUNCTIONS_H\n\n",
        f"#define SESSION_FUNCTION_COUNT {len(found)}\n\n",
        macro("SESSION_FOR_EACH_STATUS_FUNCTION", status), "\n",
        macro("SESSION_FOR_EACH_OTHER_FUNCTION", other), "\n",
        "#define SESSION_FOR_EACH_FUNCTION(X) \\\n"
        "    SESSION_FOR_EACH_STATUS_FUNCTION(X) SESSION_FOR_EACH_OTHER_FUNCTION(X)\n\n",
        "#endif\n",
    ]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()
