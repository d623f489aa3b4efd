// Interop tests of session/delete: the sessionkit ACP agent
// (examples/acp-agent, offline provider, a SQLite --store) against the
// official TypeScript SDK's clients, stable v1 and experimental/v2: delete
// then list. Every raw line the agent writes is validated with the SDK's
// zod validators: on v1 each session/update with zSessionNotification
// (harness.mjs, and its wire rules), each result with the schema of its
// request and each error with zError (below); on v2 by harness-v2.mjs. The
// last test asserts that none was invalid.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";

import { acp, buildAgent, cleanupBuild, schema as z1, startAgent, tempStore, totals } from "./harness.mjs";
import { acp2, V2Agent, v2Client, V2_INIT, v2totals } from "./harness-v2.mjs";

const P1 = "My project is called Aurora; it is a Go SDK for long conversations.";
const P2 = "The release is planned for March.";
const CWD = "/tmp";

before(() => {
  buildAgent();
});
after(() => {
  cleanupBuild();
});

// The v1 result validator of each method these tests send.
const V1_RESULTS = {
  initialize: z1.zInitializeResponse,
  "session/new": z1.zNewSessionResponse,
  "session/prompt": z1.zPromptResponse,
  "session/resume": z1.zResumeSessionResponse,
  "session/load": z1.zLoadSessionResponse,
  "session/list": z1.zListSessionsResponse,
  "session/delete": z1.zDeleteSessionResponse,
  "session/close": z1.zCloseSessionResponse,
};

const READ_AS_WRITTEN = new Set(["session/list", "session/delete"]);

/** Problems of the v1 lines proc received: every line must validate. */
const v1Problems = [];

/** Validates every line the agent wrote to proc with the SDK's v1 zod validators. */
function validateV1(proc) {
  const methods = new Map();
  for (const l of proc.lines) if (l.dir === "out" && l.msg?.method && "id" in l.msg) methods.set(JSON.stringify(l.msg.id), l.msg.method);
  for (const l of proc.incoming()) {
    const bad = (why) => v1Problems.push(`${why}: ${l.raw.slice(0, 400)}`);
    const msg = l.msg;
    if (!msg || msg.jsonrpc !== "2.0") {
      bad("not JSON-RPC 2.0");
      continue;
    }
    if (msg.method === "session/update") {
      if (!l.valid) bad("session/update the SDK's schema rejects");
      if (l.problems?.length) bad(`wire rules: ${l.problems.join("; ")}`);
      continue;
    }
    if (msg.method) {
      if (!msg.method.startsWith("_")) bad(`unexpected agent-to-client method ${msg.method}`);
      continue;
    }
    if (msg.error) {
      const r = z1.zError.safeParse(msg.error);
      if (!r.success) bad(`error: ${r.error.message}`);
      continue;
    }
    const method = methods.get(JSON.stringify(msg.id));
    const zr = V1_RESULTS[method];
    if (!zr) {
      bad(`a result to ${method}, which these tests do not send`);
      continue;
    }
    const r = zr.safeParse(msg.result);
    if (!r.success) bad(`${method} result: ${r.error.message}`);
    // The v1 schema fills in defaults elsewhere (initialize's auth, say);
    // these results it must read as written.
    else if (READ_AS_WRITTEN.has(method) && !isDeepStrictEqual(r.data, msg.result)) bad(`${method} result: the SDK reads ${JSON.stringify(r.data)}`);
  }
}

/** Starts an agent on store; fn gets it; it is always stopped and validated. */
async function withAgent(t, store, fn) {
  const proc = await startAgent({ store: store.path });
  try {
    return await fn(proc);
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    throw err;
  } finally {
    const exit = await proc.stop();
    validateV1(proc);
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
    assert.doesNotMatch(proc.stderr(), /panic|DATA RACE/);
  }
}

const listed = async (proc) => (await proc.request(acp.methods.agent.session.list, {})).sessions.map((s) => s.sessionId);

/** The raw response line of the last request with this method and sessionId. */
const rawResponse = (proc, method, sessionId) => proc.responseTo(proc.outgoingRequest(method, (p) => p?.sessionId === sessionId).msg.id).msg;

test("del1. v1: session/delete then session/list through the SDK; a session served here is closed first, one another process serves is refused naming it", async (t) => {
  const store = tempStore();
  t.after(() => store.cleanup());
  await withAgent(t, store, async (a) => {
    const init = await a.initialize({});
    assert.deepEqual(init.agentCapabilities.sessionCapabilities?.delete, {}, "sessionCapabilities.delete advertised");
    const gone = await a.newSession(CWD);
    assert.equal((await a.prompt(gone, P1)).response.stopReason, "end_turn");
    const kept = await a.newSession(CWD);
    assert.equal((await a.prompt(kept, P2)).response.stopReason, "end_turn");
    assert.deepEqual(await listed(a), [kept, gone]);

    // Served on this connection: closed, then deleted.
    assert.deepEqual(await a.request(acp.methods.agent.session.delete, { sessionId: gone }), {});
    assert.deepEqual(rawResponse(a, "session/delete", gone).result, {});
    assert.deepEqual(await listed(a), [kept], "session/list after session/delete");
    await assert.rejects(a.prompt(gone, "still there?"), (err) => err.code === -32002, "a deleted session is not served");
    await assert.rejects(a.loadSession(gone, CWD), (err) => err.code === -32002, "nor stored");
    // Deleting it again: the SDK takes the agent's -32002 as success, as ACP recommends.
    assert.deepEqual(await a.request(acp.methods.agent.session.delete, { sessionId: gone }), {});
    assert.equal(rawResponse(a, "session/delete", gone).error?.code, -32002, "the wire says the session is unknown");

    // Served by another agent process on the same store: refused, naming
    // it. (This process closes it first, so that the other can take it.)
    assert.deepEqual(await a.request(acp.methods.agent.session.close, { sessionId: kept }), {});
    await withAgent(t, store, async (b) => {
      await b.initialize({});
      await b.request(acp.methods.agent.session.resume, { sessionId: kept, cwd: CWD });
      assert.equal((await b.prompt(kept, "Still here?")).response.stopReason, "end_turn");
      await assert.rejects(a.request(acp.methods.agent.session.delete, { sessionId: kept }), (err) => {
        t.diagnostic(`refused: ${JSON.stringify({ code: err.code, message: err.message, data: err.data })}`);
        assert.equal(err.code, -32603);
        assert.match(err.message, new RegExp(`served by another agent process \\([^)]*:${b.child.pid}:`));
        assert.equal(err.data?.sessionId, kept);
        assert.match(err.data?.sessionkit?.leasedBy ?? "", new RegExp(`:${b.child.pid}:`));
        return true;
      });
      assert.deepEqual(await listed(a), [kept], "nothing was deleted");
      assert.equal((await b.prompt(kept, "And now?")).response.stopReason, "end_turn", "the other process serves it on");
    });
    // That process has ended and released it.
    assert.deepEqual(await a.request(acp.methods.agent.session.delete, { sessionId: kept }), {});
    assert.deepEqual(await listed(a), []);
  });
});

test("del2. v2: session/delete then session/list through the SDK's v2 client", async (t) => {
  const store = tempStore();
  t.after(() => store.cleanup());
  const a = await V2Agent.start({ store: store.path });
  try {
    await v2Client().connectWith(a.sdkStream(), async (ctx) => {
      const init = await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      assert.deepEqual(init.capabilities.session?.delete, {}, "session.delete advertised");
      const gone = await ctx.buildSession(CWD).start();
      await gone.prompt(P1);
      for (;;) if ((await gone.nextUpdate()).kind === "stop") break;
      const kept = await ctx.buildSession(CWD).start();
      let list = await ctx.request(acp2.methods.agent.session.list, {});
      assert.deepEqual(list.sessions.map((s) => s.sessionId).sort(), [gone.sessionId, kept.sessionId].sort());

      assert.deepEqual(await ctx.request(acp2.methods.agent.session.delete, { sessionId: gone.sessionId }), {});
      list = await ctx.request(acp2.methods.agent.session.list, {});
      assert.deepEqual(list.sessions.map((s) => s.sessionId), [kept.sessionId], "session/list after session/delete");
      await assert.rejects(ctx.request(acp2.methods.agent.session.prompt, { sessionId: gone.sessionId, prompt: [{ type: "text", text: "again" }] }), (err) => {
        assert.equal(err.code, -32002);
        return true;
      });
      gone.dispose();
      kept.dispose();
    });
    const deletes = a.lines.filter((l) => l.dir === "out" && l.msg?.method === "session/delete");
    assert.equal(deletes.length, 1);
    const resp = a.incomingLines().find((l) => l.msg?.id === deletes[0].msg.id && !l.msg.method);
    assert.deepEqual(resp.msg.result, {});
    assert.ok(resp.v2, "validated as a v2 line");
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}`);
    throw err;
  } finally {
    await a.stop();
  }
});

test("delete golden files: the wire types of session/delete (acp/schema/testdata) parse unchanged with the SDK's v1 and v2 validators", async () => {
  const { z2 } = await import("./harness-v2.mjs");
  const dir = join(import.meta.dirname, "..", "schema", "testdata");
  for (const [file, v1, v2] of [
    ["delete_session_request.json", z1.zDeleteSessionRequest, z2.zDeleteSessionRequest],
    ["delete_session_response.json", z1.zDeleteSessionResponse, z2.zDeleteSessionResponse],
  ]) {
    const value = JSON.parse(readFileSync(join(dir, file), "utf8"));
    for (const [version, zs] of [["v1", v1], ["v2", v2]]) {
      const r = zs.safeParse(value);
      assert.ok(r.success, `${file} (${version}): ${r.error?.message}`);
      assert.deepEqual(r.data, value, `${file} (${version}): the SDK reads what sessionkit wrote`);
    }
  }
});

test("delete totals: every line the agent wrote is valid for the SDK's validators (v1 and v2)", (t) => {
  t.diagnostic(`v1 session/update invalid ${totals.invalid.length}; v2 lines ${v2totals.v2Lines}, invalid ${v2totals.invalid.length}`);
  assert.deepEqual(v1Problems, [], "v1 lines the SDK's validators reject");
  assert.deepEqual(totals.invalid, [], "v1 session/update lines");
  assert.deepEqual(totals.violations, [], "v1 wire-rule violations");
  assert.deepEqual(totals.sdkErrors, [], "the v1 SDK dropped notifications");
  assert.ok(v2totals.v2Lines > 0);
  assert.deepEqual(v2totals.invalid, [], "v2 lines the SDK's validators reject");
  assert.deepEqual(v2totals.sdkErrors, [], "the v2 SDK dropped notifications");
});
