// What the peer scripts (peer.mjs, resume.mjs) share: the clock, the median, a
// collection between runs, and a fresh session directory holding a copy of a file.
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const now = () => Number(process.hrtime.bigint()) / 1e9;

export function median(xs) {
  const v = [...xs].sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return null;
  return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/** A full collection when node runs with --expose-gc; nothing otherwise. */
export function gc() {
  if (globalThis.gc) globalThis.gc();
}

/** A fresh temporary session directory (named `prefix…`) with a copy of `file` in it. */
export function freshCopy(file, prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const sessionDir = join(dir, "sessions");
  mkdirSync(sessionDir);
  const copy = join(sessionDir, "session.jsonl");
  copyFileSync(file, copy);
  return { dir, sessionDir, copy };
}
