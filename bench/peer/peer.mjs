// pi's side of libsession's benchmark: runs pi's SessionManager (npm
// @mariozechner/pi-coding-agent, pinned in package.json) on the sessions that
// `cargo bench --bench perf -- gen` wrote, and prints the same figures as JSON.
//
//   node bench/peer/peer.mjs --index target/bench-data/sessions.json [--runs 3] [--out FILE]
//
// For every session: SessionManager.open (median of --runs, each on a fresh copy of the
// file: pi migrates files in place, and it gets a temporary session directory),
// buildSessionContext() and getBranch() for each named leaf (after branch(leaf)),
// appendMessage() µs (batches of the same messages libsession appends, on a copy), and
// RSS after open in a fresh process (process.memoryUsage().rss, and the peak from
// process.resourceUsage().maxRSS). It also prints the byte length and FNV-1a of
// JSON.stringify(buildSessionContext().messages), which must equal libsession's
// messages_on_path output for the same leaf.
//
// SessionManager is imported from the package's own module (dist/core/session-manager.js,
// the class dist/index.js re-exports), not through the index: the index loads pi's whole
// CLI (~2.5 s, ~90 MB more RSS), which is not the cost of a session and would swamp the
// memory figure.

import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freshCopy, gc, median, now } from "./common.mjs";

// dist/index.js of the installed package, resolved as `import` would resolve it.
const pkgDir = dirname(dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-coding-agent"))));
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const { SessionManager } = await import(pathToFileURL(join(pkgDir, "dist/core/session-manager.js")).href);

function args() {
  const a = process.argv.slice(2);
  const o = { runs: 3, index: null, out: null, rssChild: null };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === "--runs") o.runs = Math.max(1, Number(a[++i]));
    else if (a[i] === "--index") o.index = a[++i];
    else if (a[i] === "--out") o.out = a[++i];
    else if (a[i] === "--rss-child") o.rssChild = a[++i];
  }
  return o;
}

/** Median seconds of f(), after one warm-up: at least `runs` samples, more within `budget` s. */
function measure(runs, budget, f) {
  f();
  const samples = [];
  const start = now();
  while (samples.length < runs || (now() - start < budget && samples.length < 20000)) {
    const t = now();
    f();
    samples.push(now() - t);
  }
  return median(samples);
}

function fnv32(buf) {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) {
    h ^= buf[i];
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

// --- In a fresh process: RSS after opening one session. ---------------------------
const o = args();
if (o.rssChild) {
  const { dir, sessionDir, copy } = freshCopy(o.rssChild, "pi-bench-");
  gc();
  const baseline = process.memoryUsage().rss;
  const sm = SessionManager.open(copy, sessionDir);
  const after = process.memoryUsage().rss;
  const peak = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify({ baseline, after, peak, entries: sm.getEntries().length }));
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

if (!o.index) {
  console.error("usage: node peer.mjs --index target/bench-data/sessions.json [--runs N] [--out FILE]");
  process.exit(2);
}

const index = JSON.parse(readFileSync(o.index, "utf8"));
const appendMessages = readFileSync(index.append_messages, "utf8")
  .split("\n")
  .filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));

const result = {
  peer: "pi SessionManager",
  package: `${pkg.name}@${pkg.version}`,
  node: process.version,
  runs: o.runs,
  sessions: {},
};

for (const s of index.sessions) {
  process.stderr.write(`peer: ${s.name} (${s.entries} entries, ${(s.pi_bytes / 1e6).toFixed(1)} MB)\n`);
  const r = { entries: s.entries, pi_bytes: s.pi_bytes, leaves: {} };

  // Open: each run on a fresh copy in a fresh session directory.
  const openRuns = [];
  let sm = null;
  let tmp = null;
  const openRunsWanted = s.name === "chapter" ? Math.max(o.runs, 20) : o.runs;
  for (let i = 0; i <= openRunsWanted; i++) {
    if (tmp) rmSync(tmp.dir, { recursive: true, force: true });
    sm = null;
    gc();
    tmp = freshCopy(s.pi_file, "pi-bench-");
    const t = now();
    sm = SessionManager.open(tmp.copy, tmp.sessionDir);
    const d = now() - t;
    if (i > 0) openRuns.push(d); // the first run warms up the JIT
  }
  r.open_s = median(openRuns);
  r.open_runs = openRuns;
  r.entries_seen = sm.getEntries().length;

  // Reads for each leaf: what pi does before a model call, and its branch walk.
  for (const leaf of s.leaves) {
    sm.branch(leaf.id);
    const ctx = sm.buildSessionContext();
    const json = Buffer.from(JSON.stringify(ctx.messages), "utf8");
    const budget = 0.3;
    r.leaves[leaf.name] = {
      depth: leaf.depth,
      messages: ctx.messages.length,
      messages_bytes: json.length,
      messages_fnv: fnv32(json),
      branch_length: sm.getBranch(leaf.id).length,
      buildSessionContext_s: measure(o.runs, budget, () => sm.buildSessionContext()),
      getBranch_s: measure(o.runs, budget, () => sm.getBranch(leaf.id)),
    };
  }

  // Appends: batches of the same messages libsession appends, continuing the deepest
  // leaf, on this copy (appendFileSync per entry, no fsync). The first batch warms up.
  if (s.append) {
    sm.branch(s.leaves[0].id);
    const perAppend = [];
    const batches = Math.max(o.runs, 3);
    for (let b = 0; b <= batches; b++) {
      const t = now();
      for (const m of appendMessages) sm.appendMessage(m);
      const d = now() - t;
      if (b > 0) perAppend.push((d * 1e6) / appendMessages.length);
    }
    r.append_us = median(perAppend);
    r.append_runs = perAppend;
  }
  sm = null;
  rmSync(tmp.dir, { recursive: true, force: true });
  gc();

  // Memory: a fresh process opens the file once.
  if (s.rss) {
    const runs = [];
    for (let i = 0; i < Math.min(3, o.runs); i++) {
      const out = execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--rss-child", s.pi_file], {
        encoding: "utf8",
        maxBuffer: 1 << 20,
      });
      runs.push(JSON.parse(out));
    }
    r.rss_baseline = median(runs.map((x) => x.baseline));
    r.rss_after_open = median(runs.map((x) => x.after));
    r.peak_rss = median(runs.map((x) => x.peak));
  }
  result.sessions[s.name] = r;
}

const text = JSON.stringify(result, null, 2);
if (o.out) writeFileSync(o.out, text + "\n");
else process.stdout.write(text + "\n");
