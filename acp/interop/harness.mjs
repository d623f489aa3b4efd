// Test harness: builds the sessionkit ACP agent, runs it as a child process
// and talks to it as a client built on the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, v1 app API), while recording every raw line on
// the wire in both directions.
//
// The SDK validates each incoming session/update with its v1 zod schema and
// silently drops the ones that fail, so what the client is handed is not
// proof of what the agent sent. The agent's stdout is therefore teed: one
// copy goes into the SDK's ndJsonStream, the other into our own line
// splitter, and every session/update line is checked against the SDK's own
// zSessionNotification schema and the wire rules of docs/design.md §7.4.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import * as acp from "@agentclientprotocol/sdk";

// The v1 zod schemas are not exported from the package entry (its exports map
// only lists the entrypoints), so load the very module the stable v1 entry
// imports its validators from: dist/v1/schema/zod.gen.js, next to
// dist/v1/stable/acp.js. Same file URL, same module instance as the SDK's.
const schemaURL = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk"));
export const schema = await import(schemaURL.href);
export const { zSessionNotification, zContentBlock } = schema;

export { acp };

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(here, "..", "..");

// ---------------------------------------------------------------------------
// A global clock orders wire lines and SDK callbacks of one process.

let clock = 0;
export const tick = () => ++clock;

// ---------------------------------------------------------------------------
// Totals over the whole run (checked by the last test).

export const totals = {
  processes: 0,
  wireUpdates: 0,
  deliveredUpdates: 0,
  afterClose: 0, // session/update lines that arrived after the client closed
  invalid: [], // {line, reason}
  violations: [], // wire-rule violations: {line, reason}
  sdkErrors: [], // console.error lines of the SDK about notifications
};

// The SDK reports dropped notifications and stray responses on console.error.
// Record them (a dropped session/update is an interop failure) and keep them
// out of the test output unless they are unexpected.
const origConsoleError = console.error;
export const sdkLog = [];
let quiet = 0;
console.error = (...args) => {
  const text = args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ");
  if (quiet > 0) return;
  sdkLog.push(text);
  if (/Error handling notification|Invalid message/.test(text)) {
    totals.sdkErrors.push(text);
    origConsoleError(...args);
  }
};

/** Runs fn with the SDK's error log swallowed (for the harness self-check). */
export async function quietSdk(fn) {
  quiet++;
  try {
    return await fn();
  } finally {
    quiet--;
  }
}

// ---------------------------------------------------------------------------
// Building and starting the agent.

let agentBinary;
let buildDir;

/**
 * Builds ./examples/acp-agent once into a temp dir, with its demo tools
 * (echo and fail: the demotools build tag). SESSIONKIT_ACP_AGENT, if
 * set, names an already built agent binary to test instead.
 */
export function buildAgent() {
  if (agentBinary) return agentBinary;
  if (process.env.SESSIONKIT_ACP_AGENT) {
    agentBinary = process.env.SESSIONKIT_ACP_AGENT;
    return agentBinary;
  }
  buildDir = mkdtempSync(join(tmpdir(), "sessionkit-interop-bin-"));
  agentBinary = join(buildDir, process.platform === "win32" ? "acp-agent.exe" : "acp-agent");
  execFileSync("go", ["build", "-tags", "demotools", "-o", agentBinary, "./examples/acp-agent"], {
    cwd: repoRoot,
    stdio: ["ignore", "inherit", "inherit"],
  });
  return agentBinary;
}

export function cleanupBuild() {
  if (buildDir) rmSync(buildDir, { recursive: true, force: true });
}

/** A fresh directory for a --store file; removed by the returned cleanup. */
export function tempStore() {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-interop-store-"));
  return { path: join(dir, "sessions.db"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

// Offline provider unless a test says otherwise: no OPENAI_* or ANTHROPIC_*
// variable of the caller reaches the agent, so it never touches the
// network; extra (a test's own local model server) is added.
export function agentEnv(extra = {}) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith("OPENAI_") || k.startsWith("ANTHROPIC_") || k === "SESSIONKIT_MODEL") delete env[k];
  }
  return { ...env, ...extra };
}

const liveChildren = new Set();
process.on("exit", () => {
  for (const c of liveChildren) {
    try {
      c.kill("SIGKILL");
    } catch {}
  }
});

/**
 * Starts an agent process and connects an SDK client to it.
 *
 * @param {{store: string, args?: string[], env?: Record<string, string>, client?: (proc: AgentProcess) => object}} opts
 *   client, when given, builds the SDK client app (an editor answering the
 *   agent's requests) instead of the default one.
 */
export async function startAgent({ store, args = [], env = {}, client }) {
  const bin = buildAgent();
  const child = spawn(bin, ["--store", store, ...args], {
    env: agentEnv(env),
    stdio: ["pipe", "pipe", "pipe"],
  });
  liveChildren.add(child);
  totals.processes++;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.once("exit", () => liveChildren.delete(child));
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  child.stdin.on("error", () => {}); // EPIPE after the child was killed

  const proc = new AgentProcess(child, exited, () => stderr);

  // Tee stdout: our splitter and the SDK's input stream get the same bytes.
  let sdkReading = true; // false once the SDK cancelled its input (connection closed)
  const sdkInput = new ReadableStream({
    start(controller) {
      child.stdout.on("data", (buf) => {
        proc.feed(buf);
        if (sdkReading) controller.enqueue(new Uint8Array(buf));
      });
      child.stdout.on("end", () => {
        proc.feedEnd();
        if (sdkReading) controller.close();
        sdkReading = false;
      });
    },
    cancel() {
      sdkReading = false;
    },
  });
  const sdkOutput = new WritableStream({
    write(bytes) {
      proc.recordOut(Buffer.from(bytes).toString("utf8"));
      return new Promise((resolve, reject) => {
        child.stdin.write(bytes, (err) => (err ? reject(err) : resolve()));
      });
    },
  });

  proc.conn = (client ? client(proc) : proc.clientApp()).connect(acp.ndJsonStream(sdkOutput, sdkInput));
  proc.agent = proc.conn.agent;
  await new Promise((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  return proc;
}

// ---------------------------------------------------------------------------

export class AgentProcess {
  constructor(child, exited, stderr) {
    this.child = child;
    this.exited = exited;
    this.stderr = stderr;
    /** every line in both directions: {seq, dir: "in"|"out", raw, msg} */
    this.lines = [];
    /** session/update params as the SDK handed them to our callback: {seq, params} */
    this.delivered = [];
    /** extension notifications (_sessionkit/...) the SDK handed us */
    this.extNotifications = [];
    /** requests from the agent to the client */
    this.agentRequests = [];
    /** promise resolutions we observed: {seq, what} */
    this.resolutions = [];
    this.pending = Buffer.alloc(0);
    this.waiters = [];
  }

  clientApp() {
    return acp
      .client({ name: "sessionkit-interop" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        this.delivered.push({ seq: tick(), params });
        this.wake();
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        this.agentRequests.push({ method: "session/request_permission", params });
        return { outcome: { outcome: "cancelled" } };
      })
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
        this.agentRequests.push({ method: "fs/read_text_file", params });
        throw acp.RequestError.invalidRequest(undefined, "this client did not advertise fs");
      })
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
        this.agentRequests.push({ method: "fs/write_text_file", params });
        throw acp.RequestError.invalidRequest(undefined, "this client did not advertise fs");
      })
      .onNotification("*", ({ method, params }) => {
        this.extNotifications.push({ seq: tick(), method, params });
        this.wake();
      })
      .onRequest("*", ({ method, params }) => {
        this.agentRequests.push({ method, params });
        throw acp.RequestError.methodNotFound(method);
      });
  }

  // --- raw wire ------------------------------------------------------------

  feed(buf) {
    this.pending = Buffer.concat([this.pending, buf]);
    let nl;
    while ((nl = this.pending.indexOf(10)) >= 0) {
      const line = this.pending.subarray(0, nl).toString("utf8");
      this.pending = this.pending.subarray(nl + 1);
      this.recordIn(line);
    }
  }

  feedEnd() {
    if (this.pending.length > 0) this.recordIn(this.pending.toString("utf8"));
    this.pending = Buffer.alloc(0);
    this.wake();
  }

  recordIn(raw) {
    if (raw.trim() === "") return;
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      msg = undefined;
    }
    const entry = { seq: tick(), dir: "in", raw, msg };
    this.lines.push(entry);
    if (isUpdate(msg)) checkWireUpdate(entry);
    this.wake();
  }

  recordOut(text) {
    for (const raw of text.split("\n")) {
      if (raw.trim() === "") continue;
      let msg;
      try {
        msg = JSON.parse(raw);
      } catch {
        msg = undefined;
      }
      this.lines.push({ seq: tick(), dir: "out", raw, msg });
    }
  }

  /** Writes one raw line to the agent's stdin, bypassing the SDK. */
  sendRaw(line) {
    this.recordOut(line);
    return new Promise((resolve, reject) => this.child.stdin.write(line + "\n", (e) => (e ? reject(e) : resolve())));
  }

  incoming() {
    return this.lines.filter((l) => l.dir === "in");
  }

  /** Incoming session/update lines, optionally for one session. */
  wireUpdates(sessionId) {
    return this.incoming().filter((l) => isUpdate(l.msg) && (!sessionId || l.msg.params?.sessionId === sessionId));
  }

  deliveredUpdates(sessionId) {
    return this.delivered.filter((d) => !sessionId || d.params.sessionId === sessionId);
  }

  /** The last outgoing request with this method (and matching params). */
  outgoingRequest(method, pred = () => true) {
    const out = this.lines.filter((l) => l.dir === "out" && l.msg?.method === method && "id" in l.msg && pred(l.msg.params));
    return out.at(-1);
  }

  /** The incoming response line to the request with this id. */
  responseTo(id) {
    return this.incoming().find((l) => l.msg && !("method" in l.msg) && l.msg.id === id && ("result" in l.msg || "error" in l.msg));
  }

  wake() {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  /** Resolves once pred() is true (checked after every wire line / callback). */
  async waitFor(pred, what = "condition", timeoutMs = 15000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = pred();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- wire ---\n${this.transcript()}\n--- stderr ---\n${this.stderr()}`);
      await new Promise((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  /** Waits until the SDK has handed over as many updates as the wire carried. */
  async settle() {
    await new Promise((r) => setImmediate(r));
    await this.waitFor(() => this.delivered.length >= this.wireUpdates().length, "SDK delivery to catch up with the wire", 5000).catch(() => {});
  }

  transcript(fromSeq = 0) {
    return this.lines
      .filter((l) => l.seq >= fromSeq)
      .map((l) => `${l.dir === "in" ? "<-" : "->"} ${l.raw.length > 4000 ? `${l.raw.slice(0, 4000)}… (${l.raw.length} bytes)` : l.raw}`)
      .join("\n");
  }

  // --- typed helpers over the SDK ------------------------------------------

  async request(method, params) {
    const v = await this.agent.request(method, params);
    this.resolutions.push({ seq: tick(), what: method });
    return v;
  }

  initialize(clientCapabilities) {
    return this.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities,
      clientInfo: { name: "sessionkit-interop", version: "0.0.0" },
    });
  }

  async newSession(cwd = tmpdir()) {
    const res = await this.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    return res.sessionId;
  }

  /** Sends a prompt; resolves to {response, requestLine, responseLine, resolvedSeq}. */
  async prompt(sessionId, text) {
    const p = this.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    const response = await p;
    const resolvedSeq = tick();
    this.resolutions.push({ seq: resolvedSeq, what: "session/prompt" });
    return this.turnLines(sessionId, text, response, resolvedSeq);
  }

  /** Starts a prompt without awaiting it. */
  startPrompt(sessionId, text) {
    const p = this.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    return p.then((response) => {
      const resolvedSeq = tick();
      this.resolutions.push({ seq: resolvedSeq, what: "session/prompt" });
      return this.turnLines(sessionId, text, response, resolvedSeq);
    });
  }

  turnLines(sessionId, text, response, resolvedSeq) {
    const requestLine = this.outgoingRequest("session/prompt", (p) => p?.sessionId === sessionId && p?.prompt?.[0]?.text === text);
    const responseLine = this.responseTo(requestLine.msg.id);
    return { response, requestLine, responseLine, resolvedSeq };
  }

  async loadSession(sessionId, cwd = tmpdir()) {
    const p = this.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    const response = await p;
    const resolvedSeq = tick();
    this.resolutions.push({ seq: resolvedSeq, what: "session/load" });
    const requestLine = this.outgoingRequest("session/load", (p) => p?.sessionId === sessionId);
    return { response, requestLine, responseLine: this.responseTo(requestLine.msg.id), resolvedSeq };
  }

  /** Closes the SDK connection and ends the child (SIGKILL if it lingers). */
  async stop({ kill = false } = {}) {
    this.closedSeq = tick();
    try {
      this.conn?.close();
    } catch {}
    if (kill) this.child.kill("SIGKILL");
    else this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 3000);
    const res = await this.exited;
    clearTimeout(timer);
    this.finalCheck();
    return res;
  }

  /** Per-session: the SDK delivered as many session/update as the wire carried. */
  finalCheck() {
    const wire = this.wireUpdates().filter((l) => l.seq < this.closedSeq);
    totals.wireUpdates += wire.length;
    totals.deliveredUpdates += this.delivered.length;
    // Lines that came after the client closed the connection never reach
    // the SDK; they are still checked against the schema and wire rules.
    totals.afterClose += this.wireUpdates().length - wire.length;
  }

  /** Counts per session: {sessionId: {wire, delivered}}. */
  counts() {
    const out = {};
    for (const l of this.wireUpdates()) {
      const s = l.msg.params?.sessionId;
      (out[s] ??= { wire: 0, delivered: 0 }).wire++;
    }
    for (const d of this.delivered) {
      (out[d.params.sessionId] ??= { wire: 0, delivered: 0 }).delivered++;
    }
    return out;
  }
}

export function isUpdate(msg) {
  return !!msg && typeof msg === "object" && msg.method === "session/update" && !("id" in msg);
}

// ---------------------------------------------------------------------------
// Wire rules (docs/design.md §7.3, §7.4) on the raw JSON.

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const UPDATE_KEYS = new Set(["sessionUpdate", "compactionId", "status", "summary", "error", "_meta"]);
const CHUNK_KEYS = new Set(["sessionUpdate", "compactionId", "content", "_meta"]);

/** Checks one raw session/update line; records problems in totals. */
export function checkWireUpdate(entry) {
  const problems = wireProblems(entry.msg);
  const parsed = zSessionNotification.safeParse(entry.msg.params);
  entry.valid = parsed.success;
  entry.problems = problems;
  if (!parsed.success) {
    totals.invalid.push({ line: entry.raw, reason: parsed.error.message });
  }
  for (const p of problems) totals.violations.push({ line: entry.raw, reason: p });
}

/** Returns the list of wire-rule violations of one raw notification. */
export function wireProblems(msg) {
  const out = [];
  const p = msg.params;
  if (msg.jsonrpc !== "2.0") out.push('jsonrpc is not "2.0"');
  if (!p || typeof p !== "object") return [...out, "params is not an object"];
  if (typeof p.sessionId !== "string" || p.sessionId === "") out.push("sessionId missing or empty");
  if ("_meta" in p && p._meta === null) out.push('"_meta": null on the notification');
  const u = p.update;
  if (!u || typeof u !== "object") return [...out, "update is not an object"];
  if ("_meta" in u && u._meta === null) out.push('"_meta": null on the update');
  switch (u.sessionUpdate) {
    case "compaction_update": {
      for (const k of Object.keys(u)) if (!UPDATE_KEYS.has(k)) out.push(`unknown key ${JSON.stringify(k)} (the SDK strips it)`);
      if (typeof u.compactionId !== "string" || u.compactionId === "") out.push("compactionId missing, not a string or empty");
      if (typeof u.status !== "string") out.push("status missing, null or not a string");
      const terminalClear = u.status === "failed" || u.status === "cancelled";
      if ("summary" in u) {
        if (u.summary === null) {
          if (!terminalClear) out.push('"summary": null outside a failed/cancelled terminal update');
        } else if (!Array.isArray(u.summary)) {
          out.push("summary is not an array (the SDK turns it into 'omitted')");
        } else if (u.summary.length === 0) {
          out.push('"summary": [] (clears)');
        } else {
          u.summary.forEach((b, i) => {
            if (!zContentBlock.safeParse(b).success) out.push(`summary[${i}] is not a valid ContentBlock (the SDK drops it)`);
          });
          if (u.status !== "completed") out.push("a non-empty summary with a status other than completed");
        }
      }
      if ("error" in u) {
        if (u.error === null) out.push('"error": null');
        else if (typeof u.error !== "string") out.push("error is not a string");
        else if (u.status !== "failed") out.push("error with a status other than failed");
      }
      if (typeof u.status === "string" && !TERMINAL.has(u.status) && u.status !== "in_progress" && !u.status.startsWith("_")) {
        out.push(`status ${JSON.stringify(u.status)} is neither known nor _-prefixed`);
      }
      break;
    }
    case "compaction_summary_chunk": {
      for (const k of Object.keys(u)) if (!CHUNK_KEYS.has(k)) out.push(`unknown key ${JSON.stringify(k)} (the SDK strips it)`);
      if (typeof u.compactionId !== "string" || u.compactionId === "") out.push("compactionId missing, not a string or empty");
      if (!u.content || typeof u.content !== "object" || Array.isArray(u.content)) out.push("chunk content is not one object");
      else if (!zContentBlock.safeParse(u.content).success) out.push("chunk content is not a valid ContentBlock");
      break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Client-side reducer with the RFD's semantics.

export function textOf(blocks) {
  return (blocks ?? []).map((b) => (b?.type === "text" ? b.text : `[${b?.type}]`)).join("");
}

/**
 * Reduces session/update notifications into a timeline the way an RFD client
 * does: the first notification for a compaction ID fixes its position; later
 * updates patch it in place (omitted = unchanged, null = clear, value =
 * replace; summary [] clears too); chunks append; unknown statuses are kept
 * verbatim. Consecutive message chunks of one role form one message item.
 */
export class Timeline {
  constructor() {
    this.items = [];
    this.entities = new Map();
    this.tools = new Map();
    this.usage = [];
    this.commands = undefined;
    this.other = [];
  }

  apply(update) {
    switch (update.sessionUpdate) {
      case "user_message_chunk":
      case "agent_message_chunk":
      case "agent_thought_chunk": {
        const kind = update.sessionUpdate.replace("_message_chunk", "").replace("_chunk", "");
        const text = textOf([update.content]);
        const last = this.items.at(-1);
        if (last && last.kind === kind) last.text += text;
        else this.items.push({ kind, text });
        break;
      }
      case "tool_call": {
        const item = { kind: "tool", id: update.toolCallId, title: update.title, status: update.status ?? "pending", output: "" };
        this.tools.set(update.toolCallId, item);
        this.items.push(item);
        break;
      }
      case "tool_call_update": {
        let item = this.tools.get(update.toolCallId);
        if (!item) {
          item = { kind: "tool", id: update.toolCallId, title: update.title, status: "pending", output: "" };
          this.tools.set(update.toolCallId, item);
          this.items.push(item);
        }
        if (update.status != null) item.status = update.status;
        if (update.content != null) item.output = update.content.map((c) => (c.type === "content" ? textOf([c.content]) : `[${c.type}]`)).join("");
        break;
      }
      case "compaction_update": {
        const e = this.entity(update.compactionId);
        e.status = update.status; // verbatim, known or not
        e.statuses.push(update.status);
        if (update.summary !== undefined) e.summary = update.summary === null ? [] : [...update.summary];
        if (update.error !== undefined) e.error = update.error === null ? undefined : update.error;
        if (update._meta !== undefined) e.meta = update._meta === null ? undefined : update._meta;
        break;
      }
      case "compaction_summary_chunk": {
        const e = this.entity(update.compactionId);
        e.summary.push(update.content);
        e.chunks++;
        break;
      }
      case "usage_update":
        this.usage.push({ used: update.used, size: update.size });
        break;
      case "available_commands_update":
        this.commands = update.availableCommands;
        break;
      default:
        this.other.push(update);
    }
  }

  entity(id) {
    let e = this.entities.get(id);
    if (!e) {
      e = { id, status: "in_progress", statuses: [], summary: [], error: undefined, meta: undefined, chunks: 0 };
      this.entities.set(id, e);
      this.items.push({ kind: "compaction", id });
    }
    return e;
  }

  /** The timeline with compaction entities resolved to their reduced state. */
  view() {
    return this.items.map((it) => {
      if (it.kind !== "compaction") return { ...it };
      const e = this.entities.get(it.id);
      return { kind: "compaction", id: e.id, status: e.status, summary: textOf(e.summary), error: e.error };
    });
  }
}

export function reduce(updates) {
  const t = new Timeline();
  for (const u of updates) t.apply(u);
  return t;
}
