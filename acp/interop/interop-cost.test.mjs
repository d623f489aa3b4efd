// Interop tests of the session's cost in usage_update (issue 39): the
// sessionkit ACP agent (examples/acp-agent, offline provider, --prices with
// a price for its model) against the official TypeScript SDK's v1 client
// and its experimental v2 client. Every usage_update the agent writes,
// through prompts, a /compact, an automatic compaction and a session/load
// (v1) or session/resume with replay (v2) in a new process, carries `cost`,
// and the cost never decreases; a compaction's summary call raises it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { buildAgent, cleanupBuild, startAgent, tempStore } from "./harness.mjs";
import { acp2, V2Agent, V2_INIT, v2Client } from "./harness-v2.mjs";

let priceDir;
let prices;
before(() => {
  buildAgent();
  priceDir = mkdtempSync(join(tmpdir(), "sessionkit-interop-prices-"));
  prices = join(priceDir, "prices.json");
  // Per million tokens; high, so that a few offline tokens cost something.
  writeFileSync(prices, JSON.stringify({ offline: { input: 1000, output: 4000, cache_read: 100 } }));
});
after(() => {
  cleanupBuild();
  rmSync(priceDir, { recursive: true, force: true });
});

const P1 = "My project is called Aurora; it is a Go SDK for long conversations.";
const P2 = "The release is planned for March, after the review of the storage layer.";
const P3 = "Remind me what the project is called.";
const CWD = "/tmp";
const CAPABLE = { session: { compaction: {} } }; // a v1 client that shows compactions
const args = () => ["--prices", prices, "--auto-compact-tokens", "30"];

/**
 * Checks the usage_updates of one connection in wire order (with the
 * compaction updates around them, to find the compactions): each carries
 * cost {amount, currency: "USD"}, never below the one before (from); the
 * first after each compaction that ran here (in_progress, then completed;
 * a replayed one is only completed, and was paid for before) above the
 * last before it. Returns the last cost and how many compactions raised it.
 */
function checkCosts(updates, from, what) {
  let last = from;
  let compacted = false;
  let before = null;
  let raised = 0;
  const running = new Set();
  for (const u of updates) {
    if (u.sessionUpdate === "compaction_update" && u.status === "in_progress") running.add(u.compactionId);
    if (u.sessionUpdate === "compaction_update" && u.status === "completed" && running.has(u.compactionId)) {
      compacted = true;
      before = last;
    }
    if (u.sessionUpdate !== "usage_update") continue;
    assert.ok(u.cost, `${what}: usage_update without cost: ${JSON.stringify(u)}`);
    assert.equal(u.cost.currency, "USD", what);
    assert.equal(typeof u.cost.amount, "number", what);
    assert.ok(u.cost.amount >= last, `${what}: cost went down from ${last} to ${u.cost.amount}`);
    if (compacted) {
      assert.ok(u.cost.amount > before, `${what}: the usage_update after a compaction includes its summary call (${before} -> ${u.cost.amount})`);
      compacted = false;
      raised++;
    }
    last = u.cost.amount;
  }
  return { last, raised };
}

test("v1: cost in every usage_update, never decreasing, across /compact, an automatic compaction and session/load", async (t) => {
  const store = tempStore();
  let sid;
  let last;
  try {
    let proc = await startAgent({ store: store.path, args: args() });
    try {
      await proc.initialize(CAPABLE);
      sid = await proc.newSession(CWD);
      for (const text of [P1, P2, "/compact keep the project name", P3]) {
        const r = await proc.prompt(sid, text);
        assert.equal(r.response.stopReason, "end_turn", text);
      }
      await proc.settle();
      const wire = proc.wireUpdates(sid).map((l) => l.msg.params.update);
      const delivered = proc.deliveredUpdates(sid).map((d) => d.params.update);
      assert.deepEqual(delivered.filter((u) => u.sessionUpdate === "usage_update"), wire.filter((u) => u.sessionUpdate === "usage_update"), "the SDK delivered every usage_update as written");
      const triggers = wire.filter((u) => u.sessionUpdate === "compaction_update" && u.status === "in_progress").map((u) => u._meta?.sessionkit?.trigger);
      assert.ok(triggers.includes("manual") && triggers.includes("auto"), `a manual and an automatic compaction: ${triggers}`);
      const c = checkCosts(delivered, 0, "live");
      assert.ok(c.raised >= 2, `both compactions raised the cost (${c.raised})`);
      assert.ok(c.last > 0, "the session cost something");
      last = c.last;
    } catch (err) {
      t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
      throw err;
    } finally {
      await proc.stop({ kill: true });
    }

    // A new process: session/load, then one more prompt.
    proc = await startAgent({ store: store.path, args: args() });
    try {
      await proc.initialize(CAPABLE);
      const rl = await proc.loadSession(sid, CWD);
      assert.ok(rl.responseLine && "result" in rl.responseLine.msg, `session/load failed: ${rl.responseLine?.raw}`);
      await proc.waitFor(() => proc.wireUpdates(sid).some((l) => l.msg.params.update.sessionUpdate === "usage_update"), "a usage_update after session/load");
      const loaded = proc.wireUpdates(sid).map((l) => l.msg.params.update).find((u) => u.sessionUpdate === "usage_update");
      assert.ok(Math.abs(loaded.cost.amount - last) < 1e-9, `session/load tells the cost so far (${last}), got ${loaded.cost.amount}`);
      const r = await proc.prompt(sid, "Thanks, that is all.");
      assert.equal(r.response.stopReason, "end_turn");
      await proc.settle();
      const delivered = proc.deliveredUpdates(sid).map((d) => d.params.update);
      const c = checkCosts(delivered, last, "after session/load");
      assert.ok(c.last > last, "the prompt after the load added its cost");
    } catch (err) {
      t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
      throw err;
    } finally {
      await proc.stop({ kill: true });
    }
  } finally {
    store.cleanup();
  }
});

/** Reads a v2 session's updates through the SDK until the next idle state. */
async function untilIdle(session) {
  const got = [];
  for (;;) {
    const m = await session.nextUpdate();
    got.push(m.update);
    if (m.kind === "stop") return got;
  }
}

test("v2: cost in every usage_update, never decreasing, across /compact, an automatic compaction and session/resume with replay", async (t) => {
  const store = tempStore();
  let sid;
  let last;
  try {
    let a = await V2Agent.start({ store: store.path, args: args() });
    try {
      const delivered = [];
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.buildSession(CWD).withSession(async (s) => {
          sid = s.sessionId;
          for (const text of [P1, P2, "/compact keep the project name", P3]) {
            await s.prompt(text);
            delivered.push(...(await untilIdle(s)));
          }
        });
      });
      const wire = a.updates();
      assert.deepEqual(delivered.filter((u) => u.sessionUpdate === "usage_update"), wire.filter((u) => u.sessionUpdate === "usage_update").map(({ seq, ...u }) => u), "the SDK delivered every usage_update as written");
      const c = checkCosts(delivered, 0, "live");
      assert.ok(c.raised >= 2, `both compactions raised the cost (${c.raised})`);
      assert.ok(c.last > 0, "the session cost something");
      last = c.last;
    } catch (err) {
      t.diagnostic(`wire transcript:\n${a.transcript()}`);
      throw err;
    } finally {
      await a.stop();
    }

    a = await V2Agent.start({ store: store.path, args: args() });
    try {
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.request(acp2.methods.agent.session.resume, { sessionId: sid, cwd: CWD, replayFrom: { type: "start" } });
        await a.waitFor(() => a.updates().some((u) => u.sessionUpdate === "usage_update"), "a usage_update after session/resume");
        const resumed = a.updates().find((u) => u.sessionUpdate === "usage_update");
        assert.ok(Math.abs(resumed.cost.amount - last) < 1e-9, `session/resume tells the cost so far (${last}), got ${resumed.cost.amount}`);
        const mark = a.lines.length;
        await ctx.request(acp2.methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "Thanks, that is all." }] });
        await a.waitFor(() => a.updates(mark).some((u) => u.sessionUpdate === "state_update" && u.state === "idle"), "the turn's end");
        const c = checkCosts(a.updates(), last, "after session/resume");
        assert.ok(c.last > last, "the prompt after the resume added its cost");
      });
    } catch (err) {
      t.diagnostic(`wire transcript:\n${a.transcript()}`);
      throw err;
    } finally {
      await a.stop();
    }
  } finally {
    store.cleanup();
  }
});
