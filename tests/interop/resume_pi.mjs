// Prints what pi sends when it resumes a session file: SessionManager.open (on a copy,
// since pi rewrites a file it migrates), buildSessionContext at pi's leaf, then
// convertToLlm and pi-ai's transformMessages (the step that leaves out errored or
// aborted replies and answers calls without a result with "No result provided").
// transformMessages is given a model that none of the messages came from, which only
// changes thinking blocks to text; the structure compared is not affected.
//
//   node resume_pi.mjs SESSION.jsonl   ->  {"leafId": "...", "messages": [...]}
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSessionContext, convertToLlm, SessionManager } from "@mariozechner/pi-coding-agent";
import { transformMessages } from "./node_modules/@mariozechner/pi-ai/dist/providers/transform-messages.js";

const source = process.argv[2];
const dir = mkdtempSync(join(tmpdir(), "pi-resume-"));
try {
	const copy = join(dir, "session.jsonl");
	copyFileSync(source, copy);
	const sm = SessionManager.open(copy, dir);
	const leafId = sm.getLeafId();
	const context = buildSessionContext(sm.getEntries(), leafId);
	const model = { provider: "oracle", api: "oracle", id: "oracle", input: ["text", "image"] };
	const messages = transformMessages(convertToLlm(context.messages), model);
	process.stdout.write(JSON.stringify({ leafId, messages }));
} finally {
	rmSync(dir, { recursive: true, force: true });
}
