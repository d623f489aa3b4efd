// Interop tests of ACP v2: the sessionkit ACP agent (examples/acp-agent,
// offline provider) against the official TypeScript SDK's v2 client
// (@agentclientprotocol/sdk 2.4.0, experimental/v2). Every raw line the agent
// writes on a v2 connection is validated with the SDK's v2 zod validators
// (harness-v2.mjs); the last test checks that none was invalid.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { buildAgent, cleanupBuild, tempStore } from "./harness.mjs";
import { acp2, V2Agent, v2Client, V2_INIT, v2totals, z2, zu2 } from "./harness-v2.mjs";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const P1 = "My project is called Aurora; it is a Go SDK for long conversations, and I drink green tea while I work on it.";
const P2 = "The release is planned for March.";
const CWD = "/tmp";

before(() => {
  buildAgent();
});
after(() => {
  cleanupBuild();
});

/** Runs fn with a fresh agent; the agent is always stopped. */
async function withV2Agent(t, opts, fn) {
  const store = opts.store ?? tempStore();
  const a = await V2Agent.start({ store: store.path, args: opts.args ?? [] });
  try {
    return await fn(a);
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}`);
    throw err;
  } finally {
    await a.stop();
    if (!opts.store) store.cleanup();
  }
}

const textOf = (blocks) => (blocks ?? []).map((b) => b.text ?? "").join("");
const isIdle = (u) => u.sessionUpdate === "state_update" && u.state === "idle";

/** Reads the session's updates through the SDK until the next idle state. */
async function untilIdle(session) {
  const got = [];
  for (;;) {
    const m = await session.nextUpdate();
    got.push(m.update);
    if (m.kind === "stop") return { updates: got, stopReason: m.stopReason };
  }
}

/** Checks each compaction's lifecycle in wire updates; returns them by ID. */
function compactions(updates) {
  const byId = new Map();
  for (const u of updates) {
    if (u.sessionUpdate !== "compaction_update" && u.sessionUpdate !== "compaction_summary_chunk") continue;
    let c = byId.get(u.compactionId);
    if (!c) {
      assert.equal(u.sessionUpdate, "compaction_update", `the first update of ${u.compactionId} is a compaction_update`);
      c = { id: u.compactionId, updates: [], terminal: null, chunks: "" };
      byId.set(u.compactionId, c);
    }
    assert.equal(c.terminal, null, `nothing follows the terminal update of ${c.id}: ${JSON.stringify(u)}`);
    c.updates.push(u);
    if (u.sessionUpdate === "compaction_summary_chunk") c.chunks += u.content.text ?? "";
    else if (["completed", "failed", "cancelled"].includes(u.status)) c.terminal = u;
  }
  return byId;
}

// ---------------------------------------------------------------------------

test("v2 a. negotiation: 0, 1, 2, 3, 99, no info, id null, a JSON array", async (t) => {
  // Failed initializes leave the connection open: 0, no info, id null, an
  // array, then 2.
  await withV2Agent(t, {}, async (a) => {
    const zero = await a.request("initialize", { protocolVersion: 0, info: V2_INIT.info });
    assert.equal(zero.msg.error?.code, -32022, zero.raw);
    assert.deepEqual(zero.msg.error.data, { requested: 0, supported: [1, 2] });
    const noInfo = await a.request("initialize", { protocolVersion: 2, capabilities: {} });
    assert.equal(noInfo.msg.error?.code, -32602, noInfo.raw);
    const mark = a.lines.length;
    await a.writeLine(JSON.stringify({ jsonrpc: "2.0", id: null, method: "initialize", params: V2_INIT }));
    const nullID = await a.waitFor(() => a.incomingLines().find((l) => l.seq > mark && l.msg?.error), "the id-null answer");
    assert.equal(nullID.msg.error.code, -32600, nullID.raw);
    assert.equal(nullID.msg.id, null);
    const two = await a.request("initialize", V2_INIT);
    assert.equal(two.msg.result?.protocolVersion, 2, two.raw);
    assert.equal(two.msg.result.info.name, "sessionkit");
    assert.deepEqual(two.msg.result.capabilities.session, { prompt: { embeddedContext: {} }, delete: {}, mcp: { stdio: {}, http: {} }, systemPrompt: { mode: { override: {} } }, fork: {} });
    assert.equal(two.msg.result.capabilities.loadSession, undefined);
    const mark2 = a.lines.length;
    await a.writeLine(JSON.stringify([{ jsonrpc: "2.0", id: 50, method: "session/list", params: {} }]));
    const arr = await a.waitFor(() => a.incomingLines().find((l) => l.seq > mark2 && l.msg?.error), "the array answer");
    assert.equal(arr.msg.error.code, -32600, arr.raw);
    assert.equal(arr.msg.id, null);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(a.incomingLines().filter((l) => l.seq > mark2).length, 1, "one answer to the array");
  });
  for (const [asked, params, want] of [
    [1, { protocolVersion: 1, clientCapabilities: {} }, 1],
    [3, { protocolVersion: 3, info: V2_INIT.info, capabilities: {} }, 2],
    [99, { protocolVersion: 99, info: V2_INIT.info }, 2],
  ]) {
    await withV2Agent(t, {}, async (a) => {
      const r = await a.request("initialize", params);
      assert.equal(r.msg.result?.protocolVersion, want, `asked ${asked}: ${r.raw}`);
      if (want === 1) assert.ok(r.msg.result.agentCapabilities, "the v1 surface");
      else assert.ok(r.msg.result.info && !r.msg.result.agentCapabilities, "the v2 surface");
    });
  }
  // --v1-only: v2 switched off.
  await withV2Agent(t, { args: ["--v1-only"] }, async (a) => {
    const r = await a.request("initialize", V2_INIT);
    assert.equal(r.msg.result?.protocolVersion, 1, r.raw);
  });
});

test("v2 b. a conversation through the SDK's v2 client: prompts, /compact, an automatic compaction; then resume with replay in a fresh agent", async (t) => {
  const store = tempStore();
  let sid;
  let live;
  try {
    await withV2Agent(t, { store, args: ["--auto-compact-tokens", "30"] }, async (a) => {
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        const init = await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        assert.equal(init.protocolVersion, 2);
        await ctx.buildSession(CWD).withSession(async (s) => {
          sid = s.sessionId;
          const r1 = await s.prompt(P1);
          assert.equal(typeof r1.messageId, "string");
          const t1 = await untilIdle(s);
          assert.equal(t1.stopReason, "end_turn");
          assert.ok(t1.updates.some((u) => u.sessionUpdate === "user_message" && u.messageId === r1.messageId), "the user_message echo has the receipt's ID");
          const r2 = await s.prompt(P2);
          assert.equal(typeof r2.messageId, "string");
          await untilIdle(s);
          const rc = await s.prompt("/compact keep the project name");
          assert.equal(typeof rc.messageId, "string");
          const tc = await untilIdle(s);
          assert.equal(tc.stopReason, "end_turn");
          assert.ok(tc.updates.some((u) => u.sessionUpdate === "compaction_update" && u.status === "completed"), "/compact delivered through the SDK");
        });
        // Wire order of the /compact prompt: user_message, running, the
        // receipt, the entity, idle.
        const prompts = a.lines.filter((l) => l.dir === "out" && l.msg?.method === "session/prompt");
        const last = prompts.at(-1);
        const resp = a.incomingLines().find((l) => l.msg?.id === last.msg.id && !l.msg.method);
        const before = a.updates(last.seq, resp.seq).map((u) => u.sessionUpdate + (u.state ? ":" + u.state : ""));
        assert.deepEqual(before, ["user_message", "state_update:running"], "before the /compact receipt");
        const all = a.updates();
        const byId = compactions(all);
        assert.ok(byId.size >= 2, `an automatic and a manual compaction: ${[...byId.keys()]}`);
        for (const c of byId.values()) {
          assert.equal(c.updates[0].status, "in_progress");
          assert.ok(c.terminal, `compaction ${c.id} ended`);
          assert.equal(c.terminal.status, "completed");
          assert.equal(typeof c.updates[0]._meta?.sessionkit?.trigger, "string");
        }
        const triggers = [...byId.values()].map((c) => c.updates[0]._meta.sessionkit.trigger);
        assert.ok(triggers.includes("manual") && triggers.includes("auto"), `triggers: ${triggers}`);
        live = byId;
        // Every chunk has its messageId; no v1 tool_call.
        for (const u of all) {
          if (u.sessionUpdate.endsWith("_chunk") && u.sessionUpdate !== "compaction_summary_chunk") assert.equal(typeof u.messageId, "string");
          assert.notEqual(u.sessionUpdate, "tool_call");
        }
      });
    });

    // A fresh agent process on the same store: session/resume with replay.
    await withV2Agent(t, { store }, async (a) => {
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        const mark = a.lines.length;
        const res = await ctx.request(acp2.methods.agent.session.resume, { sessionId: sid, cwd: CWD, replayFrom: { type: "start" } });
        const { configOptions, ...rest } = res;
        assert.deepEqual(rest, {});
        assert.deepEqual(configOptions.map((o) => [o.configId, o.currentValue]), [["mode", "ask"], ["model", "offline"]], "the session's mode and model");
        const req = a.lines.find((l) => l.seq > mark && l.msg?.method === "session/resume");
        const resp = await a.waitFor(() => a.incomingLines().find((l) => l.msg?.id === req.msg.id && !l.msg.method), "the resume response");
        const replay = a.updates(req.seq, resp.seq);
        assert.ok(isIdle(replay.at(-1)), `the current state_update right before the response: ${JSON.stringify(replay.at(-1))}`);
        const byId = compactions(replay);
        assert.deepEqual([...byId.keys()].sort(), [...live.keys()].sort(), "each compaction replayed");
        for (const [id, c] of byId) {
          assert.equal(c.updates.filter((u) => u.status === "completed").length, 1, `${id} exactly once`);
          const liveSummary = textOf(live.get(id).terminal.summary) || live.get(id).chunks;
          assert.equal(textOf(c.terminal.summary), liveSummary, `${id}: the replayed summary is the live one`);
          assert.equal(c.chunks, "", "no summary chunks on replay: the client gets the summary once");
        }
        assert.ok(replay.some((u) => u.sessionUpdate === "user_message"), "user messages replayed");
        // Without replayFrom: nothing replayed, but the current state before
        // the response ("even without replay"). (The commands update of the
        // resume above follows its response: wait for it first.)
        await a.waitFor(() => a.updates(resp.seq).find((u) => u.sessionUpdate === "available_commands_update"), "the commands after the first resume");
        const mark2 = a.lines.length;
        await ctx.request(acp2.methods.agent.session.resume, { sessionId: sid, cwd: CWD });
        const req2 = a.lines.find((l) => l.seq > mark2 && l.msg?.method === "session/resume");
        const resp2 = await a.waitFor(() => a.incomingLines().find((l) => l.msg?.id === req2.msg.id && !l.msg.method), "the second resume's response");
        await a.waitFor(() => a.updates(resp2.seq).find((u) => u.sessionUpdate === "available_commands_update"), "the commands after the second resume");
        assert.deepEqual(a.updates(mark2, resp2.seq).map(({ seq, ...u }) => u), [{ sessionUpdate: "state_update", state: "idle" }], "resume without replayFrom: the state snapshot, then the response");
        assert.deepEqual(
          a.updates(mark2).map((u) => u.sessionUpdate),
          ["state_update", "available_commands_update"],
          "resume without replayFrom: nothing replayed",
        );
      });
    });

    // A fresh agent process, session/resume without replayFrom: the current
    // state before the response, the stored context after it, before the
    // commands.
    await withV2Agent(t, { store }, async (a) => {
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        const mark = a.lines.length;
        await ctx.request(acp2.methods.agent.session.resume, { sessionId: sid, cwd: CWD });
        const req = a.lines.find((l) => l.seq > mark && l.msg?.method === "session/resume");
        const resp = await a.waitFor(() => a.incomingLines().find((l) => l.msg?.id === req.msg.id && !l.msg.method), "the resume response");
        await a.waitFor(() => a.updates(resp.seq).find((u) => u.sessionUpdate === "available_commands_update"), "the commands after the resume");
        assert.deepEqual(a.updates(mark).map((u) => u.sessionUpdate), ["state_update", "usage_update", "available_commands_update"], "resume without replayFrom in a fresh agent");
        assert.deepEqual(a.updates(mark, resp.seq).map(({ seq, ...u }) => u), [{ sessionUpdate: "state_update", state: "idle" }], "the state snapshot before the response");
        const usage = a.updates(resp.seq)[0];
        assert.ok(usage.used > 0, `the stored context, not 0: ${JSON.stringify(usage)}`);
      });
    });
  } finally {
    store.cleanup();
  }
});

test("v2 c. session/cancel during a compaction: the entity ends cancelled, the session idle cancelled", async (t) => {
  await withV2Agent(t, { args: ["--summary-delay", "5s"] }, async (a) => {
    await v2Client().connectWith(a.sdkStream(), async (ctx) => {
      await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      await ctx.buildSession(CWD).withSession(async (s) => {
        await s.prompt(P1);
        await untilIdle(s);
        await s.prompt(P2);
        await untilIdle(s);
        const mark = a.lines.length;
        await s.prompt("/compact");
        await a.waitFor(() => a.updates(mark).find((u) => u.sessionUpdate === "compaction_update"), "the compaction's in_progress");
        await ctx.notify(acp2.methods.agent.session.cancel, { sessionId: s.sessionId });
        const end = await untilIdle(s);
        assert.equal(end.stopReason, "cancelled");
        const byId = compactions(a.updates(mark));
        assert.equal(byId.size, 1);
        const [c] = byId.values();
        assert.equal(c.terminal?.status, "cancelled", "one terminal status: cancelled");
        assert.equal(c.terminal.summary, null, "a cancelled compaction retains no summary");
      });
    });
  });
});

test("v2 d. session/list and session/close", async (t) => {
  await withV2Agent(t, {}, async (a) => {
    await v2Client().connectWith(a.sdkStream(), async (ctx) => {
      await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      const s = await ctx.buildSession(CWD).start();
      await s.prompt(P1);
      await untilIdle(s);
      const list = await ctx.request(acp2.methods.agent.session.list, {});
      assert.ok(list.sessions.some((x) => x.sessionId === s.sessionId && x.cwd === CWD), JSON.stringify(list));
      const closed = await ctx.request(acp2.methods.agent.session.close, { sessionId: s.sessionId });
      assert.deepEqual(closed, {});
      await assert.rejects(ctx.request(acp2.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "again" }] }), (err) => {
        assert.equal(err.code, -32002);
        return true;
      });
      s.dispose();
    });
  });
});

test("v2 e. tools: an edit asks permission in the v2 shape (title, tool_call subject) and runs locally (v2 has no fs); a v2 diff; a rejection changes nothing", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-tools-v2-"));
  const file = join(dir, "notes.txt");
  writeFileSync(file, "The release is in March.\n");
  const asked = [];
  let answer = "allow";
  const client = acp2
    .client({ name: "sessionkit-interop-v2-editor" })
    .onRequest(acp2.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params);
      return { outcome: { outcome: "selected", optionId: answer } };
    })
    .onNotification(acp2.methods.client.session.update, () => {});
  try {
    await withV2Agent(t, {}, async (a) => {
      await client.connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.buildSession(dir).withSession(async (s) => {
          await s.prompt('replace "March" with "April" in notes.txt');
          const turn = await untilIdle(s);
          assert.equal(turn.stopReason, "end_turn");
          assert.equal(readFileSync(file, "utf8"), "The release is in April.\n", "edited locally");
          const call = turn.updates.find((u) => u.sessionUpdate === "tool_call_update" && u.kind === "edit");
          assert.ok(call, "the call, created by its first tool_call_update");
          assert.equal(call.content[0].type, "diff");
          assert.deepEqual(call.content[0].changes, [{ operation: "modify", path: file }]);
          assert.equal(call.content[0].patch, undefined, "made from the call's arguments (fragments): no patch");
          const written = turn.updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId && u.content?.some((c) => c.type === "diff" && c.patch));
          assert.ok(written, "the tool's report once the file is written");
          const diff = written.content.find((c) => c.type === "diff");
          assert.deepEqual(diff.changes, [{ operation: "modify", path: file }]);
          assert.match(diff.patch.text, /--- a\/notes\.txt\n\+\+\+ b\/notes\.txt\n/, "named relative to the cwd");
          assert.match(diff.patch.text, /-The release is in March\.\n\+The release is in April\.\n/, "whole lines");
          answer = "reject";
          await s.prompt('replace "April" with "June" in notes.txt');
          assert.equal((await untilIdle(s)).stopReason, "end_turn");
          assert.equal(readFileSync(file, "utf8"), "The release is in April.\n", "a rejected edit changes nothing");
        });
      });
    });
    assert.equal(asked.length, 2);
    for (const p of asked) {
      assert.ok(z2.zRequestPermissionRequest.safeParse(p).success, `a valid v2 permission request: ${JSON.stringify(p)}`);
      assert.equal(p.subject.type, "tool_call");
      assert.match(p.title, /^Edit notes.txt/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("v2 f. session/fork through the SDK's v2 client (its unstable session/fork): advertised as session.fork, a fork at the newest entry that the client can prompt, its answer valid for the unstable v2 schema, an unknown source refused", async (t) => {
  await withV2Agent(t, {}, async (a) => {
    await v2Client().connectWith(a.sdkStream(), async (ctx) => {
      await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      const init = a.incomingLines().find((l) => l.msg?.result?.protocolVersion === 2);
      assert.deepEqual(init.msg.result.capabilities.session.fork, {}, "capabilities.session.fork");
      const s = await ctx.buildSession(CWD).start();
      await s.prompt(P1);
      await untilIdle(s);
      const fork = await ctx.request("session/fork", { sessionId: s.sessionId, cwd: CWD, mcpServers: [] });
      assert.equal(typeof fork.sessionId, "string");
      assert.notEqual(fork.sessionId, s.sessionId);
      const line = a.incomingLines().find((l) => l.msg?.result?.sessionId === fork.sessionId && !l.msg.method);
      const r = zu2.zForkSessionResponse.safeParse(line.msg.result);
      assert.ok(r.success, `session/fork answer: ${line.raw}`);
      const receipt = await ctx.request(acp2.methods.agent.session.prompt, { sessionId: fork.sessionId, prompt: [{ type: "text", text: "And the fork?" }] });
      assert.equal(typeof receipt.messageId, "string", "the fork takes a prompt at once");
      await assert.rejects(ctx.request("session/fork", { sessionId: "no-such-session", cwd: CWD, mcpServers: [] }), (err) => err.code === -32002);
      s.dispose();
    });
  });
});

test("v2 golden files: every v2 wire type sessionkit writes or reads parses with the SDK's v2 validators", async () => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { z2 } = await import("./harness-v2.mjs");
  const dir = join(import.meta.dirname, "..", "schema", "testdata");
  const schemaOf = (name) =>
    ({
      v2_initialize_request: z2.zInitializeRequest,
      v2_initialize_request_dual: z2.zInitializeRequest,
      v2_initialize_request_capabilities: z2.zInitializeRequest,
      v2_initialize_response: z2.zInitializeResponse,
      v2_unsupported_protocol_version: z2.zUnsupportedProtocolVersionErrorData,
      v2_new_session_request: z2.zNewSessionRequest,
      v2_new_session_response: z2.zNewSessionResponse,
      v2_new_session_response_config: z2.zNewSessionResponse,
      v2_set_config_option_request: z2.zSetSessionConfigOptionRequest,
      v2_set_config_option_response: z2.zSetSessionConfigOptionResponse,
      v2_resume_session_request: z2.zResumeSessionRequest,
      v2_resume_session_request_no_replay: z2.zResumeSessionRequest,
      v2_resume_session_response: z2.zResumeSessionResponse,
      v2_prompt_response: z2.zPromptResponse,
      v2_session_notification: z2.zUpdateSessionNotification,
      v2_cancel_tool_call_request: z2.zCancelToolCallRequest,
    })[name] ?? z2.zSessionUpdate;
  const files = readdirSync(dir).filter((f) => f.startsWith("v2_") && f.endsWith(".json"));
  assert.ok(files.length >= 20, `v2 golden files: ${files.length}`);
  for (const f of files) {
    const value = JSON.parse(readFileSync(join(dir, f), "utf8"));
    const r = schemaOf(f.replace(/\.json$/, "")).safeParse(value);
    assert.ok(r.success, `${f}: ${r.error?.message}`);
    // Nothing dropped or changed (the SDK silently drops invalid items of
    // lists, and unknown members, and reads a malformed known variant as
    // nothing).
    const want = { ...value };
    if (f === "v2_initialize_request_dual.json") {
      // The v1 members beside, for a v1-only agent: a v2 reader drops them.
      delete want.clientCapabilities;
      delete want.clientInfo;
    }
    assert.deepEqual(r.data, want, `${f}: the SDK reads what sessionkit wrote`);
  }
});

test("v2 totals: every line the agent wrote on a v2 connection is valid v2; the SDK dropped nothing", () => {
  assert.ok(v2totals.v2Lines > 50, `v2 lines checked: ${v2totals.v2Lines}`);
  assert.deepEqual(v2totals.invalid, [], "invalid v2 lines");
  assert.deepEqual(v2totals.sdkErrors, [], "notifications the SDK dropped");
});
