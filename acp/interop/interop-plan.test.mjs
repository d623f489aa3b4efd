// Interop tests of plans: the sessionkit ACP agent (examples/acp-agent,
// offline provider, whose "plan: a; done b; c" calls the session's plan
// tool) against the official TypeScript SDK 2.4.0. v1 without
// clientCapabilities.plan: the legacy plan update, delivered by the stable
// v1 client and valid for its schema, live and on session/load. v1 with
// it: plan_update and plan_removed, which the stable client does not know
// (it drops them, with a console error),
// checked as raw JSON against the SDK's v1 unstable schema (where the
// stabilized shape is). v2: plan_update through the experimental v2
// client, valid for its v2 validators. And thinking (th1, th2): a
// demotools agent whose provider reasons (SESSIONKIT_DEMO_THINKS=1) sends
// agent_thought_chunk before the answer, delivered by the stable v1 client
// and valid, live and on session/load; and through the v2 client.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { buildAgent, cleanupBuild, startAgent, tempStore, acp } from "./harness.mjs";
import { acp2, V2Agent, v2Client, V2_INIT, v2totals } from "./harness-v2.mjs";

const unstableURL = new URL("../unstable/schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk"));
const unstable = await import(unstableURL.href);

before(() => buildAgent());
after(() => cleanupBuild());

const PROMPTS = ["plan: read the code; fix the bug", "plan: done read the code; fix the bug", "plan: clear"];

async function withAgent(t, store, caps, fn, env = {}) {
  const proc = await startAgent({ store: store.path, env });
  try {
    await proc.initialize(caps);
    const out = await fn(proc);
    const exit = await proc.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
    assert.doesNotMatch(proc.stderr(), /panic|DATA RACE/);
    return out;
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    await proc.stop({ kill: true });
    throw err;
  }
}

const planKinds = new Set(["plan", "plan_update", "plan_removed"]);
const plans = (lines) => lines.map((l) => l.msg.params.update).filter((u) => planKinds.has(u.sessionUpdate));

test("p1. v1 without clientCapabilities.plan: the legacy plan update, delivered and valid, live and on session/load; no tool call", async (t) => {
  const store = tempStore();
  try {
    const sid = await withAgent(t, store, {}, async (proc) => {
      const sid = await proc.newSession();
      for (const p of PROMPTS) assert.equal((await proc.prompt(sid, p)).response.stopReason, "end_turn", p);
      await proc.settle();
      const wire = proc.wireUpdates(sid);
      assert.deepEqual(wire.filter((l) => !l.valid).map((l) => l.raw), [], "every update valid for the SDK's v1 schema");
      assert.ok(!wire.some((l) => l.msg.params.update.sessionUpdate.startsWith("tool_call")), "a plan call is no tool call");
      const got = plans(wire);
      assert.deepEqual(got, [
        { sessionUpdate: "plan", entries: [{ content: "read the code", priority: "medium", status: "in_progress" }, { content: "fix the bug", priority: "medium", status: "pending" }] },
        { sessionUpdate: "plan", entries: [{ content: "read the code", priority: "medium", status: "completed" }, { content: "fix the bug", priority: "medium", status: "in_progress" }] },
        { sessionUpdate: "plan", entries: [] },
      ]);
      const delivered = plans(proc.deliveredUpdates(sid).map((d) => ({ msg: { params: d.params } })));
      assert.equal(delivered.length, 3, "the SDK delivered every plan update");
      return sid;
    });
    await withAgent(t, store, {}, async (proc) => {
      await proc.loadSession(sid);
      await proc.settle();
      const wire = proc.wireUpdates(sid);
      assert.deepEqual(wire.filter((l) => !l.valid).map((l) => l.raw), []);
      assert.deepEqual(plans(wire).map((u) => u.entries.length), [2, 2, 0], "replayed at their places");
    });
  } finally {
    store.cleanup();
  }
});

test("p2. v1 with clientCapabilities.plan: plan_update with planId and plan_removed, valid for the SDK's v1 unstable schema", async (t) => {
  const store = tempStore();
  try {
    await withAgent(t, store, { plan: {} }, async (proc) => {
      const sid = await proc.newSession();
      for (const p of PROMPTS) assert.equal((await proc.prompt(sid, p)).response.stopReason, "end_turn", p);
      await proc.settle();
      const wire = proc.wireUpdates(sid);
      const got = plans(wire);
      assert.deepEqual(got.map((u) => u.sessionUpdate), ["plan_update", "plan_update", "plan_removed"]);
      assert.deepEqual(got[0].plan, { type: "items", planId: "plan", entries: [{ content: "read the code", priority: "medium", status: "in_progress" }, { content: "fix the bug", priority: "medium", status: "pending" }] });
      assert.deepEqual(got[2], { sessionUpdate: "plan_removed", planId: "plan" });
      for (const l of wire) {
        const r = unstable.zSessionNotification.safeParse(l.msg.params);
        assert.ok(r.success, `valid for the v1 unstable schema: ${l.raw}\n${r.error?.message}`);
      }
    });
  } finally {
    store.cleanup();
  }
});

test("p3. v2: plan_update through the SDK's v2 client, valid for its validators", async (t) => {
  const store = tempStore();
  const a = await V2Agent.start({ store: store.path });
  try {
    await v2Client().connectWith(a.sdkStream(), async (ctx) => {
      await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      await ctx.buildSession("/tmp").withSession(async (s) => {
        for (const p of PROMPTS) {
          await s.prompt(p);
          for (;;) {
            const m = await s.nextUpdate();
            if (m.kind === "stop") break;
          }
        }
      });
    });
    const got = a.updates().filter((u) => planKinds.has(u.sessionUpdate));
    assert.deepEqual(got.map((u) => [u.sessionUpdate, u.plan.type, u.plan.planId, u.plan.entries.length]), [
      ["plan_update", "items", "plan", 2],
      ["plan_update", "items", "plan", 2],
      ["plan_update", "items", "plan", 0],
    ]);
    assert.ok(!a.updates().some((u) => u.sessionUpdate === "tool_call_update"), "a plan call is no tool call");
    assert.deepEqual(v2totals.invalid, [], "invalid v2 lines");
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}`);
    throw err;
  } finally {
    await a.stop();
    store.cleanup();
  }
});

const THINKS = { SESSIONKIT_DEMO_THINKS: "1" };
const chunks = (lines) =>
  lines
    .map((l) => l.msg.params.update)
    .filter((u) => u.sessionUpdate === "agent_thought_chunk" || u.sessionUpdate === "agent_message_chunk")
    .map((u) => [u.sessionUpdate, u.messageId?.startsWith("thought_") ? "thought_" : "", u.content.text]);

test("th1. v1: the model's reasoning as agent_thought_chunk before its answer, delivered and valid, live and on session/load", async (t) => {
  const store = tempStore();
  try {
    const sid = await withAgent(
      t,
      store,
      {},
      async (proc) => {
        const sid = await proc.newSession();
        assert.equal((await proc.prompt(sid, "Hello there")).response.stopReason, "end_turn");
        await proc.settle();
        const wire = proc.wireUpdates(sid);
        assert.deepEqual(wire.filter((l) => !l.valid).map((l) => l.raw), [], "every update valid for the SDK's v1 schema");
        const got = chunks(wire);
        assert.deepEqual(got[0], ["agent_thought_chunk", "thought_", "The user said: Hello there"]);
        assert.equal(got[1][0], "agent_message_chunk");
        const delivered = proc.deliveredUpdates(sid).map((d) => d.params.update.sessionUpdate);
        assert.ok(delivered.includes("agent_thought_chunk"), "the SDK delivered the thought");
        return sid;
      },
      THINKS,
    );
    await withAgent(t, store, {}, async (proc) => {
      await proc.loadSession(sid);
      await proc.settle();
      const wire = proc.wireUpdates(sid);
      assert.deepEqual(wire.filter((l) => !l.valid).map((l) => l.raw), []);
      const got = chunks(wire).filter((c) => c[0] !== "agent_message_chunk" || c[1] === "");
      assert.deepEqual(got[0], ["agent_thought_chunk", "thought_", "The user said: Hello there"], "replayed before the answer");
    });
  } finally {
    store.cleanup();
  }
});

test("th2. v2: agent_thought_chunk through the SDK's v2 client, a message of its own", async (t) => {
  const store = tempStore();
  const a = await V2Agent.start({ store: store.path, env: THINKS });
  try {
    await v2Client().connectWith(a.sdkStream(), async (ctx) => {
      await ctx.request(acp2.methods.agent.initialize, V2_INIT);
      await ctx.buildSession("/tmp").withSession(async (s) => {
        await s.prompt("Hello there");
        for (;;) {
          const m = await s.nextUpdate();
          if (m.kind === "stop") break;
        }
      });
    });
    const ups = a.updates();
    const thought = ups.find((u) => u.sessionUpdate === "agent_thought_chunk");
    const text = ups.find((u) => u.sessionUpdate === "agent_message_chunk");
    assert.ok(thought && text, "a thought and an answer");
    assert.equal(thought.messageId, "thought_" + text.messageId);
    assert.ok(ups.indexOf(thought) < ups.indexOf(text), "the thought first");
    assert.deepEqual(v2totals.invalid, [], "invalid v2 lines");
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}`);
    throw err;
  } finally {
    await a.stop();
    store.cleanup();
  }
});
