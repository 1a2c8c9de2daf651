// Prints pi's own view of a pi session file: the ids of its entries in file order and,
// for every entry taken as the leaf, pi's buildSessionContext messages. In a file of
// more than 300 entries (whose contexts would add up to hundreds of megabytes) the
// leaves are every true leaf and every 50th entry. The file is
// opened the way pi resumes a session (SessionManager.open), on a copy, since pi
// rewrites a file it migrates from version 1 or 2.
//
//   node context.mjs SESSION.jsonl   ->  {"leafId": "...", "entries": [...],
//                                         "contexts": {"<id>": [messages]}}
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSessionContext, SessionManager } from "@mariozechner/pi-coding-agent";

const source = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), "pi-context-"));
try {
	const copy = join(dir, "session.jsonl");
	copyFileSync(source, copy);
	const sm = SessionManager.open(copy, dir);
	const entries = sm.getEntries();
	const parents = new Set(entries.map((e) => e.parentId));
	const contexts = {};
	entries.forEach((entry, i) => {
		if (entries.length <= 300 || !parents.has(entry.id) || i % 50 === 0) {
			contexts[entry.id] = buildSessionContext(entries, entry.id).messages;
		}
	});
	process.stdout.write(
		JSON.stringify({ leafId: sm.getLeafId(), entries: entries.map((e) => e.id), contexts }),
	);
} finally {
	rmSync(dir, { recursive: true, force: true });
}
