// Interop test of the agent's bound on sessions (--max-sessions) through the
// official ACP TypeScript SDK's client: a session/new past the limit is
// refused with an error the SDK hands over as a RequestError, and a
// session/close frees a slot.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { acp, buildAgent, cleanupBuild, startAgent, tempStore } from "./harness.mjs";

before(() => {
  buildAgent();
});
after(() => {
  cleanupBuild();
});

test("m1. --max-sessions 2: the third session/new is refused with -32603 naming the limit; session/close frees a slot", async (t) => {
  const store = tempStore();
  const proc = await startAgent({ store: store.path, args: ["--max-sessions", "2"] });
  try {
    await proc.initialize({});
    const first = await proc.newSession();
    await proc.newSession();
    await assert.rejects(proc.newSession(), (err) => {
      t.diagnostic(`refused: ${JSON.stringify({ code: err.code, message: err.message, data: err.data })}`);
      assert.equal(err.code, -32603);
      assert.match(err.message, /too many sessions/);
      assert.deepEqual(err.data, { sessionkit: { maxSessions: 2 } });
      return true;
    });
    await proc.request(acp.methods.agent.session.close, { sessionId: first });
    assert.ok(await proc.newSession(), "a closed session frees its slot");
    await assert.rejects(proc.newSession(), (err) => err.code === -32603, "and only that one");
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}`);
    throw err;
  } finally {
    const exit = await proc.stop();
    store.cleanup();
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
  }
});
