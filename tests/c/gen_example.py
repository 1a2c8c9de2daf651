#!/usr/bin/env python3
"""Turns examples/tiny-pi.jsonl into C string literals for the C tests.

    gen_example.py examples/tiny-pi.jsonl OUT.h

CMake runs it whenever the example changes, so the C tests append the very bytes of the
checked-in example session (the tree of docs/contract.md section 1) rather than a copy
typed by hand. OUT.h defines SESSION_EXAMPLE_LINE_COUNT and session_example_lines[], one
string per line without its newline.
"""
import sys


def c_literal(line):
    """The body of a C string literal holding `line`'s UTF-8 bytes exactly."""
    out = bytearray()
    for byte in line.encode("utf-8"):
        if byte in b'"\\':
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\%03o" % byte  # octal: at most three digits, never runs on
        else:
            out.append(byte)  # ASCII and UTF-8 sequences as they are (sources are UTF-8)
    return out.decode("utf-8")


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = ",\n".join('    "%s"' % c_literal(line) for line in lines)
    header = (
        "/* Generated from examples/tiny-pi.jsonl by tests/c/gen_example.py: do not edit. */\n"
        "#ifndef SESSION_EXAMPLE_H\n#define SESSION_EXAMPLE_H\n\n"
        "#define SESSION_EXAMPLE_LINE_COUNT %d\n\n"
        "static const char *const session_example_lines[SESSION_EXAMPLE_LINE_COUNT] = {\n"
        "%s,\n};\n\n#endif\n" % (len(lines), body)
    )
    with open(target, "w", encoding="utf-8") as f:
        f.write(header)


if __name__ == "__main__":
    main()
