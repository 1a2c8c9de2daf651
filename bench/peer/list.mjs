// pi's side of the session-listing benchmark: SessionManager.list over the folder of
// pi-format sessions that `cargo bench --bench perf -- nav-gen` wrote (the same 1,000
// sessions libsession lists, in pi's format), median of --runs, printed as JSON.
//
//   node bench/peer/list.mjs --dir target/bench-data/list/pi [--runs 3] [--out FILE]
//
// SessionManager is imported from the package's own module, as bench/peer/peer.mjs does.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const pkgDir = dirname(dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-coding-agent"))));
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const { SessionManager } = await import(pathToFileURL(join(pkgDir, "dist/core/session-manager.js")).href);

const a = process.argv.slice(2);
const o = { runs: 3, dir: null, out: null };
for (let i = 0; i < a.length; i++) {
  if (a[i] === "--runs") o.runs = Math.max(1, Number(a[++i]));
  else if (a[i] === "--dir") o.dir = a[++i];
  else if (a[i] === "--out") o.out = a[++i];
}
if (!o.dir) {
  console.error("list.mjs: --dir is required");
  process.exit(2);
}

const now = () => Number(process.hrtime.bigint()) / 1e9;
const samples = [];
let sessions = 0;
// One warm-up, then --runs samples (the files stay in the page cache, as for ours).
for (let i = 0; i <= o.runs; i++) {
  const t = now();
  const listed = await SessionManager.list(o.dir, o.dir);
  const s = now() - t;
  sessions = listed.length;
  if (i > 0) samples.push(s);
}
samples.sort((x, y) => x - y);
const n = samples.length;
const seconds = n % 2 ? samples[(n - 1) / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
const result = {
  package: `${pkg.name}@${pkg.version}`,
  seconds,
  samples,
  sessions,
  maxRssKb: process.resourceUsage().maxRSS,
};
const text = JSON.stringify(result, null, 2);
if (o.out) writeFileSync(o.out, text + "\n");
console.log(text);
