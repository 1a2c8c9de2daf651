// Writes pi session files with pi's own SessionManager (pi 0.73.1, pinned in
// package.json), one per scenario, into OUT_DIR/<scenario>.jsonl; tests/interop_pi.rs
// imports each and compares libsession's build_context with pi's (context.mjs).
//
//   node generate.mjs OUT_DIR
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const out = process.argv[2];
const cwd = "/workspace/tiny-pi";
let clock = Date.parse("2025-06-01T00:00:00.000Z");

const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const user = (text) => ({ role: "user", content: text, timestamp: clock++ });
const assistant = (content, extra = {}) => ({
	role: "assistant",
	content: typeof content === "string" ? [{ type: "text", text: content }] : content,
	api: "anthropic-messages",
	provider: "anthropic",
	model: "claude-sonnet-4-5",
	usage,
	stopReason: content.some?.((b) => b.type === "toolCall") ? "toolUse" : "stop",
	timestamp: clock++,
	...extra,
});
const call = (id, name, args) => ({ type: "toolCall", id, name, arguments: args });
const result = (id, name, text, isError = false) => ({
	role: "toolResult",
	toolCallId: id,
	toolName: name,
	content: [{ type: "text", text }],
	isError,
	timestamp: clock++,
});

/** Runs `build` on a fresh persisted SessionManager and moves its file to <name>.jsonl. */
function scenario(name, build) {
	const dir = mkdtempSync(join(out, `${name}-`));
	const sm = SessionManager.create(cwd, dir);
	build(sm);
	renameSync(sm.getSessionFile(), join(out, `${name}.jsonl`));
	rmSync(dir, { recursive: true, force: true });
}

/** The fixed example of the contract (§1, §10) up to a-ver; returns its ids. */
function tinyPi(sm) {
	const ids = {};
	ids.u1 = sm.appendMessage(user("读取 README.md，告诉我项目名"));
	ids.aRead = sm.appendMessage(assistant([call("call-1", "read", { path: "README.md" })]));
	ids.rRead = sm.appendMessage(result("call-1", "read", "# tiny-pi ..."));
	ids.aFinal = sm.appendMessage(assistant("项目名是 tiny-pi"));
	ids.u2 = sm.appendMessage(user("再读 package.json，告诉我版本"));
	ids.aPkg = sm.appendMessage(assistant([{ type: "thinking", thinking: "read it" }, call("call-2", "read", { path: "package.json" })]));
	ids.rPkg = sm.appendMessage(result("call-2", "read", '{"version":"0.1.0"}'));
	ids.aVer = sm.appendMessage(assistant("版本是 0.1.0"));
	return ids;
}

scenario("linear", (sm) => {
	tinyPi(sm);
});

scenario("branched", (sm) => {
	const ids = tinyPi(sm);
	sm.branch(ids.u1);
	sm.appendMessage(assistant("我无法读取该文件"));
	sm.branch(ids.aFinal);
	sm.appendMessage(user("换个问题：许可证是什么？"));
	sm.appendMessage(assistant("MIT"));
	sm.branchWithSummary(ids.rRead, "The user explored the licence on another branch.", { files: ["LICENSE"] });
	sm.appendMessage(user("回到版本问题"));
	sm.appendMessage(assistant("好的"));
	sm.branchWithSummary(null, "Started over from the root.");
	sm.appendMessage(user("从头开始"));
	sm.appendMessage(assistant("好"));
});

scenario("compacted", (sm) => {
	const ids = tinyPi(sm);
	sm.appendCompaction("User asked for the project name; it is tiny-pi.", ids.u2, 1200);
	sm.appendMessage(user("还有什么依赖？"));
	sm.appendMessage(assistant("没有依赖。"));
	const u4 = sm.appendMessage(user("再总结一次"));
	sm.appendMessage(assistant("tiny-pi 0.1.0, no dependencies."));
	sm.appendCompaction("tiny-pi 0.1.0 has no dependencies.", u4, 2400, { readFiles: ["README.md", "package.json"] });
	sm.appendMessage(user("谢谢"));
	sm.appendMessage(assistant("不客气"));
});

scenario("every-entry-type", (sm) => {
	sm.appendSessionInfo("every entry type");
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendThinkingLevelChange("high");
	const ids = tinyPi(sm);
	sm.appendMessage({
		role: "bashExecution",
		command: "ls",
		output: "README.md\npackage.json\n",
		exitCode: 0,
		cancelled: false,
		truncated: false,
		timestamp: clock++,
	});
	sm.appendMessage({ role: "custom", customType: "note", content: "a custom message", display: true, timestamp: clock++ });
	sm.appendCustomEntry("my-extension", { state: { count: 1 } });
	sm.appendCustomEntry("no-data");
	sm.appendCustomMessageEntry("reminder", "Remember the licence.", true, { source: "ext" });
	sm.appendCustomMessageEntry("image-note", [{ type: "text", text: "see" }, { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }], false);
	sm.appendLabelChange(ids.u1, "start");
	sm.appendLabelChange(ids.aVer, "answer");
	sm.appendLabelChange(ids.u1, undefined);
	sm.appendMessage(assistant([{ type: "thinking", thinking: "done", thinkingSignature: "sig" }, { type: "text", text: "all set" }], { responseId: "resp_1" }));
	sm.appendMessage(assistant("", { stopReason: "error", errorMessage: "overloaded" }));
	sm.branchWithSummary(ids.aFinal, "");
	sm.appendMessage(user("after an empty branch summary"));
	sm.appendCompaction("Everything so far.", ids.u2, 999, undefined, true);
	sm.appendModelChange("openai", "gpt-5");
	sm.appendMessage(user("last"));
	sm.appendMessage(assistant("end"));
});

scenario("lone-surrogate", (sm) => {
	sm.appendMessage(user("cut the emoji"));
	sm.appendMessage(assistant([call("call-s", "bash", { command: "head -c 5 emoji.txt" })]));
	// A tool result cut mid-emoji: the high half of U+1F600 alone.
	sm.appendMessage(result("call-s", "bash", "abc \ud83d"));
	sm.appendMessage(assistant("the output ends in half an emoji: \ude00"));
});

scenario("long-2000", (sm) => {
	for (let i = 0; i < 1000; i++) {
		sm.appendMessage(user(`question ${i}`));
		sm.appendMessage(assistant(`answer ${i}`));
	}
});

scenario("split-turn", (sm) => {
	// pi cuts inside a turn when one turn is larger than what it keeps: the first
	// kept entry is an assistant message, which §6.2 refuses (not_interaction_start).
	sm.appendMessage(user("refactor everything"));
	const a1 = sm.appendMessage(assistant([call("c1", "read", { path: "a.rs" })]));
	sm.appendMessage(result("c1", "read", "fn a() {}"));
	const a2 = sm.appendMessage(assistant([call("c2", "read", { path: "b.rs" })]));
	sm.appendMessage(result("c2", "read", "fn b() {}"));
	sm.appendMessage(assistant("done reading"));
	sm.appendCompaction("Read a.rs.", a2, 50000, { isSplitTurn: true });
	sm.appendMessage(user("continue"));
	sm.appendMessage(assistant("ok"));
	void a1;
});

// Versions 1 and 2, as older pi wrote them (pi migrates them when it opens them).
const v1 = [
	{ type: "session", id: "v1-session", timestamp: "2024-11-01T10:00:00.000Z", cwd },
	{ type: "message", timestamp: "2024-11-01T10:00:01.000Z", message: user("old question") },
	{ type: "message", timestamp: "2024-11-01T10:00:02.000Z", message: assistant("old answer") },
	{ type: "message", timestamp: "2024-11-01T10:00:03.000Z", message: user("second question") },
	{ type: "message", timestamp: "2024-11-01T10:00:04.000Z", message: assistant("second answer") },
	{ type: "compaction", timestamp: "2024-11-01T10:00:05.000Z", summary: "Two questions.", firstKeptEntryIndex: 3, tokensBefore: 100 },
	{ type: "message", timestamp: "2024-11-01T10:00:06.000Z", message: user("third") },
];
writeFileSync(join(out, "version-1.jsonl"), v1.map((e) => JSON.stringify(e)).join("\n") + "\n");
const v2 = [
	{ type: "session", version: 2, id: "v2-session", timestamp: "2024-12-01T10:00:00.000Z", cwd },
	{ type: "message", id: "m1", parentId: null, timestamp: "2024-12-01T10:00:01.000Z", message: user("hook test") },
	{ type: "message", id: "m2", parentId: "m1", timestamp: "2024-12-01T10:00:02.000Z", message: { role: "hookMessage", customType: "hook", content: "from a hook", display: true, timestamp: clock++ } },
	{ type: "message", id: "m3", parentId: "m2", timestamp: "2024-12-01T10:00:03.000Z", message: assistant("seen") },
];
writeFileSync(join(out, "version-2.jsonl"), v2.map((e) => JSON.stringify(e)).join("\n") + "\n");
