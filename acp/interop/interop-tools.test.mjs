// Interop tests of the coding agent's tools: the sessionkit ACP agent
// (examples/acp-agent, offline provider) against an editor built on the
// official ACP TypeScript SDK client (v1). The editor keeps its files in
// memory (read from the disk on first use: its "buffers", which the disk
// never sees), runs terminal commands with node:child_process, and answers
// session/request_permission as each test says. Every line on the wire is
// recorded (harness.mjs), so the tests check the order of requests and
// updates on the wire itself.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { acp, buildAgent, cleanupBuild, startAgent, tempStore, tick } from "./harness.mjs";

const CAPABLE = { session: { compaction: {} } };
const EDITOR_CAPS = { fs: { readTextFile: true, writeTextFile: true }, terminal: true, ...CAPABLE };
// t7's editor also takes notices: what the agent tells the user that is not
// session history (automatic compaction held, say) then comes as notice
// updates, not as agent text that a replay could not show.
const T7_CAPS = { ...EDITOR_CAPS, session: { compaction: {}, notices: {} } };

before(() => buildAgent());
after(() => cleanupBuild());

/** A temp project directory with notes.txt; removed by cleanup. */
function project() {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-tools-"));
  writeFileSync(join(dir, "notes.txt"), "The release is in March.\n");
  return { dir, file: join(dir, "notes.txt"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The editor: an SDK client app that implements fs/*, terminal/* and
 * session/request_permission. permission(params) answers a permission
 * request (a promise may wait); calls records every request with its seq.
 */
class Editor {
  constructor({ permission = () => allow() } = {}) {
    this.files = new Map(); // path -> text (the editor's buffers)
    this.terminals = new Map();
    this.calls = []; // {seq, method, params}
    this.permission = permission;
    this.nextTerminal = 1;
  }

  app(proc) {
    const rec = (method, params) => {
      this.calls.push({ seq: tick(), method, params });
      proc.wake();
    };
    return acp
      .client({ name: "sessionkit-interop-editor" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        proc.delivered.push({ seq: tick(), params });
        proc.wake();
      })
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
        rec("fs/read_text_file", params);
        if (!this.files.has(params.path)) {
          if (!existsSync(params.path)) throw acp.RequestError.resourceNotFound(params.path);
          this.files.set(params.path, readFileSync(params.path, "utf8"));
        }
        return { content: this.files.get(params.path) };
      })
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
        rec("fs/write_text_file", params);
        this.files.set(params.path, params.content);
        return {};
      })
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        rec("session/request_permission", params);
        return await this.permission(params);
      })
      .onRequest(acp.methods.client.terminal.create, ({ params }) => {
        rec("terminal/create", params);
        const id = `term-${this.nextTerminal++}`;
        const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, stdio: ["ignore", "pipe", "pipe"] });
        const term = { child, output: "", truncated: false, exit: undefined, limit: params.outputByteLimit ?? 1 << 20 };
        term.exited = new Promise((resolve) =>
          child.once("exit", (code, signal) => {
            term.exit = { exitCode: code, signal };
            resolve(term.exit);
          }),
        );
        const add = (d) => {
          term.output += d.toString("utf8");
          if (Buffer.byteLength(term.output) > term.limit) {
            term.output = term.output.slice(-term.limit);
            term.truncated = true;
          }
        };
        child.stdout.on("data", add);
        child.stderr.on("data", add);
        this.terminals.set(id, term);
        return { terminalId: id };
      })
      .onRequest(acp.methods.client.terminal.output, ({ params }) => {
        rec("terminal/output", params);
        const term = this.terminals.get(params.terminalId);
        return { output: term.output, truncated: term.truncated, exitStatus: term.exit ?? null };
      })
      .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
        rec("terminal/wait_for_exit", params);
        return await this.terminals.get(params.terminalId).exited;
      })
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        rec("terminal/kill", params);
        this.terminals.get(params.terminalId)?.child.kill("SIGKILL");
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        rec("terminal/release", params);
        const term = this.terminals.get(params.terminalId);
        if (term && term.exit === undefined) term.child.kill("SIGKILL");
        this.terminals.delete(params.terminalId);
        return {};
      });
  }

  methods() {
    return this.calls.map((c) => c.method);
  }
}

const allow = (optionId = "allow") => ({ outcome: { outcome: "selected", optionId } });
const reject = () => ({ outcome: { outcome: "selected", optionId: "reject" } });

/** Runs fn with an agent process whose client is editor; always ended. */
async function withEditor(t, { editor, store, args = [] }, fn) {
  const own = store ? null : tempStore();
  const proc = await startAgent({ store: (store ?? own).path, args, client: (p) => editor.app(p) });
  try {
    const result = await fn(proc);
    const exit = await proc.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
    assert.doesNotMatch(proc.stderr(), /panic|DATA RACE/);
    assert.deepEqual(proc.wireUpdates().filter((l) => !l.valid).map((l) => l.raw), [], "every update valid for the SDK's v1 schema");
    return result;
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    await proc.stop({ kill: true });
    throw err;
  } finally {
    own?.cleanup();
  }
}

const upd = (l) => l.msg.params.update;

/** The wire lines of one tool call: its updates and the requests about it. */
function toolLines(proc, editor, toolCallId) {
  const updates = proc.wireUpdates().filter((l) => upd(l).toolCallId === toolCallId);
  return { updates, create: updates.find((l) => upd(l).sessionUpdate === "tool_call"), final: updates.findLast((l) => ["completed", "failed"].includes(upd(l).status)) };
}

/** The wire seq of an editor request (the agent's request line). */
function requestLine(proc, method, nth = 0) {
  return proc.incoming().filter((l) => l.msg?.method === method && "id" in l.msg)[nth];
}

/** The one tool call of a turn: the tool_call line after the prompt's request. */
function toolCallOf(proc, turn) {
  const l = proc.wireUpdates().find((x) => x.seq > turn.requestLine.seq && upd(x).sessionUpdate === "tool_call");
  assert.ok(l, "a tool_call in the turn");
  return upd(l).toolCallId;
}

/**
 * One turn with an editor: a fresh project and agent, the editor's
 * capabilities, a session in the project, prompt, a turn that ends with
 * end_turn; check gets the process, the project, the turn and its tool
 * call's ID.
 */
async function editorTurn(t, { editor, caps = EDITOR_CAPS, prompt, setup = () => {} }, check) {
  const p = project();
  setup(p);
  try {
    await withEditor(t, { editor }, async (proc) => {
      await proc.initialize(caps);
      const sid = await proc.newSession(p.dir);
      const turn = await proc.prompt(sid, prompt);
      assert.equal(turn.response.stopReason, "end_turn");
      await proc.settle();
      await check(proc, p, turn, toolCallOf(proc, turn));
    });
  } finally {
    p.cleanup();
  }
}

test("t1. a turn that reads a file through the editor: fs/read_text_file after the tool_call, the editor's unsaved text", async (t) => {
  const editor = new Editor();
  await editorTurn(t, { editor, prompt: "What does notes.txt say?", setup: (p) => editor.files.set(p.file, "The release is in May (unsaved).\n") }, async (proc, p, turn, id) => {
    const { create, final } = toolLines(proc, editor, id);
    assert.equal(upd(create).kind, "read");
    assert.equal(upd(create).title, "Read notes.txt");
    assert.deepEqual(upd(create).locations, [{ path: p.file }]);
    assert.deepEqual(upd(create).rawInput, { path: "notes.txt" });
    const read = requestLine(proc, "fs/read_text_file");
    assert.equal(read.msg.params.path, p.file);
    assert.ok(create.seq < read.seq && read.seq < final.seq, "tool_call, then the read, then the result");
    assert.equal(upd(final).status, "completed");
    assert.match(JSON.stringify(upd(final).content), /May \(unsaved\)/, "the editor's buffer, not the disk");
    assert.deepEqual(editor.methods(), ["fs/read_text_file"]);
  });
});

test("t2. an edit after an approved permission request: the request after the tool_call, the diff, the editor's file changed", async (t) => {
  const editor = new Editor();
  await editorTurn(t, { editor, prompt: 'replace "March" with "April" in notes.txt' }, async (proc, p, turn, id) => {
    const { create, final } = toolLines(proc, editor, id);
    const diff = { type: "diff", path: p.file, oldText: "March", newText: "April" };
    assert.equal(upd(create).kind, "edit");
    assert.deepEqual(upd(create).content, [diff], "the tool_call shows the diff");
    const perm = requestLine(proc, "session/request_permission");
    assert.ok(create.seq < perm.seq, "the client sees the tool_call before the permission request about it");
    assert.equal(perm.msg.params.toolCall.toolCallId, id);
    assert.deepEqual(
      perm.msg.params.options.map((o) => o.kind),
      ["allow_once", "allow_always", "reject_once"],
    );
    assert.deepEqual(perm.msg.params.toolCall.content, [{ type: "diff", path: p.file, oldText: "The release is in March.\n", newText: "The release is in April.\n" }], "the request shows the whole change");
    const write = requestLine(proc, "fs/write_text_file");
    assert.ok(perm.seq < write.seq && write.seq < final.seq);
    assert.equal(upd(final).status, "completed");
    assert.deepEqual(upd(final).content[0], diff, "the result keeps the diff");
    assert.equal(editor.files.get(p.file), "The release is in April.\n", "the editor's file shows the change");
    assert.equal(readFileSync(p.file, "utf8"), "The release is in March.\n", "written through the editor, not to the disk");
    assert.deepEqual(editor.methods(), ["fs/read_text_file", "session/request_permission", "fs/write_text_file"]);
  });
});

test("t3. a denied edit leaves the file unchanged and says the user declined", async (t) => {
  const editor = new Editor({ permission: reject });
  await editorTurn(t, { editor, prompt: 'replace "March" with "April" in notes.txt' }, async (proc, p, turn, id) => {
    const { final } = toolLines(proc, editor, id);
    assert.equal(upd(final).status, "failed");
    assert.match(JSON.stringify(upd(final).content), /The user declined/);
    assert.ok(!JSON.stringify(upd(final).content).includes('"diff"'), "no diff for what was not changed");
    assert.ok(!editor.methods().includes("fs/write_text_file"), "nothing written");
    assert.equal(editor.files.get(p.file), "The release is in March.\n");
    assert.equal(readFileSync(p.file, "utf8"), "The release is in March.\n");
  });
});

test("t4. a command run through the editor's terminal: embedded live, waited for, its output, released", async (t) => {
  const editor = new Editor();
  await editorTurn(t, { editor, prompt: "run `cat notes.txt; printf oops >&2; exit 3`" }, async (proc, p, turn, id) => {
    const { create, updates, final } = toolLines(proc, editor, id);
    assert.equal(upd(create).kind, "execute");
    assert.deepEqual(editor.methods(), ["session/request_permission", "terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]);
    const created = editor.calls.find((c) => c.method === "terminal/create").params;
    // The agent's own executable as its sandbox helper, which runs sh -c
    // with the clean environment (tools/sandbox).
    assert.equal(realpathSync(created.command), realpathSync(buildAgent()));
    assert.deepEqual(created.args.slice(-4), ["--", "sh", "-c", "cat notes.txt; printf oops >&2; exit 3"]);
    assert.ok(!(created.env ?? []).some((v) => /KEY|TOKEN|SECRET|^OPENAI_|^ANTHROPIC_/i.test(v.name)), "no credential in the environment");
    assert.equal(created.cwd, p.dir);
    assert.ok(created.outputByteLimit > 0, "bounded output");
    const live = updates.find((l) => upd(l).content?.[0]?.type === "terminal");
    assert.ok(live, "the terminal embedded in the tool call");
    const termId = upd(live).content[0].terminalId;
    const createLine = requestLine(proc, "terminal/create");
    const release = requestLine(proc, "terminal/release");
    assert.ok(createLine.seq < live.seq && live.seq < release.seq && release.seq < final.seq);
    assert.equal(release.msg.params.terminalId, termId);
    const text = JSON.stringify(upd(final).content);
    assert.match(text, /exit status 3/);
    assert.match(text, /The release is in March/);
    assert.match(text, /oops/);
    assert.equal(editor.terminals.size, 0, "released");
  });
});

test("t5. a turn cancelled during a pending permission request: cancelled at once, the client's cancelled answer taken, nothing changed", async (t) => {
  const p = project();
  let pending;
  const asked = new Promise((resolve) => {
    pending = resolve;
  });
  let answer;
  const editor = new Editor({
    permission: () =>
      new Promise((resolve) => {
        answer = resolve;
        pending();
      }),
  });
  try {
    await withEditor(t, { editor }, async (proc) => {
      await proc.initialize(EDITOR_CAPS);
      const sid = await proc.newSession(p.dir);
      const turn = proc.startPrompt(sid, 'replace "March" with "April" in notes.txt');
      await asked;
      await proc.agent.notify(acp.methods.agent.session.cancel, { sessionId: sid });
      // As ACP requires, the client answers its pending request cancelled.
      answer({ outcome: { outcome: "cancelled" } });
      const r = await turn;
      assert.equal(r.response.stopReason, "cancelled");
      await proc.settle();
      const { final } = toolLines(proc, editor, toolCallOf(proc, r));
      assert.equal(upd(final).status, "failed");
      assert.ok(!editor.methods().includes("fs/write_text_file"));
      assert.equal(editor.files.get(p.file), "The release is in March.\n");
      // The session goes on.
      const next = await proc.prompt(sid, "What does notes.txt say?");
      assert.equal(next.response.stopReason, "end_turn");
    });
  } finally {
    p.cleanup();
  }
});

test("t6. the same turns against a client with neither fs nor terminal: local execution in the session's directory", async (t) => {
  const p = project();
  const editor = new Editor();
  try {
    await withEditor(t, { editor }, async (proc) => {
      await proc.initialize({});
      const sid = await proc.newSession(p.dir);
      const read = await proc.prompt(sid, "What does notes.txt say?");
      const edit = await proc.prompt(sid, 'replace "March" with "April" in notes.txt');
      const run = await proc.prompt(sid, "run `cat notes.txt; exit 2`");
      for (const r of [read, edit, run]) assert.equal(r.response.stopReason, "end_turn");
      await proc.settle();
      assert.deepEqual(editor.methods(), ["session/request_permission", "session/request_permission"], "only permission requests reach the client");
      assert.equal(readFileSync(p.file, "utf8"), "The release is in April.\n", "edited on the disk");
      const readFinal = toolLines(proc, editor, toolCallOf(proc, read)).final;
      assert.match(JSON.stringify(upd(readFinal).content), /March/);
      const editFinal = toolLines(proc, editor, toolCallOf(proc, edit)).final;
      assert.deepEqual(upd(editFinal).content[0], { type: "diff", path: p.file, oldText: "March", newText: "April" });
      const runFinal = toolLines(proc, editor, toolCallOf(proc, run)).final;
      assert.match(JSON.stringify(upd(runFinal).content), /exit status 2.*April/);
      const escape = await proc.prompt(sid, "What does ../secret.txt say?");
      assert.equal(escape.response.stopReason, "end_turn");
      await proc.settle();
      const escapeFinal = toolLines(proc, editor, toolCallOf(proc, escape)).final;
      assert.equal(upd(escapeFinal).status, "failed");
      assert.match(JSON.stringify(upd(escapeFinal).content), /outside the workspace/);
    });
  } finally {
    p.cleanup();
  }
});

/**
 * What a replay must reproduce of a session's updates: every tool call as
 * created, every final tool call update, every terminal compaction update
 * and the agent text of each message, in order (live: chunks joined by
 * message; in_progress and terminal updates left out).
 */
function durable(lines) {
  const out = [];
  for (const l of lines) {
    const u = upd(l);
    switch (u.sessionUpdate) {
      case "agent_message_chunk": {
        const last = out.at(-1);
        if (last?.item === "agent" && last.id === u.messageId) last.text += u.content.text;
        else out.push({ item: "agent", id: u.messageId, text: u.content.text });
        break;
      }
      case "tool_call":
        out.push({ item: "tool_call", ...u });
        break;
      case "tool_call_update":
        if (u.status === "completed" || u.status === "failed") out.push({ item: "tool_result", ...u });
        break;
      case "compaction_update":
        if (u.status !== "in_progress") out.push({ item: "compaction", id: u.compactionId, status: u.status, summary: u.summary });
        break;
    }
  }
  return out;
}

test("t7. a conversation that compacts automatically in the middle of tool use, replayed by session/load in a fresh agent: every tool call, diff and compaction at its position", async (t) => {
  const p = project();
  const store = tempStore();
  const args = ["--auto-compact-tokens", "150"];
  const prompts = [
    "What does notes.txt say?",
    'replace "March" with "April" in notes.txt',
    "run `cat notes.txt`",
    "please call write_file with path: todo.md and content: ship it",
    'replace "April" with "June" in notes.txt',
    "run `ls`",
  ];
  try {
    const live = await withEditor(t, { editor: new Editor(), store, args }, async (proc) => {
      await proc.initialize(T7_CAPS);
      const sid = await proc.newSession(p.dir);
      for (const text of prompts) assert.equal((await proc.prompt(sid, text)).response.stopReason, "end_turn");
      await proc.settle();
      return { sid, items: durable(proc.wireUpdates(sid)) };
    });
    const kinds = live.items.map((i) => i.item);
    t.diagnostic(`live: ${kinds.join(", ")}`);
    assert.ok(kinds.filter((k) => k === "compaction").length >= 2, "compacted automatically, more than once");
    const firstCompaction = kinds.indexOf("compaction");
    assert.equal(kinds[firstCompaction - 1], "tool_result", "a compaction in the middle of tool use: right after a tool result, before the turn's next text");
    assert.equal(kinds[firstCompaction + 1], "agent");
    assert.ok(live.items.some((i) => i.item === "tool_result" && i.content?.[0]?.type === "diff"), "a diff among them");
    assert.equal(readFileSync(p.file, "utf8"), "The release is in March.\n", "the editor wrote, not the agent");

    const replayed = await withEditor(t, { editor: new Editor(), store, args }, async (proc) => {
      await proc.initialize(T7_CAPS);
      await proc.loadSession(live.sid, p.dir);
      await proc.settle();
      return durable(proc.wireUpdates(live.sid));
    });
    assert.deepEqual(replayed, live.items, "the replay shows what was sent live, at the same positions");
  } finally {
    store.cleanup();
    p.cleanup();
  }
});
