// Interop test of session/fork (v1, unstable in the SDK 2.4.0 schema, the
// SDK's unstable_forkSession request): the sessionkit ACP agent
// (examples/acp-agent, offline provider, a SQLite --store) against the
// official TypeScript SDK's client. The fork's result and every error are
// validated with the SDK's unstable v1 zod validators. The stable entry's
// acp.methods has no name for session/fork: the request goes by its wire
// name, which the SDK's client maps to its unstable_forkSession request
// spec (and validates the params with zForkSessionRequest).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { acp, buildAgent, cleanupBuild, startAgent, tempStore } from "./harness.mjs";

const unstableURL = new URL("../unstable/schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk"));
const zu = await import(unstableURL.href);

const P1 = "My project is called Aurora; it is a Go SDK for long conversations.";
const P2 = "The release is planned for March.";
const CWD = "/tmp";

before(() => {
  buildAgent();
});
after(() => {
  cleanupBuild();
});

/** The text of the user and agent messages a session/load replayed, in order. */
function replayed(proc, sessionId, fromLine) {
  const out = [];
  for (const l of proc.incoming().slice(fromLine)) {
    const u = l.msg?.params?.update;
    if (l.msg?.method !== "session/update" || l.msg.params.sessionId !== sessionId) continue;
    if (u.sessionUpdate === "user_message_chunk" || u.sessionUpdate === "agent_message_chunk") {
      const kind = u.sessionUpdate === "user_message_chunk" ? "user" : "agent";
      const last = out.at(-1);
      if (last?.kind === kind && last.id === u.messageId) last.text += u.content.text;
      else out.push({ kind, id: u.messageId, text: u.content.text });
    }
  }
  return out;
}

test("fork1. v1: session/fork through the SDK (unstable_forkSession), at the newest entry and at _meta.sessionkit.messageId; the fork is served and a session/load of it replays the source's history up to the fork point", async (t) => {
  const store = tempStore();
  t.after(() => store.cleanup());
  const a = await startAgent({ store: store.path });
  try {
    const init = await a.initialize({});
    assert.deepEqual(init.agentCapabilities.sessionCapabilities?.fork, {}, "sessionCapabilities.fork advertised");
    const src = await a.newSession(CWD);
    assert.equal((await a.prompt(src, P1)).response.stopReason, "end_turn");
    assert.equal((await a.prompt(src, P2)).response.stopReason, "end_turn");

    // The source's history, as a load shows it, with its message IDs.
    await a.request(acp.methods.agent.session.close, { sessionId: src });
    let from = a.incoming().length;
    await a.loadSession(src, CWD);
    const history = replayed(a, src, from);
    assert.deepEqual(history.map((m) => m.kind), ["user", "agent", "user", "agent"]);

    // At the newest entry.
    const whole = await a.request("session/fork", { sessionId: src, cwd: CWD, mcpServers: [] });
    assert.equal(typeof whole.sessionId, "string");
    assert.notEqual(whole.sessionId, src);
    assert.equal((await a.prompt(whole.sessionId, "And the fork?")).response.stopReason, "end_turn", "the fork is served at once");

    // At the first reply: the fork has the first exchange only.
    const at = history[1].id;
    const part = await a.request("session/fork", {
      sessionId: src,
      cwd: CWD,
      mcpServers: [],
      _meta: { sessionkit: { messageId: at } },
    });
    await a.request(acp.methods.agent.session.close, { sessionId: part.sessionId });
    from = a.incoming().length;
    await a.loadSession(part.sessionId, CWD);
    const got = replayed(a, part.sessionId, from);
    assert.deepEqual(got.map((m) => m.text), history.slice(0, 2).map((m) => m.text), "the source's history up to the fork point");

    // Bad input: an unknown message, an unknown session.
    await assert.rejects(
      a.request("session/fork", { sessionId: src, cwd: CWD, mcpServers: [], _meta: { sessionkit: { messageId: "no-such-message" } } }),
      (err) => err.code === -32602,
    );
    await assert.rejects(a.request("session/fork", { sessionId: "no-such-session", cwd: CWD, mcpServers: [] }), (err) => err.code === -32002);

    // Every fork result and error validates with the SDK's unstable schema.
    const forks = a.lines.filter((l) => l.dir === "out" && l.msg?.method === "session/fork");
    assert.equal(forks.length, 4);
    for (const f of forks) {
      const resp = a.incoming().find((l) => l.msg?.id === f.msg.id && !l.msg.method);
      const r = resp.msg.error ? zu.zError.safeParse(resp.msg.error) : zu.zForkSessionResponse.safeParse(resp.msg.result);
      assert.ok(r.success, `session/fork answer: ${resp.raw}`);
    }
  } catch (err) {
    t.diagnostic(`wire transcript:\n${a.transcript()}\n--- stderr ---\n${a.stderr()}`);
    throw err;
  } finally {
    const exit = await a.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${a.stderr()}`);
    assert.doesNotMatch(a.stderr(), /panic|DATA RACE/);
  }
});
