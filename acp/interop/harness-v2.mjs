// Test harness for ACP v2: runs the sessionkit ACP agent as a child process
// and talks to it either with raw JSON-RPC lines or with the official SDK's
// v2 client (@agentclientprotocol/sdk/experimental/v2), recording every raw
// line on the wire. Every line the agent writes on a v2 connection is
// validated with the SDK's v2 zod validators (dist/v2/schema/zod.gen.js):
// the SDK drops invalid notifications with only a console.error, so what it
// hands the client proves nothing about the wire.

import { spawn } from "node:child_process";
import { isDeepStrictEqual } from "node:util";

import * as acp2 from "@agentclientprotocol/sdk/experimental/v2";

import { agentEnv, buildAgent } from "./harness.mjs";

export { acp2 };

const v2URL = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk/experimental/v2"));
export const z2 = await import(v2URL.href);
// The SDK's unstable v2 validators: session/fork is only there.
const v2uURL = new URL("../unstable/schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk/experimental/v2"));
export const zu2 = await import(v2uURL.href);
const v1URL = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk"));
export const z1 = await import(v1URL.href);

/** Totals over the whole file (checked by its last test). */
export const v2totals = { processes: 0, v2Lines: 0, invalid: [], sdkErrors: [] };

const origConsoleError = console.error;
console.error = (...args) => {
  const text = args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ");
  if (/Error handling notification|Invalid message/.test(text)) v2totals.sdkErrors.push(text);
  origConsoleError(...args);
};

// The v2 result validator of each method sessionkit answers.
const RESULTS = {
  initialize: z2.zInitializeResponse,
  "session/new": z2.zNewSessionResponse,
  "session/prompt": z2.zPromptResponse,
  "session/resume": z2.zResumeSessionResponse,
  "session/list": z2.zListSessionsResponse,
  "session/close": z2.zCloseSessionResponse,
  "session/delete": z2.zDeleteSessionResponse,
  "session/set_config_option": z2.zSetSessionConfigOptionResponse,
  "tool_call/cancel": z2.zCancelToolCallResponse,
  "session/fork": zu2.zForkSessionResponse, // unstable
};

const KNOWN = {
  state: new Set(["running", "idle", "requires_action"]),
  stopReason: new Set(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]),
  compaction: new Set(["in_progress", "completed", "failed", "cancelled"]),
};

// Custom enum values only with a "_" prefix (unknown values without one are
// reserved for future ACP versions).
function enumProblem(kind, value) {
  if (value === undefined || value === null || KNOWN[kind].has(value) || String(value).startsWith("_")) return null;
  return `${kind} ${JSON.stringify(value)} is neither an ACP value nor "_"-prefixed`;
}

const idKey = (id) => JSON.stringify(id);

/**
 * withoutNewer returns result without the fields that ACP stabilized after
 * the SDK these tests use (2.4.0), which its validators drop as unknown,
 * checking each field's shape here instead (bad reports a wrong one):
 * initialize's capabilities.session.systemPrompt (stabilized 2026-11-06:
 * `{}` or `{"mode": {"override": {}}}`), and capabilities.session.fork
 * (session/fork, in the SDK's unstable v2 schema only: `{}`). Every other
 * field must still be read as written.
 */
export function withoutNewer(method, result, bad) {
  const caps = result?.capabilities?.session;
  if (method !== "initialize" || caps === undefined || (caps.systemPrompt === undefined && caps.fork === undefined)) return result;
  const { systemPrompt: sp, fork, ...session } = caps;
  const marker = (v, ...keys) => v !== null && typeof v === "object" && Object.keys(v).every((k) => keys.includes(k) || k === "_meta");
  if (sp !== undefined && !(marker(sp, "mode") && (sp.mode === undefined || marker(sp.mode, "override")))) {
    bad(`initialize result: capabilities.session.systemPrompt is not {} or {"mode":{"override":{}}}: ${JSON.stringify(sp)}`);
  }
  if (fork !== undefined && !marker(fork)) bad(`initialize result: capabilities.session.fork is not {}: ${JSON.stringify(fork)}`);
  return { ...result, capabilities: { ...result.capabilities, session } };
}

export class V2Agent {
  /** Starts an agent process (--store path, extra args; env as harness.mjs's agentEnv makes it). */
  static async start({ store, args = [], env = {} }) {
    const child = spawn(buildAgent(), ["--store", store, ...args], { stdio: ["pipe", "pipe", "pipe"], env: agentEnv(env) });
    v2totals.processes++;
    const a = new V2Agent(child);
    await new Promise((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    return a;
  }

  constructor(child) {
    this.child = child;
    this.lines = []; // {seq, dir: "in"|"out", raw, msg}
    this.methods = new Map(); // request id -> method, of what the client sent
    this.waiters = [];
    this.v2 = false; // a v2 initialize succeeded: every later line is v2
    this.nextId = 1;
    this.buf = "";
    this.stderr = "";
    this.exited = new Promise((resolve) => child.once("exit", resolve));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => (this.stderr += d));
    child.stdin.on("error", () => {});
    this.sdkReading = false;
    this.sdkInput = new ReadableStream({
      start: (controller) => {
        child.stdout.on("data", (buf) => {
          this.feed(buf.toString("utf8"));
          if (this.sdkReading) controller.enqueue(new Uint8Array(buf));
        });
        child.stdout.on("end", () => {
          if (this.sdkReading) controller.close();
          this.sdkReading = false;
        });
      },
      cancel: () => {
        this.sdkReading = false;
      },
    });
  }

  feed(text) {
    this.buf += text;
    let i;
    while ((i = this.buf.indexOf("\n")) >= 0) {
      const raw = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (raw.trim() !== "") this.incoming(raw);
    }
  }

  incoming(raw) {
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      msg = undefined;
    }
    const entry = { seq: this.lines.length + 1, dir: "in", raw, msg };
    this.lines.push(entry);
    this.validate(entry);
    for (const w of [...this.waiters]) w();
  }

  /** Records and writes one line the client sends. */
  writeLine(line) {
    const entry = { seq: this.lines.length + 1, dir: "out", raw: line };
    try {
      entry.msg = JSON.parse(line);
    } catch {}
    const msgs = Array.isArray(entry.msg) ? entry.msg : [entry.msg];
    for (const m of msgs) if (m && m.method && m.id !== undefined) this.methods.set(idKey(m.id), m.method);
    this.lines.push(entry);
    return new Promise((resolve, reject) => this.child.stdin.write(line + "\n", (err) => (err ? reject(err) : resolve())));
  }

  validate(entry) {
    const { msg, raw } = entry;
    const bad = (reason) => v2totals.invalid.push({ line: raw.slice(0, 400), reason });
    if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") return bad("not a JSON-RPC 2.0 object");
    const method = msg.id !== undefined && !msg.method ? this.methods.get(idKey(msg.id)) : undefined;
    // The response to an initialize decides whether the connection is v2.
    if (method === "initialize" && msg.result) {
      if (msg.result.protocolVersion === 2) {
        this.v2 = true;
      } else {
        const r = z1.zInitializeResponse.safeParse(msg.result);
        if (!r.success) bad(`v1 initialize result: ${r.error.message}`);
        return;
      }
    }
    if (!this.v2 && !msg.error) return;
    v2totals.v2Lines++;
    entry.v2 = true;
    if (msg.method === "session/update") {
      const r = z2.zUpdateSessionNotification.safeParse(msg.params);
      if (!r.success) return bad(`session/update: ${r.error.message}`);
      // The SDK drops invalid list items and unknown members silently:
      // what it reads must be what the agent wrote.
      if (!isDeepStrictEqual(r.data, msg.params)) return bad(`session/update: the SDK reads ${JSON.stringify(r.data)}`);
      const u = msg.params.update;
      const p =
        (u.sessionUpdate === "state_update" && (enumProblem("state", u.state) || enumProblem("stopReason", u.stopReason))) ||
        (u.sessionUpdate === "compaction_update" && enumProblem("compaction", u.status));
      if (p) bad(p);
      return;
    }
    if (msg.method === "session/request_permission") {
      const r = z2.zRequestPermissionRequest.safeParse(msg.params);
      if (!r.success) return bad(`session/request_permission: ${r.error.message}`);
      if (!isDeepStrictEqual(r.data, msg.params)) return bad(`session/request_permission: the SDK reads ${JSON.stringify(r.data)}`);
      return;
    }
    if (msg.method === "$/cancel_request") {
      const r = z2.zCancelRequestNotification.safeParse(msg.params);
      if (!r.success) return bad(`$/cancel_request: ${r.error.message}`);
      if (!isDeepStrictEqual(r.data, msg.params)) return bad(`$/cancel_request: the SDK reads ${JSON.stringify(r.data)}`);
      return;
    }
    if (msg.method) {
      if (!msg.method.startsWith("_")) bad(`unexpected agent-to-client method ${msg.method}`);
      return;
    }
    if (msg.error) {
      const r = z2.zError.safeParse(msg.error);
      if (!r.success) bad(`error: ${r.error.message}`);
      if (msg.error.code === -32022) {
        const d = z2.zUnsupportedProtocolVersionErrorData.safeParse(msg.error.data);
        if (!d.success) bad(`-32022 data: ${d.error.message}`);
      }
      return;
    }
    if (msg.id === null) return bad("a result with id null");
    const schema = RESULTS[method];
    if (!schema) {
      if (!method?.startsWith("_")) bad(`a result to an unknown request ${JSON.stringify(msg.id)} (${method})`);
      return;
    }
    const r = schema.safeParse(msg.result);
    if (!r.success) bad(`${method} result: ${r.error.message}`);
    else if (!isDeepStrictEqual(r.data, withoutNewer(method, msg.result, bad))) bad(`${method} result: the SDK reads ${JSON.stringify(r.data)}`);
  }

  /** Waits until pred() returns something truthy, and returns it. */
  waitFor(pred, what, ms = 30000) {
    return new Promise((resolve, reject) => {
      const check = () => {
        const v = pred();
        if (v) {
          this.waiters = this.waiters.filter((w) => w !== check);
          clearTimeout(timer);
          resolve(v);
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(`timed out waiting for ${what}\n${this.transcript()}`));
      }, ms);
      if (!check()) this.waiters.push(check);
    });
  }

  /** Sends a raw request and resolves with the response line's entry. */
  async request(method, params, id = this.nextId++) {
    await this.writeLine(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    return this.waitFor(() => this.incomingLines().find((l) => l.msg?.id === id && !l.msg.method), `the response to ${method} ${id}`);
  }

  incomingLines() {
    return this.lines.filter((l) => l.dir === "in");
  }

  /** The session/update payloads the agent wrote after line seq. */
  updates(after = 0, before = Infinity) {
    return this.incomingLines()
      .filter((l) => l.seq > after && l.seq < before && l.msg?.method === "session/update")
      .map((l) => ({ seq: l.seq, ...l.msg.params.update }));
  }

  /** A stream for the SDK's v2 client, teed to the recorder. */
  sdkStream() {
    this.sdkReading = true;
    const out = new WritableStream({
      write: (bytes) => {
        const text = Buffer.from(bytes).toString("utf8");
        for (const line of text.split("\n")) if (line.trim() !== "") void this.writeLine(line);
      },
    });
    return acp2.ndJsonStream(out, this.sdkInput);
  }

  transcript() {
    return this.lines
      .slice(-60)
      .map((l) => `${l.dir === "in" ? "<-" : "->"} ${l.raw.slice(0, 300)}`)
      .join("\n");
  }

  async stop() {
    this.child.stdin.end();
    const t = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(t);
  }
}

/** The v2 client app used by the tests (permission requests are cancelled). */
export function v2Client() {
  return acp2
    .client({ name: "sessionkit-interop-v2" })
    .onRequest(acp2.methods.client.session.requestPermission, () => ({ outcome: { outcome: "cancelled" } }))
    .onNotification(acp2.methods.client.session.update, () => {});
}

export const V2_INIT = { protocolVersion: 2, info: { name: "sessionkit-interop-v2", version: "0" }, capabilities: {} };
