// Interop tests of MCP servers, session modes and config options: the
// sessionkit ACP agent (examples/acp-agent, offline provider) against the
// official ACP TypeScript SDK's clients, v1 and experimental/v2. The MCP
// server is a small Go program built with the official MCP Go SDK
// (mcpserver/). Every raw line is validated with the SDK's zod validators:
// session/update lines and the responses to session/new, session/set_mode
// and session/set_config_option (v1), every line of a v2 connection
// (harness-v2.mjs).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { acp, buildAgent, cleanupBuild, repoRoot, schema, startAgent, tempStore, totals } from "./harness.mjs";
import { acp2, V2Agent, V2_INIT, v2totals, z2 } from "./harness-v2.mjs";

let mcpDir;
let mcpServer;

before(() => {
  buildAgent();
  mcpDir = mkdtempSync(join(tmpdir(), "sessionkit-mcpserver-"));
  mcpServer = join(mcpDir, "mcpserver");
  execFileSync("go", ["build", "-o", mcpServer, "./acp/interop/mcpserver"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
});
after(() => {
  cleanupBuild();
  if (mcpDir) rmSync(mcpDir, { recursive: true, force: true });
});

/** A temp project directory with notes.txt. */
function project() {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-modes-"));
  writeFileSync(join(dir, "notes.txt"), "The release is in March.\n");
  return { dir, file: join(dir, "notes.txt"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const allow = { outcome: { outcome: "selected", optionId: "allow" } };

/** A v1 SDK client app that answers permission requests with allow and records them. */
function permissive(asked) {
  return (proc) =>
    acp
      .client({ name: "sessionkit-interop-modes" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        proc.delivered.push({ seq: 0, params });
        proc.wake();
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        asked.push(params);
        return allow;
      });
}

/** Runs fn with a v1 agent process; always stopped; every update valid. */
async function withAgent(t, { client, args = [], env = {} }, fn) {
  const store = tempStore();
  const proc = await startAgent({ store: store.path, args, client, env });
  try {
    await fn(proc);
    const exit = await proc.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
    assert.doesNotMatch(proc.stderr(), /panic|DATA RACE/);
    assert.deepEqual(proc.wireUpdates().filter((l) => !l.valid).map((l) => l.raw), [], "every update valid for the SDK's v1 schema");
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    await proc.stop({ kill: true });
    throw err;
  } finally {
    store.cleanup();
  }
}

/** The raw result of the last request of method, validated with zod. */
function rawResult(proc, method, z) {
  const req = proc.outgoingRequest(method);
  const line = proc.responseTo(req.msg.id);
  assert.ok(line && "result" in line.msg, `${method} answered: ${line?.raw}`);
  const r = z.safeParse(line.msg.result);
  assert.ok(r.success, `${method} result valid for the SDK's v1 schema: ${r.error?.message}\n${line.raw}`);
  assert.deepEqual(r.data, line.msg.result, `${method}: the SDK reads what the agent wrote`);
  return line.msg.result;
}

const upd = (l) => l.msg.params.update;
const agentText = (proc, sid) =>
  proc
    .wireUpdates(sid)
    .filter((l) => upd(l).sessionUpdate === "agent_message_chunk")
    .map((l) => upd(l).content.text)
    .join("");

test("x1. v1: an MCP stdio server's tool called after permission, shown naming server and tool; a server that fails is told the user, its stderr logged", async (t) => {
  const asked = [];
  const p = project();
  try {
    await withAgent(t, { client: permissive(asked), env: { SESSIONKIT_INTEROP_SECRET_TOKEN: "do-not-leak", SESSIONKIT_INTEROP_PLAIN: "x" } }, async (proc) => {
      const init = await proc.initialize({});
      assert.equal(init.agentCapabilities.mcpCapabilities.http, true, "http MCP servers advertised");
      const res = await proc.request(acp.methods.agent.session.new, {
        cwd: p.dir,
        mcpServers: [
          { name: "demo", command: mcpServer, args: [], env: [{ name: "DEMO_LEVEL", value: "1" }] },
          { name: "broken", command: mcpServer, args: ["--crash"], env: [] },
        ],
      });
      const sid = res.sessionId;
      const raw = rawResult(proc, "session/new", schema.zNewSessionResponse);
      assert.equal(raw.modes.currentModeId, "ask");
      assert.deepEqual(raw.modes.availableModes.map((m) => m.id), ["ask", "read-only", "auto-edit", "full-auto"]);
      assert.deepEqual(raw.configOptions.map((o) => [o.id, o.category, o.currentValue]), [["mode", "mode", "ask"], ["model", "model", "offline"]]);
      // The failed server is told the user, by name and why.
      await proc.waitFor(() => /broken/.test(agentText(proc, sid)), "the notice about the broken server");
      assert.match(agentText(proc, sid), /MCP server is not available: mcp server "broken".*DEMO_TOKEN is not set/);

      const turn = await proc.prompt(sid, "call mcp__demo__greet name: Ada");
      assert.equal(turn.response.stopReason, "end_turn");
      await proc.settle();
      const create = proc.wireUpdates(sid).find((l) => upd(l).sessionUpdate === "tool_call");
      assert.ok(create, "a tool_call");
      assert.equal(upd(create).title, "MCP demo: greet");
      assert.deepEqual(upd(create).rawInput, { name: "Ada" });
      assert.equal(asked.length, 1, "asked once");
      assert.equal(asked[0].toolCall.toolCallId, upd(create).toolCallId);
      assert.equal(asked[0].toolCall.title, "MCP demo: greet");
      const perm = proc.incoming().find((l) => l.msg?.method === "session/request_permission");
      assert.ok(create.seq < perm.seq, "the tool_call before the permission request about it");
      const final = proc.wireUpdates(sid).findLast((l) => upd(l).toolCallId === upd(create).toolCallId && upd(l).status);
      assert.equal(upd(final).status, "completed");
      assert.match(JSON.stringify(upd(final).content), /Hello, Ada!/, "the server's answer");
      assert.ok(perm.seq < final.seq);

      // Content that is not text is named, not dropped.
      await proc.prompt(sid, "call mcp__demo__picture");
      await proc.settle();
      const pic = proc.wireUpdates(sid).findLast((l) => upd(l).status === "completed");
      assert.match(JSON.stringify(upd(pic).content), /here it is/);
      assert.match(JSON.stringify(upd(pic).content), /\[image image\/png, 4 bytes\]/);
      // The server's environment: the sandbox's allow-list and what the
      // editor gave it, none of the agent's other variables.
      await proc.prompt(sid, "call mcp__demo__env");
      await proc.settle();
      const env = JSON.stringify(upd(proc.wireUpdates(sid).findLast((l) => upd(l).status === "completed")).content);
      assert.match(env, /env: .*\bPATH\b/);
      assert.match(env, /\bDEMO_LEVEL\b/, "the editor's env for the server");
      assert.doesNotMatch(env, /SESSIONKIT_INTEROP_SECRET_TOKEN|SESSIONKIT_INTEROP_PLAIN/, "not the agent's own variables");
      // A server that dies: the call fails, the user is told which and why,
      // and the session goes on.
      await proc.prompt(sid, "call mcp__demo__quit");
      await proc.waitFor(() => /MCP server stopped/.test(agentText(proc, sid)), "the notice about the server that died");
      assert.match(agentText(proc, sid), /An MCP server stopped, and its tools fail from now on: mcp server "demo".*quitting on request/);
      const quit = proc.wireUpdates(sid).findLast((l) => upd(l).status === "failed");
      assert.match(JSON.stringify(upd(quit).content), /demo/);
      assert.equal((await proc.prompt(sid, "still there?")).response.stopReason, "end_turn", "the session goes on");
      await proc.request(acp.methods.agent.session.close, { sessionId: sid });
      assert.match(proc.stderr(), /demo MCP server ready/, "the server's stderr is in the log");
      assert.match(proc.stderr(), /DEMO_TOKEN is not set/, "the failed server's stderr is in the log");
    });
  } finally {
    p.cleanup();
  }
});

test("x2. v1: a mode change makes the next edit ask or not ask; read-only refuses it; the updates and responses valid", async (t) => {
  const asked = [];
  const p = project();
  try {
    await withAgent(t, { client: permissive(asked) }, async (proc) => {
      await proc.initialize({});
      const sid = await proc.newSession(p.dir);
      await proc.prompt(sid, 'replace "March" with "April" in notes.txt');
      assert.equal(asked.length, 1, "ask: the edit asks");
      assert.equal(readFileSync(p.file, "utf8"), "The release is in April.\n");

      await proc.request("session/set_mode", { sessionId: sid, modeId: "auto-edit" });
      rawResult(proc, "session/set_mode", schema.zSetSessionModeResponse);
      await proc.waitFor(() => proc.wireUpdates(sid).some((l) => upd(l).sessionUpdate === "config_option_update"), "config_option_update");
      const mode = proc.wireUpdates(sid).find((l) => upd(l).sessionUpdate === "current_mode_update");
      assert.equal(upd(mode).currentModeId, "auto-edit");
      await proc.prompt(sid, 'replace "April" with "May" in notes.txt');
      assert.equal(asked.length, 1, "auto-edit: the edit does not ask");
      assert.equal(readFileSync(p.file, "utf8"), "The release is in May.\n");

      const set = await proc.request("session/set_config_option", { sessionId: sid, configId: "mode", value: "read-only" });
      rawResult(proc, "session/set_config_option", schema.zSetSessionConfigOptionResponse);
      assert.equal(set.configOptions.find((o) => o.id === "mode").currentValue, "read-only");
      const before = proc.wireUpdates(sid).length;
      await proc.prompt(sid, 'replace "May" with "June" in notes.txt');
      assert.equal(asked.length, 1, "read-only: nothing asks");
      assert.equal(readFileSync(p.file, "utf8"), "The release is in May.\n", "read-only: nothing changes");
      // Read-only offers the model only the reading tools: no edit is even
      // called (a call made anyway would still be refused by its gate).
      const edits = proc.wireUpdates(sid).slice(before).filter((l) => upd(l).sessionUpdate === "tool_call" && upd(l).kind === "edit");
      assert.deepEqual(edits, [], "read-only: no edit is called");

      await assert.rejects(proc.request("session/set_mode", { sessionId: sid, modeId: "yolo" }), (e) => e.code === -32602);
      await proc.request("session/set_mode", { sessionId: sid, modeId: "ask" });
      await proc.prompt(sid, 'replace "May" with "June" in notes.txt');
      assert.equal(asked.length, 2, "ask again: the edit asks");
      assert.equal(readFileSync(p.file, "utf8"), "The release is in June.\n");
    });
  } finally {
    p.cleanup();
  }
});

test("x3. v2: an MCP server named with its type, its tool called after a v2 permission request; the mode config option switches the next edit to not asking", async (t) => {
  const p = project();
  const store = tempStore();
  const asked = [];
  const a = await V2Agent.start({ store: store.path });
  const client = acp2
    .client({ name: "sessionkit-interop-modes-v2" })
    .onRequest(acp2.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params);
      return allow;
    })
    .onNotification(acp2.methods.client.session.update, () => {});
  const untilIdle = async (s) => {
    const got = [];
    for (;;) {
      const m = await s.nextUpdate();
      got.push(m.update);
      if (m.kind === "stop") return { updates: got, stopReason: m.stopReason };
    }
  };
  try {
    await client.connectWith(a.sdkStream(), async (ctx) => {
      const init = await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      assert.deepEqual(init.capabilities.session.mcp, { stdio: {}, http: {} });
      await ctx
        .buildSession(p.dir)
        .withMcpServer({ type: "stdio", name: "demo", command: mcpServer, args: [], env: [] })
        .withMcpServer({ type: "stdio", name: "broken", command: mcpServer, args: ["--crash"] })
        .withSession(async (s) => {
          const opts = s.newSessionResponse.configOptions;
          assert.deepEqual(opts.map((o) => [o.configId, o.category, o.currentValue]), [["mode", "mode", "ask"], ["model", "model", "offline"]]);
          await s.prompt("call mcp__demo__greet name: Grace");
          const turn = await untilIdle(s);
          assert.equal(turn.stopReason, "end_turn");
          assert.equal(asked.length, 1);
          assert.equal(asked[0].title, "MCP demo: greet");
          assert.equal(asked[0].subject.type, "tool_call");
          assert.ok(turn.updates.some((u) => u.sessionUpdate === "tool_call_update" && u.title === "MCP demo: greet"), "shown naming server and tool");
          assert.match(JSON.stringify(turn.updates), /Hello, Grace!/);
          // v2 takes notices without a capability: the failed server is one
          // notice, and no agent text.
          const told = a.updates().filter((u) => u.sessionUpdate === "notice" && /broken/.test(u.description ?? ""));
          assert.equal(told.length, 1, "the failed server told the user once, as a notice");
          assert.equal(told[0].severity, "error");
          assert.equal(told[0].title, "An MCP server is not available");
          assert.match(told[0].description, /DEMO_TOKEN is not set/);
          assert.equal(a.updates().filter((u) => u.sessionUpdate === "agent_message_chunk" && /broken/.test(u.content?.text ?? "")).length, 0, "not also as agent text");

          await s.prompt('replace "March" with "April" in notes.txt');
          await untilIdle(s);
          assert.equal(asked.length, 2, "ask: the edit asks");
          const set = await s.setConfigOption({ configId: "mode", type: "id", value: "auto-edit" });
          assert.equal(set.configOptions.find((o) => o.configId === "mode").currentValue, "auto-edit");
          await s.prompt('replace "April" with "May" in notes.txt');
          await untilIdle(s);
          assert.equal(asked.length, 2, "auto-edit: the edit does not ask");
          assert.equal(readFileSync(p.file, "utf8"), "The release is in May.\n");
        });
    });
    assert.ok(a.updates().some((u) => u.sessionUpdate === "config_option_update"), "config_option_update on the wire");
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}\n--- stderr ---\n${a.stderr}`);
    throw err;
  } finally {
    await a.stop();
    store.cleanup();
    p.cleanup();
  }
  assert.match(a.stderr, /demo MCP server ready/, "the server's stderr is in the log");
});

/** A local OpenAI-compatible server that streams "reply N" and records the model each request asks for. */
async function modelServer() {
  const models = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      models.push(JSON.parse(body).model);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta, finish) => ({ id: `c${models.length}`, object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
      res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: `reply ${models.length}` }, null))}\n\n`);
      res.write(`data: ${JSON.stringify({ ...chunk({}, "stop"), usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, models, env: { OPENAI_BASE_URL: `http://127.0.0.1:${server.address().port}/v1`, OPENAI_API_KEY: "test-key", SESSIONKIT_PROVIDER: "openai" } };
}

test("x4. v1: the model picker lists --models; a model change is the model of the next provider request", async (t) => {
  const m = await modelServer();
  const store = tempStore();
  const proc = await startAgent({ store: store.path, args: ["--models", "m-small,m-large"], env: m.env });
  try {
    await proc.initialize({});
    const res = await proc.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
    const raw = rawResult(proc, "session/new", schema.zNewSessionResponse);
    const model = raw.configOptions.find((o) => o.id === "model");
    assert.deepEqual(model.options.map((o) => o.value), ["m-small", "m-large"]);
    assert.equal(model.currentValue, "m-small");
    await proc.prompt(res.sessionId, "hello");
    assert.deepEqual(m.models, ["m-small"]);
    const set = await proc.request("session/set_config_option", { sessionId: res.sessionId, configId: "model", value: "m-large" });
    rawResult(proc, "session/set_config_option", schema.zSetSessionConfigOptionResponse);
    assert.equal(set.configOptions.find((o) => o.id === "model").currentValue, "m-large");
    await proc.prompt(res.sessionId, "again");
    assert.deepEqual(m.models, ["m-small", "m-large"], "the next request asks for the model chosen");
    const exit = await proc.stop();
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.deepEqual(proc.wireUpdates().filter((l) => !l.valid).map((l) => l.raw), []);
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    await proc.stop({ kill: true });
    throw err;
  } finally {
    m.server.close();
    store.cleanup();
  }
});

test("x5. v2: a model change through the SDK's setConfigOption is the model of the next provider request; resumed in a fresh agent, the session keeps it", async (t) => {
  const m = await modelServer();
  const store = tempStore();
  const client = () =>
    acp2
      .client({ name: "sessionkit-interop-models-v2" })
      .onRequest(acp2.methods.client.session.requestPermission, () => ({ outcome: { outcome: "cancelled" } }))
      .onNotification(acp2.methods.client.session.update, () => {});
  let sid;
  try {
    const a = await V2Agent.start({ store: store.path, args: ["--models", "m-small,m-large"], env: m.env });
    try {
      await client().connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.buildSession(tmpdir()).withSession(async (s) => {
          sid = s.sessionId;
          await s.prompt("hello");
          for (;;) if ((await s.nextUpdate()).kind === "stop") break;
          const set = await s.setConfigOption({ configId: "model", type: "id", value: "m-large" });
          assert.equal(set.configOptions.find((o) => o.configId === "model").currentValue, "m-large");
          await s.prompt("again");
          for (;;) if ((await s.nextUpdate()).kind === "stop") break;
        });
      });
    } finally {
      await a.stop();
    }
    assert.deepEqual(m.models, ["m-small", "m-large"], "the next request asks for the model chosen");
    const b = await V2Agent.start({ store: store.path, args: ["--models", "m-small,m-large"], env: m.env });
    try {
      await b.request("initialize", V2_INIT);
      const resumed = await b.request("session/resume", { sessionId: sid, cwd: tmpdir() });
      assert.equal(resumed.msg.result.configOptions.find((o) => o.configId === "model").currentValue, "m-large", "kept on resume");
    } finally {
      await b.stop();
    }
  } catch (err) {
    t.diagnostic(String(err));
    throw err;
  } finally {
    m.server.close();
    store.cleanup();
  }
});

test("x golden files: the v1 wire shapes of modes and config options parse with the SDK's v1 validators, unchanged", () => {
  const dir = join(repoRoot, "acp", "schema", "testdata");
  for (const [file, z] of [
    ["new_session_response_config", schema.zNewSessionResponse],
    ["config_option_update", schema.zSessionUpdate],
    ["set_session_mode_request", schema.zSetSessionModeRequest],
    ["set_session_mode_response", schema.zSetSessionModeResponse],
    ["set_config_option_request", schema.zSetSessionConfigOptionRequest],
    ["set_config_option_response", schema.zSetSessionConfigOptionResponse],
  ]) {
    const value = JSON.parse(readFileSync(join(dir, `${file}.json`), "utf8"));
    const r = z.safeParse(value);
    assert.ok(r.success, `${file}: ${r.error?.message}`);
    assert.deepEqual(r.data, value, `${file}: the SDK reads what sessionkit wrote`);
  }
});

test("x totals: no invalid line on either version, nothing the SDK dropped", () => {
  assert.deepEqual(totals.invalid, [], "v1 updates");
  assert.deepEqual(v2totals.invalid, [], "v2 lines");
  assert.deepEqual(v2totals.sdkErrors, []);
  assert.deepEqual(totals.sdkErrors, []);
});
