"""Per-call cost of libsession from Python against the same calls from C (a benchmark,
not a test; run it with the Python that has the package installed):

    target/python-venv/bin/python bindings/python/bench.py [N] [RUNS]

Both sides use the same library (the libsession.so bundled in the installed package)
and the same pre-built entry lines (~300 bytes), appended as a chain: C through a small
driver compiled here with `cc`, Python through `Store.append` (with the line as text, as
a dict, and with raw=True). Also `session_store_state`, the cheapest call, to show the
fixed cost of a call. Prints medians over RUNS runs of N calls, in microseconds of
process CPU time per call (CPU time, not wall time, so that other load on a shared machine
does not count).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The script's folder holds the package's sources, not the installed package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
import libsession  # noqa: E402

C_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "session.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* argv: N, "memory" | path, then reads N lines (the entries) from stdin. */
int main(int argc, char **argv) {
    int n = atoi(argv[1]), i;
    char **lines = malloc(sizeof(char *) * n);
    size_t cap = 0;
    SessionStore *store = NULL;
    char *json = NULL;
    double t0, append_s, state_s;
    volatile int sink = 0;
    for (i = 0; i < n; i++) {
        lines[i] = NULL; cap = 0;
        if (getline(&lines[i], &cap, stdin) < 0) return 2;
        lines[i][strcspn(lines[i], "\n")] = 0;
    }
    if (strcmp(argv[2], "memory") == 0) session_memory_store_open(&store);
    else if (session_jsonl_store_open(argv[2], &store, &json) != SESSION_OK) return 3;
    session_string_free(json);
    t0 = now();
    for (i = 0; i < n; i++) {
        json = NULL;
        if (session_store_append(store, lines[i], &json) != SESSION_OK) return 4;
        session_string_free(json);
    }
    append_s = now() - t0;
    t0 = now();
    for (i = 0; i < n; i++) sink += session_store_state(store);
    state_s = now() - t0;
    printf("%f %f\n", append_s / n * 1e6, state_s / n * 1e6);
    session_store_close(store);
    for (i = 0; i < n; i++) free(lines[i]);
    free(lines);
    return sink;
}
"""


def entries(n):
    out, parent = [], None
    for i in range(n):
        e = {
            "id": "e-%d" % i,
            "parentId": parent,
            "timestamp": 1733000000000 + i,
            "type": "message",
            "message": {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": "Step %d: read the file and report what it says." % i}],
                "timestamp": 1733000000000 + i,
            },
        }
        if i % 2:
            e["message"].update({"api": "openai-responses", "provider": "openai", "model": "gpt-5"})
        out.append(e)
        parent = e["id"]
    return out


def build_driver(workdir, header_dir):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("bench.py: needs a C compiler (cc)")
    pkg = os.path.dirname(libsession.__file__)
    libdir = os.path.join(workdir, "lib")
    os.makedirs(libdir)
    # The bundled library's SONAME is libsession.so.0: give the driver that name to load.
    os.symlink(os.path.join(pkg, "libsession.so"), os.path.join(libdir, "libsession.so.0"))
    os.symlink(os.path.join(pkg, "libsession.so"), os.path.join(libdir, "libsession.so"))
    src = os.path.join(workdir, "driver.c")
    with open(src, "w") as f:
        f.write(C_DRIVER)
    exe = os.path.join(workdir, "driver")
    subprocess.run(
        [cc, "-O2", "-I", header_dir, src, "-L", libdir, "-lsession", "-Wl,-rpath," + libdir, "-o", exe],
        check=True,
    )
    return exe


def c_run(exe, n, target, text):
    out = subprocess.run([exe, str(n), target], input=text, stdout=subprocess.PIPE, check=True, text=True)
    append_us, state_us = map(float, out.stdout.split())
    return append_us, state_us


def py_run(n, target, items, raw):
    store = libsession.Store.memory() if target == "memory" else libsession.Store.open(target)
    with store:
        append = store.append
        t0 = time.process_time()
        if raw:
            for item in items:
                append(item, raw=True)
        else:
            for item in items:
                append(item)
        append_us = (time.process_time() - t0) / n * 1e6
        t0 = time.process_time()
        for _ in range(n):
            store.state
        state_us = (time.process_time() - t0) / n * 1e6
    return append_us, state_us


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    dicts = entries(n)
    lines = [json.dumps(e, separators=(",", ":")) for e in dicts]
    text = "\n".join(lines) + "\n"
    print("libsession %s, Python %s, %d appends per run, median of %d runs, ~%d bytes per entry"
          % (libsession.__version__, sys.version.split()[0], n, runs, len(text) // n))
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_driver(tmp, os.path.join(repo, "include"))
        results = {}
        for target in ("memory", "file"):
            samples = {k: [] for k in ("C", "Python, text", "Python, text, raw=True", "Python, dict")}
            for r in range(runs):
                def where(tag):
                    return "memory" if target == "memory" else os.path.join(tmp, "%s-%d-%d.jsonl" % (tag, r, len(samples)))
                samples["C"].append(c_run(exe, n, where("c"), text))
                samples["Python, text"].append(py_run(n, where("t"), lines, False))
                samples["Python, text, raw=True"].append(py_run(n, where("r"), lines, True))
                samples["Python, dict"].append(py_run(n, where("d"), dicts, False))
            results[target] = {k: (statistics.median(a for a, _ in v), statistics.median(s for _, s in v))
                               for k, v in samples.items()}
        print("\n| store | caller | append, CPU µs | over C, µs | state(), CPU µs |")
        print("|---|---|---:|---:|---:|")
        for target, rows in results.items():
            base = rows["C"][0]
            for caller, (append_us, state_us) in rows.items():
                print("| %s | %s | %.2f | %s | %.3f |" % (
                    target, caller, append_us, "" if caller == "C" else "%+.2f" % (append_us - base), state_us))


if __name__ == "__main__":
    main()
