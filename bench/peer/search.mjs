// pi's side of the search benchmark (`cargo bench --bench search`): pi has no index, so
// finding a word means its own linear scan. SessionManager.list over the folder of
// pi-format sessions (what pi's /resume picker does: it reads and parses every file),
// then for each listed session its entries (pi's loadEntriesFromFile) and, for each
// message entry, a test of the message's text for the query substring. Printed as JSON.
//
//   node bench/peer/search.mjs --dir PI_FOLDER --query WORD [--runs 1] [--out FILE]
//
// Counted: hits = message entries (any role) whose text holds the query, where the text is
// the content string or its text blocks joined by a space (pi's own extractTextContent);
// sessions = sessions with at least one hit; listTextSessions = sessions whose
// allMessagesText from list (user and assistant text only, what the picker filters on)
// holds the query. The substring test is case-sensitive, as `rg -F` is.
//
// SessionManager is imported from the package's own module, as bench/peer/peer.mjs does.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { median, now } from "./common.mjs";

const pkgDir = dirname(dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-coding-agent"))));
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const { SessionManager, loadEntriesFromFile } = await import(
  pathToFileURL(join(pkgDir, "dist/core/session-manager.js")).href
);

const a = process.argv.slice(2);
const o = { runs: 1, dir: null, query: null, out: null };
for (let i = 0; i < a.length; i++) {
  if (a[i] === "--runs") o.runs = Math.max(1, Number(a[++i]));
  else if (a[i] === "--dir") o.dir = a[++i];
  else if (a[i] === "--query") o.query = a[++i];
  else if (a[i] === "--out") o.out = a[++i];
}
if (!o.dir || !o.query) {
  console.error("usage: node search.mjs --dir PI_FOLDER --query WORD [--runs N] [--out FILE]");
  process.exit(2);
}

function messageText(message) {
  const content = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((block) => block && block.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join(" ");
}

async function once() {
  const t0 = now();
  const listed = await SessionManager.list(o.dir, o.dir);
  const t1 = now();
  let hits = 0;
  let sessions = 0;
  let listTextSessions = 0;
  for (const info of listed) {
    if (info.allMessagesText.includes(o.query)) listTextSessions++;
    let found = 0;
    for (const entry of loadEntriesFromFile(info.path)) {
      if (entry.type !== "message" || !entry.message || !("content" in entry.message)) continue;
      if (messageText(entry.message).includes(o.query)) found++;
    }
    hits += found;
    if (found > 0) sessions++;
  }
  const t2 = now();
  return { list: t1 - t0, scan: t2 - t1, total: t2 - t0, listed: listed.length, hits, sessions, listTextSessions };
}

// No warm-up: at a gigabyte one pass takes tens of seconds and the files are already in
// the page cache (the benchmark has just written and searched them).
const runs = [];
for (let i = 0; i < o.runs; i++) runs.push(await once());
const last = runs[runs.length - 1];
const result = {
  package: `${pkg.name}@${pkg.version}`,
  query: o.query,
  seconds: median(runs.map((r) => r.total)),
  listSeconds: median(runs.map((r) => r.list)),
  scanSeconds: median(runs.map((r) => r.scan)),
  samples: runs.map((r) => r.total),
  listed: last.listed,
  hits: last.hits,
  sessions: last.sessions,
  listTextSessions: last.listTextSessions,
  maxRssKb: process.resourceUsage().maxRSS,
};
const text = JSON.stringify(result, null, 2);
if (o.out) writeFileSync(o.out, text + "\n");
console.log(text);
