// Interop tests of notices and of v2 tool_call/cancel: the sessionkit ACP
// agent (examples/acp-agent, offline provider, demotools build) against the
// official TypeScript SDK's v1 client and its experimental v2 client. Every
// raw line is validated with the SDK's zod validators: v1 session/update
// lines by harness.mjs (zSessionNotification), every v2 line by
// harness-v2.mjs; the last tests assert that none was invalid.
//
// The demotools build's test settings make the provider fail as a real one
// does: SESSIONKIT_DEMO_SUMMARY_FAILS=1 fails every summary (so automatic
// compaction fails, and is suspended after three failures in a row);
// SESSIONKIT_DEMO_RATE_LIMITED=1 reports a rate-limited retry before every
// turn answer.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { buildAgent, cleanupBuild, schema, startAgent, tempStore, totals } from "./harness.mjs";
import { acp2, V2Agent, V2_INIT, v2totals, z2 } from "./harness-v2.mjs";

before(() => buildAgent());
after(() => cleanupBuild());

const FAILING = { SESSIONKIT_DEMO_SUMMARY_FAILS: "1" };
const RATE_LIMITED = { SESSIONKIT_DEMO_RATE_LIMITED: "1" };
const AUTO = ["--auto-compact-tokens", "30"];
const SUSPENDED = "Automatic compaction suspended";

/** Runs fn with a fresh v1 agent and SDK client; the agent is always stopped. */
async function withV1(t, { args = [], env = {} }, fn) {
  const store = tempStore();
  const proc = await startAgent({ store: store.path, args, env });
  try {
    return await fn(proc);
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    throw err;
  } finally {
    await proc.stop({ kill: true });
    store.cleanup();
  }
}

/** Runs fn with a fresh v2 agent; the agent is always stopped. */
async function withV2(t, { args = [], env }, fn) {
  const store = tempStore();
  const a = await V2Agent.start({ store: store.path, args, env });
  try {
    return await fn(a);
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}\n--- stderr ---\n${a.stderr}`);
    throw err;
  } finally {
    await a.stop();
    store.cleanup();
  }
}

/** The updates the SDK delivered to the v1 client for a session. */
const deliveredUpdates = (proc, sid) => proc.deliveredUpdates(sid).map((d) => d.params.update);
const agentText = (updates) =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => u.content?.text ?? "")
    .join("");

/** Reads a v2 session's updates through the SDK until the next idle state. */
async function untilIdle(session, seen = () => {}) {
  const got = [];
  for (;;) {
    const m = await session.nextUpdate();
    got.push(m.update);
    await seen(m.update);
    if (m.kind === "stop") return { updates: got, stopReason: m.stopReason };
  }
}

// ---------------------------------------------------------------------------
// Notices on ACP v1: only with clientCapabilities.session.notices.

for (const [name, caps, takes] of [
  ["with session.notices", { session: { notices: {}, compaction: {} } }, true],
  ["without it", { session: { compaction: {} } }, false],
]) {
  test(`n1. v1 ${name}: automatic compaction suspended by the back-off is told once, ${takes ? "as a notice" : "as agent text"}`, async (t) => {
    await withV1(t, { args: AUTO, env: FAILING }, async (proc) => {
      await proc.initialize(caps);
      const sid = await proc.newSession();
      for (let i = 0; i < 5; i++) {
        const turn = await proc.prompt(sid, `Note number ${i}: the falcon copier keeps file modes and times.`);
        assert.equal(turn.response.stopReason, "end_turn");
      }
      await proc.settle();
      const updates = deliveredUpdates(proc, sid);
      const failed = updates.filter((u) => u.sessionUpdate === "compaction_update" && u.status === "failed");
      const notices = updates.filter((u) => u.sessionUpdate === "notice");
      if (takes) {
        assert.equal(failed.length, 3, "three automatic compactions failed, then none was tried");
        assert.equal(notices.length, 1, `one notice: ${JSON.stringify(notices)}`);
        const n = notices[0];
        assert.equal(n.severity, "warning");
        assert.equal(n.title, SUSPENDED);
        assert.match(n.description, /3 automatic compactions in a row failed \(the last: .*demo: the summary model is unavailable\)/);
        assert.ok(!agentText(updates).includes(SUSPENDED), "not also as text");
        assert.ok(updates.indexOf(n) > updates.indexOf(failed[2]), "after the end of the compaction that caused it");
        // The notice line itself, as the agent wrote it, is a valid v1 update.
        const line = proc.wireUpdates(sid).find((l) => l.msg.params.update.sessionUpdate === "notice");
        assert.equal(line.valid, true, line.raw);
      } else {
        assert.equal(notices.length, 0, "no notice without the capability (v1 MUST NOT)");
        assert.ok(!proc.wireUpdates(sid).some((l) => l.msg.params.update.sessionUpdate === "notice"), "none on the wire");
        const text = agentText(updates);
        assert.equal(text.split(`${SUSPENDED}:`).length - 1, 1, `told once as agent text: ${text}`);
        assert.match(text, /Automatic compaction suspended: 3 automatic compactions in a row failed/);
        assert.ok(text.lastIndexOf("Compaction failed") < text.indexOf(SUSPENDED), "after the end of the compaction that caused it");
      }
    });
  });
}

test("n2. v1 with session.notices: a provider retry after a rate limit is a notice before the answer", async (t) => {
  await withV1(t, { env: RATE_LIMITED }, async (proc) => {
    await proc.initialize({ session: { notices: {} } });
    const sid = await proc.newSession();
    const turn = await proc.prompt(sid, "Hello there.");
    assert.equal(turn.response.stopReason, "end_turn");
    await proc.settle();
    const updates = deliveredUpdates(proc, sid);
    const i = updates.findIndex((u) => u.sessionUpdate === "notice");
    assert.ok(i >= 0, "a notice");
    assert.deepEqual(
      { ...updates[i] },
      { sessionUpdate: "notice", severity: "warning", title: "Rate limited by the model provider: retrying in 2s", description: "Retry 1 of 3 after: demo: HTTP 429: rate limited" },
    );
    const answer = updates.findIndex((u) => u.sessionUpdate === "agent_message_chunk");
    assert.ok(i < answer, "before the answer");
  });
});

// ---------------------------------------------------------------------------
// Notices on ACP v2: no capability needed.

test("n3. v2: automatic compaction suspended by the back-off, and a provider retry, are notices the SDK's v2 client reads", async (t) => {
  await withV2(t, { args: AUTO, env: { ...FAILING, ...RATE_LIMITED } }, async (a) => {
    const client = acp2.client({ name: "sessionkit-interop-v2-notices" }).onNotification(acp2.methods.client.session.update, () => {});
    await client.connectWith(a.sdkStream(), async (ctx) => {
      await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      await ctx.buildSession(tmpdir()).withSession(async (s) => {
        const all = [];
        for (let i = 0; i < 5; i++) {
          await s.prompt(`Note number ${i}: the falcon copier keeps file modes and times.`);
          const turn = await untilIdle(s);
          assert.equal(turn.stopReason, "end_turn");
          all.push(...turn.updates);
        }
        const notices = all.filter((u) => u.sessionUpdate === "notice");
        const suspended = notices.filter((n) => n.title === SUSPENDED);
        assert.equal(suspended.length, 1, JSON.stringify(notices));
        assert.equal(suspended[0].severity, "warning");
        assert.match(suspended[0].description, /demo: the summary model is unavailable/);
        const retries = notices.filter((n) => n.title === "Rate limited by the model provider: retrying in 2s");
        assert.equal(retries.length, 5, "one per turn request");
        assert.equal(all.filter((u) => u.sessionUpdate === "compaction_update" && u.status === "failed").length, 3);
      });
    });
  });
});

// ---------------------------------------------------------------------------
// v2 tool_call/cancel.

/** The processes whose command line is exactly argv. */
function processesRunning(argv) {
  const want = argv.join("\0");
  const out = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0$/, "");
      if (cmd === want) out.push(pid);
    } catch {}
  }
  return out;
}

test("n4. v2 tool_call/cancel of a long command: its process group ends, the call ends cancelled, the turn goes on", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-toolcancel-"));
  try {
    await withV2(t, { args: ["--allow-all"] }, async (a) => {
      const client = acp2.client({ name: "sessionkit-interop-v2-toolcancel" }).onNotification(acp2.methods.client.session.update, () => {});
      await client.connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.buildSession(dir).withSession(async (s) => {
          const started = Date.now();
          await s.prompt("run `sleep 313`");
          let callId;
          let cancelled;
          const turn = await untilIdle(s, async (u) => {
            if (u.sessionUpdate === "tool_call_update" && u.name === "run_command" && !callId) {
              callId = u.toolCallId;
              assert.deepEqual(u.capabilities, { cancel: {} }, "a running command advertises cancel");
              assert.equal(s.canCancelToolCall(callId), true, "the SDK sees it cancellable");
              // The command is running: its sleep is there.
              const deadline = Date.now() + 10000;
              while (processesRunning(["sleep", "313"]).length === 0) {
                assert.ok(Date.now() < deadline, "the command started");
                await new Promise((r) => setTimeout(r, 50));
              }
              cancelled = await s.cancelToolCall(callId);
            }
          });
          assert.deepEqual(cancelled, {}, "tool_call/cancel answered {}");
          assert.equal(turn.stopReason, "end_turn", "the turn goes on and ends normally");
          assert.ok(Date.now() - started < 60000, "well before the command would have ended");
          const ups = turn.updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === callId);
          const last = ups.at(-1);
          assert.equal(last.status, "cancelled");
          assert.equal(last.capabilities, null, "no longer cancellable");
          assert.equal(s.canCancelToolCall(callId), false);
          assert.match(JSON.stringify(last.content), /the user cancelled this tool call/);
          const text = turn.updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
          assert.match(text, /run_command returned: error: the user cancelled this tool call/, "the model read the cancelled result and answered");
          assert.deepEqual(processesRunning(["sleep", "313"]), [], "the command's process group is gone");
          // Cancelling it again is -32602 (already final).
          const again = await a.request("tool_call/cancel", { sessionId: s.sessionId, toolCallId: callId }, "raw-again");
          assert.equal(again.msg.error?.code, -32602, again.raw);
        });
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("n5. v2 tool_call/cancel of a command waiting for permission: the request is cancelled with $/cancel_request, the client answers cancelled, the turn goes on", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-toolcancel-perm-"));
  let asked = 0;
  let aborted = 0;
  try {
    await withV2(t, {}, async (a) => {
      const client = acp2
        .client({ name: "sessionkit-interop-v2-toolcancel-perm" })
        .onRequest(acp2.methods.client.session.requestPermission, ({ signal }) => {
          asked++;
          // The user does not answer; the agent cancels the request.
          return new Promise((resolve) =>
            signal.addEventListener("abort", () => {
              aborted++;
              resolve({ outcome: { outcome: "cancelled" } });
            }),
          );
        })
        .onNotification(acp2.methods.client.session.update, () => {});
      await client.connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.buildSession(dir).withSession(async (s) => {
          await s.prompt("run `sleep 314`");
          let callId;
          const turn = await untilIdle(s, async (u) => {
            if (u.sessionUpdate === "tool_call_update" && u.name === "run_command" && !callId) {
              callId = u.toolCallId;
              await a.waitFor(() => a.incomingLines().find((l) => l.msg?.method === "session/request_permission"), "the permission request");
              assert.deepEqual(await s.cancelToolCall(callId), {});
            }
          });
          assert.equal(turn.stopReason, "end_turn", "the turn goes on");
          const perm = a.incomingLines().find((l) => l.msg?.method === "session/request_permission");
          const cancel = a.incomingLines().find((l) => l.msg?.method === "$/cancel_request");
          assert.ok(cancel, "the agent cancelled the permission request");
          assert.ok(z2.zCancelRequestNotification.safeParse(cancel.msg.params).success, cancel.raw);
          assert.deepEqual(cancel.msg.params, { requestId: perm.msg.id });
          assert.ok(cancel.seq > perm.seq);
          const last = turn.updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === callId).at(-1);
          assert.equal(last.status, "cancelled");
          assert.deepEqual(processesRunning(["sleep", "314"]), [], "the command never ran");
        });
      });
    });
    assert.equal(asked, 1);
    assert.equal(aborted, 1, "the SDK aborted the client's handler on $/cancel_request");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------

test("n golden: the v1 notice golden file parses unchanged with the SDK's v1 validator", () => {
  const value = JSON.parse(readFileSync(join(import.meta.dirname, "..", "schema", "testdata", "notice.json"), "utf8"));
  const r = schema.zSessionUpdate.safeParse(value);
  assert.ok(r.success, r.error?.message);
  assert.deepEqual({ ...r.data }, value);
});

test("n totals: every v1 update line valid with the SDK's zod schema; every v2 line valid v2; the SDK dropped nothing", () => {
  assert.deepEqual(totals.invalid, [], "invalid v1 session/update lines");
  assert.deepEqual(totals.violations, [], "v1 wire-rule violations");
  assert.deepEqual(v2totals.invalid, [], "invalid v2 lines");
  assert.deepEqual(v2totals.sdkErrors, [], "notifications the v2 SDK dropped");
  assert.ok(v2totals.v2Lines > 0 && totals.wireUpdates > 0);
});
