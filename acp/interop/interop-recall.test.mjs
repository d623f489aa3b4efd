// Interop test of recall: the sessionkit ACP agent (examples/acp-agent,
// offline provider, recall on by default) against a client built on the
// official ACP TypeScript SDK (v1). A fact that only the archive holds after
// a compaction is asked about: the model calls the session's built-in
// recall tool, the client is shown a tool call of kind search titled
// Recall "<question>", and the answer quotes the archived text. A
// session/load in a fresh agent shows the same calls at the same positions.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { buildAgent, cleanupBuild, startAgent, tempStore } from "./harness.mjs";

const CAPABLE = { session: { compaction: {} } };

before(() => buildAgent());
after(() => cleanupBuild());

// The fact sits past what the offline model quotes of a file it read (200
// characters), so after the compaction only the archived tool result holds it.
const NOTES = "# Notes\n\n" + "- Nothing to report on this line yet.\n".repeat(8) + "- The staging server listens on port 8443.\n";
const QUESTION = "Which port does the staging server listen on?";

async function withAgent(t, store, args, fn) {
  const proc = await startAgent({ store: store.path, args });
  try {
    const out = await fn(proc);
    const exit = await proc.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
    assert.doesNotMatch(proc.stderr(), /panic|DATA RACE/);
    assert.deepEqual(proc.wireUpdates().filter((l) => !l.valid).map((l) => l.raw), [], "every update valid for the SDK's v1 schema");
    return out;
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}\n--- stderr ---\n${proc.stderr()}`);
    await proc.stop({ kill: true });
    throw err;
  }
}

/** The tool calls and their results, and the agent's text, in wire order. */
function items(lines) {
  const out = [];
  for (const l of lines) {
    const u = l.msg.params.update;
    switch (u.sessionUpdate) {
      case "tool_call":
        out.push({ item: "tool_call", id: u.toolCallId, name: u.name, kind: u.kind, title: u.title, rawInput: u.rawInput });
        break;
      case "tool_call_update":
        if (u.status === "completed" || u.status === "failed") out.push({ item: "tool_result", id: u.toolCallId, status: u.status });
        break;
      case "agent_message_chunk": {
        const last = out.at(-1);
        if (last?.item === "agent" && last.id === u.messageId) last.text += u.content.text;
        else out.push({ item: "agent", id: u.messageId, text: u.content.text });
        break;
      }
    }
  }
  return out;
}

test("r1. a question only the archive answers: a recall tool call of kind search, the answer from the archive, the same on session/load", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "sessionkit-recall-"));
  writeFileSync(join(dir, "notes.md"), NOTES);
  const store = tempStore();
  try {
    const live = await withAgent(t, store, [], async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession(dir);
      for (const text of ["Read notes.md", "We write the server in Go.", "/compact"]) {
        assert.equal((await proc.prompt(sid, text)).response.stopReason, "end_turn", text);
      }
      const asked = await proc.prompt(sid, QUESTION);
      assert.equal(asked.response.stopReason, "end_turn");
      await proc.settle();
      return { sid, all: items(proc.wireUpdates(sid)), turn: items(proc.wireUpdates(sid).filter((l) => l.seq > asked.requestLine.seq)) };
    });
    const [calling, call, result, answer] = live.turn;
    assert.equal(calling?.text, "Calling recall.");
    assert.deepEqual(call && { ...call, id: undefined }, { item: "tool_call", id: undefined, name: "recall", kind: "search", title: `Recall "${QUESTION}"`, rawInput: { query: QUESTION } });
    assert.equal(result?.status, "completed");
    assert.match(answer?.text ?? "", /^From the archive \(message \S+, archived by compaction 1\): ".*port 8443\."/);

    const replayed = await withAgent(t, store, [], async (proc) => {
      await proc.initialize(CAPABLE);
      await proc.loadSession(live.sid, dir);
      await proc.settle();
      return items(proc.wireUpdates(live.sid));
    });
    assert.deepEqual(replayed, live.all, "the replay shows the recall call as it was shown live");
  } finally {
    store.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("r2. --recall=false: the model is not offered recall and answers from its context", async (t) => {
  const store = tempStore();
  try {
    await withAgent(t, store, ["--recall=false"], async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      const asked = await proc.prompt(sid, QUESTION);
      assert.equal(asked.response.stopReason, "end_turn");
      await proc.settle();
      const turn = items(proc.wireUpdates(sid).filter((l) => l.seq > asked.requestLine.seq));
      assert.deepEqual(turn.map((i) => i.item), ["agent"]);
      assert.match(turn[0].text, /^I found nothing earlier in the conversation about/);
    });
  } finally {
    store.cleanup();
  }
});
