// Resumes real session files with the agents' own CLIs (Claude Code, Codex) against a
// fake model server on 127.0.0.1 that records the request, and compares the
// conversation the agent sends with libsession's context for the same file.
//
//   node agents.mjs MANIFEST OUT
//
// MANIFEST: [{"name", "format": "claude-code"|"codex", "file", "ours"}], where `ours` is
// a JSON file holding libsession's build_context result (profile "auto") for the
// import's resume leaf. OUT receives [{"name", "status", "agentItems", "ourItems",
// "firstDifference", "note"}]. Both sides are reduced to one list of items in the same
// form (see `normalize*` below): the role, the kind (text, thinking, tool call, tool
// result, image) and its content, numbers compared by value through JSON.parse of the
// agent's request; what the agent adds from the machine it runs on (system prompt,
// `<system-reminder>` blocks, environment context, the new prompt) is left out of both.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = (name) => path.join(here, 'node_modules', '.bin', name);
const PROBE = 'libsession oracle probe: reply ok';
const TIMEOUT_MS = 120_000;

function startServer() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let json = null;
      try {
        json = JSON.parse(body);
      } catch {}
      requests.push({ method: req.method, url: req.url, json });
      const sse = (events) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const [t, d] of events) res.write(`event: ${t}\ndata: ${JSON.stringify({ type: t, ...d })}\n\n`);
        res.end();
      };
      if (req.method === 'POST' && req.url.includes('/responses')) {
        sse([
          ['response.created', { response: { id: 'resp_1' } }],
          ['response.output_item.done', { item: { type: 'message', role: 'assistant', id: 'msg_1', content: [{ type: 'output_text', text: 'ok' }] } }],
          ['response.completed', { response: { id: 'resp_1', usage: { input_tokens: 1, input_tokens_details: null, output_tokens: 1, output_tokens_details: null, total_tokens: 2 } } }],
        ]);
        return;
      }
      if (req.method === 'POST' && req.url.includes('/messages')) {
        const message = { id: 'msg_1', type: 'message', role: 'assistant', model: json?.model ?? 'x', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
        if (json?.stream) {
          sse([
            ['message_start', { message }],
            ['content_block_start', { index: 0, content_block: { type: 'text', text: '' } }],
            ['content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'ok' } }],
            ['content_block_stop', { index: 0 }],
            ['message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } }],
            ['message_stop', {}],
          ]);
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ ...message, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn' }));
        }
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, requests, port: server.address().port })));
}

function run(cmd, args, opts) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

function lines(file) {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return null;
      }
    })
    .filter(Boolean);
}

// ---- Claude Code --------------------------------------------------------------------

async function resumeClaude(entry, port, scratch) {
  const home = path.join(scratch, 'home');
  const work = path.join(scratch, 'work');
  fs.mkdirSync(work, { recursive: true });
  const project = path.join(home, '.claude', 'projects', work.replace(/[^a-zA-Z0-9]/g, '-'));
  fs.mkdirSync(project, { recursive: true });
  // The copy is named after the session its lines name.
  const uuid = lines(entry.file).find((l) => l.sessionId)?.sessionId ?? crypto.randomUUID();
  if (entry.file.includes('/subagents/')) {
    // Claude Code resumes only main transcripts: it never picks a sidechain line as the
    // leaf, and every line of a sub-agent's own transcript is one. Its copy is resumed
    // as a main transcript, with `isSidechain` false on every line and nothing else
    // changed.
    const text = fs.readFileSync(entry.file, 'utf8').replaceAll('"isSidechain":true', '"isSidechain":false');
    fs.writeFileSync(path.join(project, `${uuid}.jsonl`), text);
  } else {
    fs.copyFileSync(entry.file, path.join(project, `${uuid}.jsonl`));
  }
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
    ANTHROPIC_API_KEY: 'sk-ant-libsession-oracle',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_AUTO_COMPACT: '1',
    DISABLE_COMPACT: '1',
    DISABLE_TELEMETRY: '1',
  };
  return run(bin('claude'), ['-p', '--resume', uuid, PROBE], { cwd: work, env });
}

function claudeRequest(requests) {
  return requests.find((r) => r.method === 'POST' && r.url.includes('/messages') && JSON.stringify(r.json?.messages ?? []).includes(PROBE));
}

const isReminder = (text) => typeof text === 'string' && text.trimStart().startsWith('<system-reminder>');

// One item per content block; a message's role is kept on each of its items, so that
// merging consecutive messages of one role (which Claude Code does) changes nothing.
function claudeItems(messages) {
  const items = [];
  for (const m of messages) {
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (const b of blocks) items.push(claudeBlock(m.role, b));
  }
  return items;
}

function claudeBlock(role, b) {
  switch (b.type) {
    case 'text':
      return { role, kind: 'text', text: b.text };
    case 'thinking':
      return { role, kind: 'thinking', text: b.thinking };
    case 'redacted_thinking':
      return { role, kind: 'redacted_thinking' };
    case 'tool_use':
      return { role, kind: 'toolCall', id: b.id, name: b.name, input: b.input };
    case 'tool_result': {
      const content = typeof b.content === 'string' ? [{ type: 'text', text: b.content }] : (b.content ?? []);
      return { role, kind: 'toolResult', id: b.tool_use_id, isError: !!b.is_error, content: content.map((c) => claudeBlock(role, c)) };
    }
    case 'image':
      return { role, kind: 'image', data: digest(b.source?.data ?? b.source?.url ?? '') };
    default:
      return { role, kind: b.type };
  }
}

// libsession's messages (pi's shapes) in the same form, after the one step of the
// Anthropic wire form that changes bytes: consecutive messages of one role are one API
// message, and where a text block of the first meets a text block of the next, the
// first gets a newline (Claude Code joins user turns that way).
function ourItems(messages) {
  const wire = [];
  for (const m of messages) {
    const role = m.role === 'toolResult' ? 'user' : m.role;
    const items =
      m.role === 'toolResult'
        ? [{ role: 'user', kind: 'toolResult', id: m.toolCallId, isError: !!m.isError, content: blocks(m.content).map((b) => ourBlock('user', b)) }]
        : blocks(m.content).map((b) => ourBlock(m.role, b));
    const last = wire[wire.length - 1];
    if (last && last.role === role) {
      const seam = last.items[last.items.length - 1];
      if (role === 'user' && seam?.kind === 'text' && items[0]?.kind === 'text') seam.text += '\n';
      last.items.push(...items);
    } else wire.push({ role, items });
  }
  return wire.flatMap((m) => m.items);
}

const blocks = (content) => (typeof content === 'string' ? [{ type: 'text', text: content }] : (content ?? []));

function ourBlock(role, b) {
  switch (b.type) {
    case 'text':
    case 'input_text':
    case 'output_text':
      return { role, kind: 'text', text: b.text };
    case 'thinking':
      return { role, kind: 'thinking', text: b.thinking };
    case 'redacted_thinking':
      return { role, kind: 'redacted_thinking' };
    case 'toolCall':
      return { role, kind: 'toolCall', id: b.id, name: b.name, input: b.arguments };
    case 'image':
      return { role, kind: 'image', data: digest(b.data ?? '') };
    default:
      return { role, kind: b.type };
  }
}

const digest = (s) => crypto.createHash('sha256').update(String(s)).digest('hex').slice(0, 16);

// What the agent adds from the machine it runs on, left out of both sides: its
// `<system-reminder>` blocks, its environment message (role `system`) and the probe.
function dropAgentAdditions(items) {
  return items.filter((it) => it.role !== 'system' && !(it.kind === 'text' && (isReminder(it.text) || it.text === PROBE)));
}

// ---- Codex --------------------------------------------------------------------------

async function resumeCodex(entry, port, scratch) {
  const home = path.join(scratch, 'codex-home');
  const work = path.join(scratch, 'work');
  fs.mkdirSync(work, { recursive: true });
  const all = lines(entry.file);
  const meta = all.find((l) => l.type === 'session_meta')?.payload ?? {};
  const id = meta.id;
  const stamp = (meta.timestamp ?? '2026-01-01T00:00:00.000Z').slice(0, 19).replace(/:/g, '-');
  const day = path.join(home, 'sessions', stamp.slice(0, 4), stamp.slice(5, 7), stamp.slice(8, 10));
  fs.mkdirSync(day, { recursive: true });
  fs.copyFileSync(entry.file, path.join(day, `rollout-${stamp}-${id}.jsonl`));
  const provider = meta.model_provider ?? 'openai';
  let config = `openai_base_url = "http://127.0.0.1:${port}/v1"\n[features]\nresponses_websockets = false\nresponses_websockets_v2 = false\n`;
  if (provider !== 'openai') {
    config = `model_provider = ${JSON.stringify(provider)}\n` + config;
    config += `[model_providers.${JSON.stringify(provider)}]\nname = ${JSON.stringify(provider)}\nbase_url = "http://127.0.0.1:${port}/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n`;
  }
  fs.writeFileSync(path.join(home, 'config.toml'), config);
  const env = { PATH: process.env.PATH, HOME: scratch, CODEX_HOME: home, OPENAI_API_KEY: 'sk-libsession-oracle' };
  return run(bin('codex'), ['exec', '--skip-git-repo-check', 'resume', id, PROBE], { cwd: work, env });
}

function codexRequest(requests) {
  return requests.find((r) => r.method === 'POST' && r.url.includes('/responses') && JSON.stringify(r.json?.input ?? []).includes(PROBE));
}

function codexItems(input) {
  const items = [];
  for (const it of input) {
    switch (it.type) {
      case 'message':
        for (const c of it.content ?? []) items.push(codexPart(it.role, c));
        break;
      case 'reasoning':
        items.push({ role: 'assistant', kind: 'reasoning', summary: (it.summary ?? []).map((s) => s.text), encrypted: digest(it.encrypted_content ?? '') });
        break;
      case 'function_call':
      case 'custom_tool_call':
        items.push({ role: 'assistant', kind: 'toolCall', id: it.call_id, name: it.name, arguments: it.arguments ?? it.input });
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        items.push({ role: 'user', kind: 'toolResult', id: it.call_id, output: typeof it.output === 'string' ? it.output : JSON.stringify(it.output) });
        break;
      default:
        items.push({ role: it.role ?? 'assistant', kind: it.type, id: it.call_id ?? it.id ?? null });
    }
  }
  return items;
}

function codexPart(role, c) {
  if (c.type === 'input_text' || c.type === 'output_text' || c.type === 'text') return { role, kind: 'text', text: c.text };
  if (c.type === 'input_image') return { role, kind: 'image', data: digest(c.image_url ?? '') };
  return { role, kind: c.type };
}

// libsession's context as Codex items: an item kept whole (`codexItem`) is sent as it is;
// otherwise the message's blocks.
function ourCodexItems(messages) {
  const out = [];
  for (const m of messages) {
    if (m.codexItem) {
      out.push(...codexItems([m.codexItem]));
      continue;
    }
    if (m.role === 'toolResult') {
      const parts = blocks(m.content);
      // With an image, the output is Codex's list of parts; else the text.
      const output = parts.some((b) => b.type === 'image')
        ? JSON.stringify(parts.map((b) => (b.type === 'image' ? { type: 'input_image', image_url: `data:${b.mimeType};base64,${b.data}` } : { type: 'input_text', text: b.text ?? '' })))
        : parts.map((b) => b.text ?? '').join('');
      out.push({ role: 'user', kind: 'toolResult', id: m.toolCallId, output });
      continue;
    }
    for (const b of blocks(m.content)) {
      if (b.type === 'toolCall') out.push({ role: 'assistant', kind: 'toolCall', id: b.id, name: b.name, arguments: b.rawArguments ?? JSON.stringify(b.arguments) });
      // A thinking block becomes a reasoning item without encrypted content.
      else if (b.type === 'thinking') out.push({ role: 'assistant', kind: 'reasoning', summary: [b.thinking], encrypted: digest('') });
      else if (b.type === 'image') out.push({ role: m.role, kind: 'image', data: digest(`data:${b.mimeType};base64,${b.data}`) });
      else if (b.type === 'input_image') out.push({ role: m.role, kind: 'image', data: digest(b.image_url ?? '') });
      else out.push({ role: m.role, kind: 'text', text: b.text });
    }
  }
  return out;
}

// Codex appends the new turn's context after the history: its own developer and
// environment messages (they carry an `id`), the tool list and configuration items.
function dropCodexAdditions(items, input) {
  const keep = [];
  let i = 0;
  for (const it of input) {
    const added = (typeof it.id === 'string' && /^(msg|at)_/.test(it.id)) || it.type === 'additional_tools' || it.type === 'configuration_update';
    const n = codexItems([it]).length;
    if (!added) keep.push(...items.slice(i, i + n));
    i += n;
  }
  return keep;
}

// ---- comparison ---------------------------------------------------------------------

function firstDifference(a, b) {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = JSON.stringify(a[i]);
    const y = JSON.stringify(b[i]);
    if (x !== y) return { index: i, agent: a[i] ?? null, ours: b[i] ?? null };
  }
  return null;
}

async function main() {
  const [manifestPath, outPath] = process.argv.slice(2);
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  // Each entry has its own server, scratch folder and agent process, so a few run at
  // once (AGENTS_JOBS, default 4): an agent spends much of its run waiting on its own
  // start-up and on the local server. The results keep the manifest's order.
  const jobs = Math.max(1, Number(process.env.AGENTS_JOBS) || 4);
  const results = new Array(manifest.length);
  let next = 0;
  const worker = async () => {
    while (next < manifest.length) {
      const i = next++;
      results[i] = await check(manifest[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, manifest.length) }, worker));
  fs.writeFileSync(outPath, JSON.stringify(results, null, 1));
}

async function check(entry) {
  const { server, requests, port } = await startServer();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'libsession-oracle-'));
  const ours = JSON.parse(fs.readFileSync(entry.ours, 'utf8'));
  let result = { name: entry.name, format: entry.format };
  try {
    if (entry.format === 'claude-code') {
      const { code, out } = await resumeClaude(entry, port, scratch);
      const req = claudeRequest(requests);
      if (!req) result = { ...result, status: 'no_request', note: `exit ${code}: ${out.slice(-400)}` };
      else {
        const agentItems = dropAgentAdditions(claudeItems(req.json.messages));
        // The probe is sent after the conversation, joined to a user text before it.
        const ourList = dropAgentAdditions(ourItems([...ours.messages, { role: 'user', content: PROBE }]));
        result = { ...result, agentItems, ourItems: ourList };
      }
    } else {
      const { code, out } = await resumeCodex(entry, port, scratch);
      const req = codexRequest(requests);
      if (!req) result = { ...result, status: 'no_request', note: `exit ${code}: ${out.slice(-400)}` };
      else {
        const agentItems = dropCodexAdditions(codexItems(req.json.input), req.json.input).filter((it) => !(it.kind === 'text' && it.text === PROBE));
        const ourList = ourCodexItems(ours.messages);
        result = { ...result, agentItems, ourItems: ourList };
      }
    }
    if (result.agentItems) {
      const d = firstDifference(result.agentItems, result.ourItems);
      result.status = d ? 'differs' : 'equal';
      result.firstDifference = d;
    }
  } catch (e) {
    result = { ...result, status: 'error', note: String(e?.stack ?? e) };
  } finally {
    server.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  process.stderr.write(`${entry.name}: ${result.status}\n`);
  return result;
}

main();
