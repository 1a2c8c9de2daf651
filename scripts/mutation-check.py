#!/usr/bin/env python3
"""Mutation check: shows that the rules that matter most are really tested.

Each mutation removes or bends one rule (the tainted branches first) in a scratch git
worktree of HEAD; the tests that guard the rule must then fail. Prints caught/missed
per mutation and exits non-zero if any mutation survives.

    scripts/mutation-check.py            (about 10-15 minutes on 2 cores)

A named list rather than cargo-mutants, so that each mutant is a meaningful rule
removal and the run stays short.
"""
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, file, exact text, replacement, tests that must catch it)
MUTATIONS = [
    ("taint: a tainted store still appends", "src/store/mod.rs",
     """            Condition::Tainted(cause) => {
                return Err(Error::Tainted {
                    cause: Arc::clone(cause),
                });
            }""",
     "            Condition::Tainted(_) => {}",
     ["--test", "jsonl_store", "--test", "durability", "--test", "reliability_faults"]),
    ("taint: a failed write does not taint", "src/store/mod.rs",
     "        inner.condition = Condition::Tainted(Arc::clone(&failure));",
     "        let _ = &inner.condition;",
     ["--test", "jsonl_store", "--test", "durability", "--test", "reliability_faults"]),
    ("taint: reads ignore the taint", "src/store/mod.rs",
     """            if let Condition::Tainted(cause) = &inner.condition {
                return Err(Error::Tainted {
                    cause: Arc::clone(cause),
                });
            }""",
     "            let _ = &inner.condition;",
     ["--test", "jsonl_store", "--test", "reliability_faults"]),
    ("taint: state() does not report it", "src/store/mod.rs",
     "        self.state.store(State::Tainted.to_u8(), Ordering::Release);",
     "        let _ = &self.state;",
     ["--test", "jsonl_store", "--test", "durability"]),
    ("taint: a failed group sync does not fail the group", "src/store/mod.rs",
     """                *result = Err(Error::Tainted {
                    cause: Arc::clone(cause),
                });""",
     "                let _ = cause;",
     ["--test", "durability"]),
    ("needs_repair: appends allowed on a torn file", "src/store/mod.rs",
     """            Condition::NeedsRepair => {
                return Err(Error::NeedsRepair {
                    warnings: inner.warnings.clone(),
                });
            }""",
     "            Condition::NeedsRepair => {}",
     ["--test", "jsonl_store", "--test", "reliability_recovery"]),
    ("recover: NUL counts as blank", "src/recover.rs",
     "    bytes.iter().all(|&b| matches!(b, b' ' | b'\\t' | b'\\r'))",
     "    bytes.iter().all(|&b| matches!(b, b' ' | b'\\t' | b'\\r' | 0))",
     ["--test", "recover", "--lib"]),
    ("recover: an unterminated tail is not reported", "src/recover.rs",
     "(self.partial_len > 0 && self.partial_nonblank).then_some(",
     "(self.partial_len > 0 && self.partial_nonblank && false).then_some(",
     ["--test", "recover", "--test", "jsonl_store"]),
    ("recover: the tail's line number is off by one", "src/recover.rs",
     "            line: self.lines + 1,",
     "            line: self.lines,",
     ["--test", "recover", "--test", "reliability_recovery"]),
    ("recover: a committed bad line is skipped", "src/recover.rs",
     "        if line.len() > self.max_line {\n            return on_line",
     "        if !line.ends_with(b\"}\") {\n            return Ok(());\n        }\n"
     "        if line.len() > self.max_line {\n            return on_line",
     ["--test", "recover", "--test", "jsonl_store"]),
    ("tree: a duplicate id is accepted", "src/store/log.rs",
     "        if self.find_hashed(id, hash).is_some() {",
     "        if self.find_hashed(id, hash).is_some() && false {",
     ["--test", "jsonl_store", "--test", "memory_store"]),
    ("identity: the file is never checked", "src/store/jsonl.rs",
     "        if !self.check_identity {",
     "        if true {",
     ["--test", "writers"]),
    ("durability: fsync mode never syncs", "src/store/mod.rs",
     "                Durability::Fsync => sink.sync(),",
     "                Durability::Fsync => Ok(()),",
     ["--test", "durability"]),
]


def run(cmd, cwd, env=None):
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def main():
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(REPO, "target", "mutation"))
    work = tempfile.mkdtemp(prefix="libsession-mutation-")
    tree = os.path.join(work, "tree")
    run(["git", "worktree", "add", "--detach", tree, "HEAD"], REPO)
    caught = missed = 0
    try:
        for name, path, old, new, tests in MUTATIONS:
            run(["git", "checkout", "-q", "--", "."], tree)
            file = os.path.join(tree, path)
            text = open(file).read()
            if old not in text:
                print(f"ERROR   {name}: the text to mutate is no longer in {path}")
                missed += 1
                continue
            open(file, "w").write(text.replace(old, new, 1))
            result = run(["cargo", "test", "-q", *tests], tree, env)
            if result.returncode == 0:
                print(f"MISSED  {name}  (cargo test {' '.join(tests)})")
                missed += 1
            else:
                print(f"caught  {name}")
                caught += 1
            sys.stdout.flush()
    finally:
        run(["git", "worktree", "remove", "--force", tree], REPO)
    print(f"mutations: {caught} caught, {missed} missed")
    return 0 if missed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
