// pi's side of libsession's resume benchmark (`cargo bench --bench perf -- resume-bench`):
// what resuming a session costs in pi's SessionManager (npm @mariozechner/pi-coding-agent,
// pinned in package.json), printed as JSON.
//
//   node --expose-gc bench/peer/resume.mjs --file PI_SESSION.jsonl [--runs 3] [--append FILE]
//
// - open: SessionManager.open on a fresh copy of the file in a fresh session directory
//   (pi migrates files in place); its leaf is the last entry, as when pi resumes;
// - context: the first buildSessionContext() on that open manager;
// - resume: the two together (one clock);
// - steady: buildSessionContext() after one more appendMessage (the messages of --append,
//   one JSON message a line, in turn), on one open manager;
// - RSS: a fresh process (this script with --rss-child) opens the file and builds the
//   context once; process.resourceUsage().maxRSS is the peak, memoryUsage().rss before
//   open the baseline.
// The first open and context are a warm-up (JIT), not counted. messages is
// buildSessionContext().messages.length (the compaction's summary message included).
//
// SessionManager is imported from the package's own module, as bench/peer/peer.mjs does
// (the package index loads pi's whole CLI).

import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { freshCopy, gc, median, now } from "./common.mjs";

const pkgDir = dirname(dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-coding-agent"))));
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const { SessionManager } = await import(pathToFileURL(join(pkgDir, "dist/core/session-manager.js")).href);

function args() {
  const a = process.argv.slice(2);
  const o = { runs: 3, file: null, append: null, rssChild: null, rssRuns: 1 };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === "--runs") o.runs = Math.max(1, Number(a[++i]));
    else if (a[i] === "--file") o.file = a[++i];
    else if (a[i] === "--append") o.append = a[++i];
    else if (a[i] === "--rss-runs") o.rssRuns = Math.max(0, Number(a[++i]));
    else if (a[i] === "--rss-child") o.rssChild = a[++i];
  }
  return o;
}

const o = args();
if (o.rssChild) {
  const { dir, sessionDir, copy } = freshCopy(o.rssChild, "pi-resume-");
  gc();
  const baseline = process.memoryUsage().rss;
  const sm = SessionManager.open(copy, sessionDir);
  const ctx = sm.buildSessionContext();
  const peak = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify({ baseline, peak, messages: ctx.messages.length }));
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
if (!o.file) {
  console.error("usage: node resume.mjs --file PI_SESSION.jsonl [--runs N] [--append FILE]");
  process.exit(2);
}

const appendMessages = o.append
  ? readFileSync(o.append, "utf8")
      .split("\n")
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l))
  : [];

const open = [];
const context = [];
const resume = [];
let messages = null;
let sm = null;
let tmp = null;
for (let i = 0; i <= o.runs; i++) {
  if (tmp) rmSync(tmp.dir, { recursive: true, force: true });
  sm = null;
  gc();
  tmp = freshCopy(o.file, "pi-resume-");
  const t0 = now();
  sm = SessionManager.open(tmp.copy, tmp.sessionDir);
  const t1 = now();
  const ctx = sm.buildSessionContext();
  const t2 = now();
  messages = ctx.messages.length;
  if (i > 0) {
    open.push(t1 - t0);
    context.push(t2 - t1);
    resume.push(t2 - t0);
  }
}

// Steady state: one more message, then the context, on the open manager.
const steady = [];
let steadyMessages = null;
for (let i = 0; i <= o.runs && appendMessages.length > 0; i++) {
  sm.appendMessage(appendMessages[i % appendMessages.length]);
  const t = now();
  const ctx = sm.buildSessionContext();
  const d = now() - t;
  steadyMessages = ctx.messages.length;
  if (i > 0) steady.push(d);
}
sm = null;
rmSync(tmp.dir, { recursive: true, force: true });
gc();

const rss = [];
for (let i = 0; i < o.rssRuns; i++) {
  const out = execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--rss-child", o.file], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
  });
  rss.push(JSON.parse(out));
}

process.stdout.write(
  JSON.stringify({
    package: `${pkg.name}@${pkg.version}`,
    node: process.version,
    runs: o.runs,
    open_s: median(open),
    context_s: median(context),
    resume_s: median(resume),
    steady_s: median(steady),
    messages,
    steady_messages: steadyMessages,
    peak_rss: median(rss.map((x) => x.peak)),
    rss_baseline: median(rss.map((x) => x.baseline)),
  }) + "\n",
);
