// Interop tests: the sessionkit ACP agent (examples/acp-agent, offline
// provider) against a client built on the official ACP TypeScript SDK,
// @agentclientprotocol/sdk 2.4.0, stable v1 entrypoint.
//
// Every scenario starts its own agent process(es) on a fresh temp --store
// and ends them before the test returns. Every session/update line the agent
// writes is checked against the SDK's own v1 zod schema and the wire rules
// of docs/design.md §7.4 (harness.mjs); the last test asserts
// that no line anywhere was invalid and that the SDK delivered each one.
//
// Order assertions use the raw wire (the position of each line relative to
// the JSON-RPC response line); the SDK-level order (callback vs promise
// resolution) is checked too.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  acp,
  buildAgent,
  cleanupBuild,
  startAgent,
  tempStore,
  reduce,
  textOf,
  totals,
  sdkLog,
  quietSdk,
  wireProblems,
  zSessionNotification,
} from "./harness.mjs";

const CAPABLE = { session: { compaction: {} } };
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const P1 = "My project is called Aurora; it is a Go SDK for long conversations, and I drink green tea while I work on it.";
const P2 = "The release is planned for March.";
const ECHO = "please call echo with text: hi";

// With the offline provider (tokens ≈ characters/4 of the request): turn 1
// (P1) reports 80 tokens of context; the ECHO turn's first step 96, and its
// second step, after a compaction, 71. 88 therefore triggers exactly one
// compaction, at the step checkpoint after the tool result, and none at the
// end of either turn. 30 triggers one at the end of turn 1.
const AUTO_MID_TURN = "88";
const AUTO_END_OF_TURN = "30";

before(() => {
  buildAgent();
});
after(() => {
  cleanupBuild();
});

// ---------------------------------------------------------------------------
// Helpers

/** Runs fn with a fresh agent process; the process is always ended. */
async function withAgent(t, opts, fn) {
  const store = opts.store ?? tempStore();
  const cleanup = () => {
    if (!opts.store) store.cleanup();
  };
  const proc = await startAgent({ store: store.path, args: opts.args ?? [], env: opts.env ?? {} });
  let result;
  try {
    result = await fn(proc);
  } catch (err) {
    if (!opts.noTranscript) t.diagnostic(`wire transcript of the failing process:\n${proc.transcript()}`);
    await proc.stop({ kill: true });
    cleanup();
    throw err;
  }
  // The agent exits cleanly once the client closes its stdin.
  const exit = await proc.stop({ kill: opts.kill });
  cleanup();
  if (!opts.kill) {
    assert.deepEqual(exit, { code: 0, signal: null }, `agent exit; stderr:\n${proc.stderr()}`);
  }
  assert.doesNotMatch(proc.stderr(), /panic|DATA RACE/, "agent stderr");
  return result;
}

/** Runs fn with a temp store shared by several processes. */
async function withStore(fn) {
  const store = tempStore();
  try {
    return await fn(store);
  } finally {
    store.cleanup();
  }
}

/**
 * Wire vs delivered: every session/update line of this process is valid for
 * the SDK's zSessionNotification and breaks no wire rule; the SDK delivered
 * exactly as many per session as the wire carried, in wire order, and what
 * it delivered is what its schema makes of the raw params.
 */
async function checkWireAndDelivery(t, proc) {
  await proc.settle();
  const wire = proc.wireUpdates();
  const invalid = wire.filter((l) => !l.valid);
  assert.deepEqual(
    invalid.map((l) => l.raw),
    [],
    "session/update lines the SDK's v1 schema rejects (it would drop them silently)",
  );
  const broken = wire.filter((l) => l.problems.length > 0);
  assert.deepEqual(
    broken.map((l) => `${l.problems.join("; ")}: ${l.raw}`),
    [],
    "wire-rule violations",
  );
  const counts = proc.counts();
  for (const [sid, c] of Object.entries(counts)) {
    assert.equal(c.delivered, c.wire, `session ${sid}: delivered ${c.delivered} session/update, wire carried ${c.wire}`);
  }
  const delivered = proc.deliveredUpdates();
  for (let i = 0; i < wire.length; i++) {
    assert.deepEqual(delivered[i].params, zSessionNotification.parse(wire[i].msg.params), `delivered #${i} differs from the SDK's parse of wire line ${wire[i].raw}`);
  }
  assert.deepEqual(proc.agentRequests, [], "the agent sent requests to the client");
  const summary = Object.entries(counts)
    .map(([sid, c]) => `session ${sid.slice(0, 8)}…: wire ${c.wire}, delivered ${c.delivered}`)
    .join("; ");
  t.diagnostic(`session/update ${summary}; invalid ${invalid.length}`);
  return counts;
}

const upd = (l) => l.msg.params.update;
const kind = (l) => upd(l).sessionUpdate;
const isCompaction = (l) => /^compaction_/.test(kind(l));
const idOf = (l) => upd(l).compactionId;

/** Lines strictly between two seqs (to omitted = up to the end). */
const between = (lines, from, to) => lines.filter((l) => l.seq > from && (to === undefined || l.seq < to));

/** A label for one update, for order assertions and diagnostics. */
function label(l) {
  const u = upd(l);
  return u.sessionUpdate === "compaction_update" ? `compaction_update:${u.status}` : u.sessionUpdate;
}

/** Agent text of some lines. */
const agentText = (lines) =>
  lines
    .filter((l) => kind(l) === "agent_message_chunk")
    .map((l) => textOf([upd(l).content]))
    .join("");

/**
 * The lifecycle rules of one live entity (docs/design.md §7.3): first a
 * compaction_update, chunks only between it and the single terminal update,
 * nothing after the terminal update. Returns {updates, chunks, terminal}.
 */
function checkLifecycle(lines, id) {
  const mine = lines.filter((l) => isCompaction(l) && idOf(l) === id);
  assert.ok(mine.length > 0, `no update for compaction ${id}`);
  assert.equal(kind(mine[0]), "compaction_update", "the first notification for an ID is a compaction_update");
  const terminals = mine.filter((l) => kind(l) === "compaction_update" && TERMINAL.has(upd(l).status));
  assert.equal(terminals.length, 1, `exactly one terminal update for ${id}: ${mine.map(label).join(", ")}`);
  assert.equal(mine.at(-1), terminals[0], "nothing follows the terminal update");
  const chunks = mine.filter((l) => kind(l) === "compaction_summary_chunk");
  for (const c of chunks) assert.ok(c.seq > mine[0].seq && c.seq < terminals[0].seq, "chunks lie between the first and the terminal update");
  return { updates: mine.filter((l) => kind(l) === "compaction_update"), chunks, terminal: terminals[0] };
}

/**
 * Live timeline as a client shows it: the user's prompts (a client renders
 * them itself; the agent does not echo them live) merged by time with the
 * updates the SDK delivered, reduced with RFD semantics.
 */
function liveTimeline(proc, sessionId, { commands = true } = {}) {
  const prompts = proc.lines
    .filter((l) => l.dir === "out" && l.msg?.method === "session/prompt" && l.msg.params?.sessionId === sessionId)
    .filter((l) => commands || !l.msg.params.prompt[0].text.startsWith("/compact"))
    .map((l) => ({ seq: l.seq, update: { sessionUpdate: "user_message_chunk", content: l.msg.params.prompt[0] } }));
  const updates = proc.deliveredUpdates(sessionId).map((d) => ({ seq: d.seq, update: d.params.update }));
  return reduce([...prompts, ...updates].sort((a, b) => a.seq - b.seq).map((x) => x.update));
}

/** A reduced view without compaction IDs (replay IDs may differ, docs/design.md §8). */
const stripIds = (view) => view.map(({ id, ...rest }) => (rest.kind === "compaction" ? rest : { id, ...rest }));

/** The live view as a replay must reproduce it: "/compact" prompts are commands, not messages. */
const withoutCommands = (view) => view.filter((i) => !(i.kind === "user" && i.text.startsWith("/compact")));

/** The capable-client flow of scenario (a): two prompts, then /compact. */
async function compactFlow(proc) {
  const init = await proc.initialize(CAPABLE);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  const sid = await proc.newSession();
  const r1 = await proc.prompt(sid, P1);
  const r2 = await proc.prompt(sid, P2);
  assert.equal(r1.response.stopReason, "end_turn");
  assert.equal(r2.response.stopReason, "end_turn");
  const rc = await proc.prompt(sid, "/compact keep the project name");
  await proc.settle();
  return { sid, rc };
}

/**
 * session/load in a fresh process on store. Checks that the replay comes
 * before the response and nothing but the command advertisement after it;
 * returns the replayed lines and their reduced timeline.
 */
async function loadIn(t, store, sid, caps, { followUp = false } = {}) {
  return withAgent(t, { store }, async (proc) => {
    await proc.initialize(caps);
    const rl = await proc.loadSession(sid);
    assert.ok(rl.responseLine && "result" in rl.responseLine.msg, `session/load failed: ${rl.responseLine?.raw}`);
    // The agent advertises its commands once the session is loaded.
    await proc.waitFor(
      () => between(proc.wireUpdates(sid), rl.responseLine.seq).find((l) => kind(l) === "available_commands_update"),
      "available_commands_update after session/load",
    );
    await proc.settle();
    const replay = between(proc.wireUpdates(sid), rl.requestLine.seq, rl.responseLine.seq);
    const afterResponse = between(proc.wireUpdates(sid), rl.responseLine.seq);
    assert.deepEqual(
      afterResponse.map(kind).filter((k) => k !== "available_commands_update"),
      [],
      "replayed updates after the session/load response",
    );
    // SDK level: the whole replay was handed over before session/load resolved.
    const wire = proc.wireUpdates(sid);
    const delivered = proc.deliveredUpdates(sid);
    const late = replay.filter((l) => delivered[wire.indexOf(l)].seq > rl.resolvedSeq);
    assert.equal(late.length, 0, "replayed updates delivered after the session/load promise resolved");
    const tl = reduce(replay.map(upd));
    if (followUp) {
      const r = await proc.prompt(sid, "Thanks, that is all.");
      assert.equal(r.response.stopReason, "end_turn", "the loaded session takes prompts");
    }
    await checkWireAndDelivery(t, proc);
    return { replay, tl, labels: replay.map(label), all: proc.wireUpdates() };
  });
}

// ---------------------------------------------------------------------------
// 0. The checks themselves

test("0. self-check: the SDK silently drops what its schema rejects; the wire checker flags the traps of docs/design.md §7.4", async () => {
  // An in-memory agent side: we write raw lines into the SDK client.
  let feed;
  const input = new ReadableStream({
    start(c) {
      feed = (obj) => c.enqueue(new TextEncoder().encode(JSON.stringify(obj) + "\n"));
    },
  });
  const output = new WritableStream({ write() {} });
  const delivered = [];
  const conn = acp
    .client()
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      delivered.push(params.update);
    })
    .connect(acp.ndJsonStream(output, input));
  const note = (update) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update } });
  const good = { sessionUpdate: "compaction_update", compactionId: "c1", status: "in_progress" };
  const bad = [
    { sessionUpdate: "compaction_update", compactionId: "c1" }, // status missing
    { sessionUpdate: "compaction_update", compactionId: null, status: "completed" },
    { sessionUpdate: "compaction_summary_chunk", compactionId: "c1", content: [{ type: "text", text: "x" }] },
    { sessionUpdate: "_vendor_kind", compactionId: "c1" },
  ];
  await quietSdk(async () => {
    feed(note(good));
    for (const u of bad) feed(note(u));
    feed(note({ ...good, status: "_custom" }));
    await new Promise((r) => setTimeout(r, 100));
  });
  conn.close();
  assert.deepEqual(
    delivered.map((u) => u.status),
    ["in_progress", "_custom"],
    "the SDK delivers the valid ones (unknown status strings pass) and drops the rest",
  );
  for (const u of bad) assert.equal(zSessionNotification.safeParse(note(u).params).success, false, JSON.stringify(u));

  // Values the schema accepts but docs/design.md §7.4 forbids.
  const traps = [
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "completed", summary: null }, /summary": null/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "in_progress", summary: [] }, /summary": \[\]/],
    [{ sessionUpdate: "compaction_update", compactionId: "", status: "in_progress" }, /compactionId/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "failed", error: null }, /error": null/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "completed", _meta: null }, /_meta": null/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "in_progress", summary: [{ type: "text", text: "x" }] }, /other than completed/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "completed", error: "x" }, /error with a status/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "paused" }, /neither known nor _-prefixed/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "completed", summary: "text" }, /not an array/],
    [{ sessionUpdate: "compaction_update", compactionId: "c", status: "completed", compactionID: "c" }, /unknown key/],
  ];
  for (const [u, want] of traps) {
    const problems = wireProblems(note(u));
    assert.ok(
      problems.some((p) => want.test(p)),
      `${JSON.stringify(u)}: ${JSON.stringify(problems)}`,
    );
  }
  const fine = [
    good,
    { sessionUpdate: "compaction_update", compactionId: "c", status: "cancelled", summary: null },
    { sessionUpdate: "compaction_update", compactionId: "c", status: "failed", summary: null, error: "boom" },
    { sessionUpdate: "compaction_summary_chunk", compactionId: "c", content: { type: "text", text: "x" } },
  ];
  for (const u of fine) assert.deepEqual(wireProblems(note(u)), [], JSON.stringify(u));

  // The reducer: patch semantics of the RFD.
  const tl = reduce([
    { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "before" } },
    { sessionUpdate: "compaction_summary_chunk", compactionId: "x", content: { type: "text", text: "a" } },
    { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "after" } },
    { sessionUpdate: "compaction_summary_chunk", compactionId: "x", content: { type: "text", text: "b" } },
    { sessionUpdate: "compaction_update", compactionId: "x", status: "in_progress", _meta: { k: 1 } },
    { sessionUpdate: "compaction_update", compactionId: "x", status: "_custom" },
  ]);
  assert.deepEqual(tl.view(), [
    { kind: "agent", text: "before" },
    { kind: "compaction", id: "x", status: "_custom", summary: "ab", error: undefined },
    { kind: "agent", text: "after" },
  ]);
  assert.deepEqual(tl.entities.get("x").meta, { k: 1 }, "omitted _meta leaves it unchanged");
  const patch = (u) => ({ sessionUpdate: "compaction_update", compactionId: "y", ...u });
  const t2 = reduce([
    patch({ status: "in_progress", summary: [{ type: "text", text: "old" }], error: "e" }),
    { sessionUpdate: "compaction_summary_chunk", compactionId: "y", content: { type: "text", text: "+chunk" } },
  ]);
  assert.equal(textOf(t2.entities.get("y").summary), "old+chunk", "chunks append to a summary");
  t2.apply(patch({ status: "completed", summary: [{ type: "text", text: "new" }] }));
  assert.equal(textOf(t2.entities.get("y").summary), "new", "a concrete summary replaces");
  assert.equal(t2.entities.get("y").error, "e", "omitted error is unchanged");
  t2.apply(patch({ status: "completed", summary: [], error: null }));
  assert.deepEqual([t2.entities.get("y").summary, t2.entities.get("y").error], [[], undefined], "[] and null clear");
  t2.apply(patch({ status: "completed", summary: [{ type: "text", text: "z" }] }));
  t2.apply(patch({ status: "completed", summary: null }));
  assert.deepEqual(t2.entities.get("y").summary, [], "null clears");
});

// ---------------------------------------------------------------------------
// a. Capable client

test("a. capable client: /compact is one compaction entity, streamed, completed before the prompt response", async (t) => {
  await withAgent(t, {}, async (proc) => {
    const { sid, rc } = await compactFlow(proc);
    assert.deepEqual(rc.response, { stopReason: "end_turn" });
    assert.ok(rc.responseLine, "no response line for /compact on the wire");

    const wire = proc.wireUpdates(sid);
    const turn = between(wire, rc.requestLine.seq, rc.responseLine.seq);
    t.diagnostic(`/compact turn on the wire: ${turn.map(label).join(", ")}, RESPONSE`);

    const comp = wire.filter(isCompaction);
    const ids = new Set(comp.map(idOf));
    assert.equal(ids.size, 1, "exactly one compaction entity");
    const [id] = ids;
    for (const l of comp) {
      assert.ok(l.seq > rc.requestLine.seq && l.seq < rc.responseLine.seq, `compaction update outside the /compact turn or after its response: ${l.raw}`);
    }
    const { updates, chunks, terminal } = checkLifecycle(wire, id);
    assert.equal(upd(updates[0]).status, "in_progress", "a live compaction opens with in_progress");
    assert.ok(chunks.length >= 1, "at least one compaction_summary_chunk");
    assert.equal(upd(terminal).status, "completed");
    assert.ok(Array.isArray(upd(terminal).summary) && upd(terminal).summary.length > 0, "completed carries a non-empty summary");
    const finalText = textOf(upd(terminal).summary);
    assert.ok(finalText.trim().length > 0);
    assert.doesNotMatch(finalText, /<analysis>|compaction completed|tokens/i, "the summary holds no framing or status text");

    // usage_update follows the terminal update, still before the response.
    const afterTerminal = between(wire, terminal.seq, rc.responseLine.seq);
    const usage = afterTerminal.find((l) => kind(l) === "usage_update");
    assert.ok(usage, "usage_update after the completed compaction, before the response");
    const usageBefore = between(wire, 0, comp[0].seq).filter((l) => kind(l) === "usage_update").at(-1);
    t.diagnostic(`usage_update used: ${upd(usageBefore).used} before the compaction, ${upd(usage).used} after`);

    // available_commands_update advertises compact.
    const cmds = wire.filter((l) => kind(l) === "available_commands_update");
    assert.ok(cmds.length >= 1, "available_commands_update");
    assert.ok(
      upd(cmds.at(-1)).availableCommands.some((c) => c.name === "compact"),
      "compact is advertised",
    );

    // The reduced state, from what the SDK delivered.
    const tl = liveTimeline(proc, sid);
    const e = tl.entities.get(id);
    assert.equal(e.status, "completed");
    assert.equal(textOf(e.summary), finalText, "the authoritative summary replaced the streamed chunks");
    assert.equal(e.chunks, chunks.length);
    assert.equal(e.error, undefined);
    const streamed = textOf(chunks.map((l) => upd(l).content));
    t.diagnostic(`${chunks.length} chunks; their text ${streamed === finalText ? "equals" : "differs from"} the final summary`);
    const view = tl.view();
    assert.deepEqual(
      view.map((i) => i.kind),
      ["user", "agent", "user", "agent", "user", "compaction"],
      "timeline: the entity sits where it was first seen, after the /compact prompt",
    );
    assert.equal(view.at(-1).summary, finalText);

    // SDK level: which updates of the turn the SDK had handed over when the
    // session/prompt promise resolved.
    const delivered = proc.deliveredUpdates(sid);
    const beforeResolve = turn.filter((l) => delivered[wire.indexOf(l)].seq < rc.resolvedSeq).length;
    t.diagnostic(`SDK: ${beforeResolve}/${turn.length} updates of the turn delivered before the prompt promise resolved`);
    assert.equal(beforeResolve, turn.length, "the SDK handed over every update of the turn before resolving the prompt");

    await checkWireAndDelivery(t, proc);
  });
});

test("a2. a second /compact is a new entity with a new compactionId", async (t) => {
  await withAgent(t, {}, async (proc) => {
    const { sid } = await compactFlow(proc);
    await proc.prompt(sid, "One more statement.");
    const rc = await proc.prompt(sid, "/compact");
    assert.equal(rc.response.stopReason, "end_turn");
    await proc.settle();
    const wire = proc.wireUpdates(sid);
    const ids = [...new Set(wire.filter(isCompaction).map(idOf))];
    assert.equal(ids.length, 2, "two entities");
    for (const id of ids) assert.equal(upd(checkLifecycle(wire, id).terminal).status, "completed");
    const second = between(wire, rc.requestLine.seq, rc.responseLine.seq).filter(isCompaction);
    assert.ok(second.length > 0 && second.every((l) => idOf(l) === ids[1]), "the second /compact's updates all carry the new ID");
    await checkWireAndDelivery(t, proc);
  });
});

test("a3. --omit-summaries: the entity completes without a summary and without chunks", async (t) => {
  await withAgent(t, { args: ["--omit-summaries"] }, async (proc) => {
    const { sid, rc } = await compactFlow(proc);
    assert.equal(rc.response.stopReason, "end_turn");
    const wire = proc.wireUpdates(sid);
    const comp = wire.filter(isCompaction);
    t.diagnostic(`entity on the wire: ${comp.map(label).join(", ")}`);
    assert.deepEqual(comp.map(label), ["compaction_update:in_progress", "compaction_update:completed"]);
    assert.ok(!("summary" in upd(comp[1])), `completed omits summary (not null, not []): ${comp[1].raw}`);
    for (const l of comp) assert.ok(l.seq < rc.responseLine.seq);
    const e = liveTimeline(proc, sid).entities.get(idOf(comp[0]));
    assert.equal(e.status, "completed");
    assert.deepEqual(e.summary, []);
    await checkWireAndDelivery(t, proc);
  });
});

// ---------------------------------------------------------------------------
// b. Clients without the capability

const NOT_CAPABLE = [
  { name: "session absent", caps: {}, raw: /"clientCapabilities":\{\}/ },
  { name: "session: null", caps: { session: null }, raw: /"session":null/ },
  { name: "session: {}, compaction absent", caps: { session: {} }, raw: /"session":\{\}/ },
  { name: "compaction: null", caps: { session: { compaction: null } }, raw: /"compaction":null/ },
  { name: "compaction: true, not an object", caps: { session: { compaction: true } }, raw: /"compaction":true/ },
];

for (const v of NOT_CAPABLE) {
  test(`b. no capability (${v.name}): no compaction_* on the wire, agent text instead, /compact ends its turn`, async (t) => {
    await withStore(async (store) => {
      const live = await withAgent(t, { store }, async (proc) => {
        // The SDK does not validate outgoing params, so even values outside
        // the schema reach the wire verbatim; the raw line proves it.
        await proc.initialize(v.caps);
        const initLine = proc.outgoingRequest("initialize");
        assert.match(initLine.raw, v.raw, `initialize went out as ${initLine.raw}`);
        const sid = await proc.newSession();
        await proc.prompt(sid, P1);
        await proc.prompt(sid, P2);
        const rc = await proc.prompt(sid, "/compact");
        assert.deepEqual(rc.response, { stopReason: "end_turn" });
        await proc.settle();

        const wire = proc.wireUpdates();
        assert.deepEqual(
          wire.filter(isCompaction).map((l) => l.raw),
          [],
          "compaction_* updates sent to a client without the capability",
        );
        const turn = between(wire, rc.requestLine.seq, rc.responseLine.seq);
        const text = agentText(turn);
        t.diagnostic(`/compact turn: ${turn.map(label).join(", ")}, RESPONSE; text ${JSON.stringify(text)}`);
        assert.match(text, /Compacting the conversation/);
        assert.match(text, /Compacted the conversation/);
        assert.ok(turn.some((l) => kind(l) === "usage_update"), "usage_update after the compaction");
        await checkWireAndDelivery(t, proc);
        return { sid };
      });
      // Gating is per connection, not per session (docs/design.md §7.2): a capable
      // client loading this session gets the entity.
      const r = await loadIn(t, store, live.sid, CAPABLE);
      const comp = r.replay.filter(isCompaction);
      assert.deepEqual(comp.map(label), ["compaction_update:completed"], "a capable connection gets the entity on replay");
    });
  });
}

// ---------------------------------------------------------------------------
// c. Automatic compaction

test("c. automatic compaction mid-turn: the entity sits between the tool result and the next agent text, before the response", async (t) => {
  await withStore(async (store) => {
    const live = await withAgent(t, { store, args: ["--auto-compact-tokens", AUTO_MID_TURN] }, async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      const r1 = await proc.prompt(sid, P1);
      assert.equal(r1.response.stopReason, "end_turn");
      const r2 = await proc.prompt(sid, ECHO);
      assert.equal(r2.response.stopReason, "end_turn");
      await proc.settle();

      const wire = proc.wireUpdates(sid);
      assert.deepEqual(
        between(wire, 0, r2.requestLine.seq).filter(isCompaction).map((l) => l.raw),
        [],
        "no compaction in turn 1",
      );
      const turn = between(wire, r2.requestLine.seq, r2.responseLine.seq);
      const order = turn.map(label);
      t.diagnostic(`echo turn: ${order.join(", ")}, RESPONSE`);
      assert.equal(between(wire, r2.responseLine.seq).filter(isCompaction).length, 0, "no compaction update after the response");

      const comp = turn.filter(isCompaction);
      const ids = new Set(comp.map(idOf));
      assert.equal(ids.size, 1, "exactly one automatic compaction in the turn");
      const { updates, terminal } = checkLifecycle(wire, [...ids][0]);
      assert.equal(upd(updates[0]).status, "in_progress");
      assert.equal(upd(terminal).status, "completed");
      const toolUpdate = turn.findIndex((l) => kind(l) === "tool_call_update");
      assert.ok(toolUpdate >= 0, "tool_call_update");
      assert.equal(upd(turn[toolUpdate]).status, "completed");
      const nextText = turn.findIndex((l, i) => i > toolUpdate && kind(l) === "agent_message_chunk");
      assert.ok(nextText >= 0, "agent text after the tool result");
      assert.ok(
        toolUpdate < turn.indexOf(comp[0]) && turn.indexOf(comp.at(-1)) < nextText,
        `the compaction must lie between the tool_call_update and the next agent_message_chunk: ${order.join(", ")}`,
      );

      const view = liveTimeline(proc, sid).view();
      assert.deepEqual(
        view.map((i) => i.kind),
        ["user", "agent", "user", "agent", "tool", "compaction", "agent"],
        "timeline: the entity at the checkpoint, the later agent text after it",
      );
      assert.equal(view[5].status, "completed");
      assert.ok(view[5].summary.length > 0);
      assert.match(view[6].text, /echo returned: hi/);
      await checkWireAndDelivery(t, proc);
      return { sid, view };
    });
    // A replay in a new process puts the entity at the same checkpoint.
    const r = await loadIn(t, store, live.sid, CAPABLE);
    t.diagnostic(`replay: ${r.labels.join(", ")}, RESPONSE`);
    assert.deepEqual(stripIds(r.tl.view()), stripIds(withoutCommands(live.view)), "the replayed timeline equals the live one");
  });
});

test("c2. automatic compaction at the end of a turn is reported before that turn's response", async (t) => {
  await withAgent(t, { args: ["--auto-compact-tokens", AUTO_END_OF_TURN] }, async (proc) => {
    await proc.initialize(CAPABLE);
    const sid = await proc.newSession();
    const r1 = await proc.prompt(sid, P1);
    assert.equal(r1.response.stopReason, "end_turn");
    await proc.settle();
    const wire = proc.wireUpdates(sid);
    const turn = between(wire, r1.requestLine.seq, r1.responseLine.seq);
    t.diagnostic(`turn: ${turn.map(label).join(", ")}, RESPONSE`);
    const comp = wire.filter(isCompaction);
    assert.equal(new Set(comp.map(idOf)).size, 1, "one automatic compaction");
    for (const l of comp) assert.ok(l.seq < r1.responseLine.seq, `after the response: ${l.raw}`);
    const { terminal } = checkLifecycle(wire, idOf(comp[0]));
    assert.equal(upd(terminal).status, "completed");
    const lastText = turn.findLastIndex((l) => kind(l) === "agent_message_chunk");
    assert.ok(lastText < turn.indexOf(comp[0]), "the compaction follows the turn's text");
    assert.ok(between(turn, terminal.seq).some((l) => kind(l) === "usage_update"), "usage_update after the compaction");
    await checkWireAndDelivery(t, proc);
  });
});

// ---------------------------------------------------------------------------
// d. Cancelling a compaction in flight

/** Sends session/cancel once the compaction is in progress; returns the turn. */
async function cancelDuringCompaction(t, proc, sid, promptText) {
  const pending = proc.startPrompt(sid, promptText);
  const started = await proc.waitFor(
    () => proc.wireUpdates(sid).find((l) => label(l) === "compaction_update:in_progress"),
    "compaction_update in_progress",
  );
  const cancelledAt = Date.now();
  await proc.agent.notify(acp.methods.agent.session.cancel, { sessionId: sid });
  const rc = await pending;
  const took = Date.now() - cancelledAt;
  t.diagnostic(`prompt resolved ${took} ms after session/cancel`);
  assert.deepEqual(rc.response, { stopReason: "cancelled" });
  assert.ok(took < 4000, "the cancel interrupted the 5 s summary call");
  await proc.settle();

  const id = idOf(started);
  const wire = proc.wireUpdates(sid);
  const comp = wire.filter((l) => isCompaction(l) && idOf(l) === id);
  t.diagnostic(`entity on the wire: ${comp.map(label).join(", ")}`);
  assert.deepEqual(comp.map(label), ["compaction_update:in_progress", "compaction_update:cancelled"]);
  checkLifecycle(wire, id);
  const terminal = comp[1];
  assert.ok(terminal.seq < rc.responseLine.seq, "the terminal update precedes the prompt response");
  assert.ok("summary" in upd(terminal) && upd(terminal).summary === null, `cancelled carries "summary": null: ${terminal.raw}`);
  assert.ok(!("error" in upd(terminal)), "cancelled carries no error");
  assert.equal(wire.filter(isCompaction).length, 2, "no other compaction update on the connection");
  const e = liveTimeline(proc, sid).entities.get(id);
  assert.equal(e.status, "cancelled");
  assert.deepEqual(e.summary, []);
  return rc;
}

test("d. session/cancel during /compact: stopReason cancelled, entity ends cancelled (summary null) before the response", async (t) => {
  await withStore(async (store) => {
    const live = await withAgent(t, { store, args: ["--summary-delay", "5s"] }, async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      await proc.prompt(sid, P1);
      await proc.prompt(sid, P2);
      await cancelDuringCompaction(t, proc, sid, "/compact");
      // The session still works after the cancelled compaction.
      const r = await proc.prompt(sid, "Are you still there?");
      assert.equal(r.response.stopReason, "end_turn");
      await checkWireAndDelivery(t, proc);
      return { sid, view: liveTimeline(proc, sid).view() };
    });
    // Replay in a new process: the entity once, in its live final state.
    const r = await loadIn(t, store, live.sid, CAPABLE);
    t.diagnostic(`replay: ${r.labels.join(", ")}, RESPONSE`);
    assert.deepEqual(stripIds(r.tl.view()), stripIds(withoutCommands(live.view)), "the replayed timeline equals the live one");
  });
});

test("d2. session/cancel during an automatic compaction mid-turn: the turn and the entity end cancelled", async (t) => {
  await withAgent(t, { args: ["--auto-compact-tokens", AUTO_MID_TURN, "--summary-delay", "5s"] }, async (proc) => {
    await proc.initialize(CAPABLE);
    const sid = await proc.newSession();
    await proc.prompt(sid, P1);
    const rc = await cancelDuringCompaction(t, proc, sid, ECHO);
    const turn = between(proc.wireUpdates(sid), rc.requestLine.seq, rc.responseLine.seq);
    t.diagnostic(`echo turn: ${turn.map(label).join(", ")}, RESPONSE`);
    assert.ok(turn.some((l) => kind(l) === "tool_call_update"), "the tool ran before the checkpoint");
    await checkWireAndDelivery(t, proc);
  });
});

// A protocol-level $/cancel_request for the session/prompt that runs a
// compaction (what the SDK sends when a request's cancellationSignal aborts):
// the entity's terminal `cancelled` update still precedes the prompt's
// response (docs/design.md §7.3).
test(
  "d3. $/cancel_request on the /compact prompt: the terminal update precedes the prompt's response",
  async (t) => {
    await withAgent(t, { args: ["--summary-delay", "5s"], noTranscript: true }, async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      await proc.prompt(sid, P1);
      await proc.prompt(sid, P2);
      const abort = new AbortController();
      const pending = proc.agent.request(
        acp.methods.agent.session.prompt,
        { sessionId: sid, prompt: [{ type: "text", text: "/compact" }] },
        { cancellationSignal: abort.signal },
      );
      const started = await proc.waitFor(
        () => proc.wireUpdates(sid).find((l) => label(l) === "compaction_update:in_progress"),
        "compaction_update in_progress",
      );
      abort.abort();
      const outcome = await pending.then(
        (r) => `result ${JSON.stringify(r)}`,
        (e) => `error ${e.code}`,
      );
      const id = idOf(started);
      const terminal = await proc.waitFor(
        () => proc.wireUpdates(sid).find((l) => idOf(l) === id && TERMINAL.has(upd(l).status)),
        "the terminal update",
      );
      await proc.settle();
      const req = proc.outgoingRequest("session/prompt", (p) => p?.prompt?.[0]?.text === "/compact");
      const response = proc.responseTo(req.msg.id);
      t.diagnostic(`prompt outcome: ${outcome}; wire:\n${proc.transcript(req.seq)}`);
      assert.equal(upd(terminal).status, "cancelled");
      assert.ok(terminal.seq < response.seq, "the terminal compaction_update must come before the session/prompt response");
      await checkWireAndDelivery(t, proc);
    });
  },
);

// ---------------------------------------------------------------------------
// e. Replay with session/load in new processes

test("e. replay: session/load in new processes replays the entity once, terminal, same summary; gated per connection", async (t) => {
  await withStore(async (store) => {
    // Process 1: the live flow of (a), then killed.
    const live = await withAgent(t, { store, kill: true }, async (proc) => {
      const { sid, rc } = await compactFlow(proc);
      assert.equal(rc.response.stopReason, "end_turn");
      await checkWireAndDelivery(t, proc);
      return { sid, view: liveTimeline(proc, sid).view() };
    });
    const liveEntity = live.view.find((i) => i.kind === "compaction");
    assert.equal(liveEntity.status, "completed");

    // Process 2: a capable client loads the session.
    const r2 = await loadIn(t, store, live.sid, CAPABLE);
    t.diagnostic(`replay: ${r2.labels.join(", ")}, RESPONSE`);
    const comp = r2.replay.filter(isCompaction);
    assert.equal(comp.length, 1, "the compaction appears exactly once in the replay");
    assert.equal(label(comp[0]), "compaction_update:completed", "replay uses the terminal, materialized form");
    assert.ok(!r2.labels.includes("compaction_update:in_progress"), "no in_progress in the replay");
    assert.ok(!r2.labels.includes("compaction_summary_chunk"), "no chunks in the replay");
    const replayView = r2.tl.view();
    const replayEntity = replayView.find((i) => i.kind === "compaction");
    assert.equal(replayEntity.summary, liveEntity.summary, "the replayed summary equals the live final summary");
    assert.equal(replayEntity.error, liveEntity.error);
    const userChunks = r2.replay.filter((l) => kind(l) === "user_message_chunk").map((l) => textOf([upd(l).content]));
    assert.deepEqual(userChunks, [P1, P2], "every user message once, in order");
    // Every message in order, the entity at its original position: the live
    // timeline minus the "/compact" prompt.
    assert.deepEqual(stripIds(replayView), stripIds(withoutCommands(live.view)), "the replayed timeline equals the live one");
    t.diagnostic(`replay compactionId ${replayEntity.id === liveEntity.id ? "equals" : "differs from"} the live one`);

    // Process 3: loading again gives the same reduced timeline.
    const r3 = await loadIn(t, store, live.sid, CAPABLE);
    assert.deepEqual(r3.tl.view(), replayView, "a second replay gives the same timeline");
    assert.deepEqual(r3.labels, r2.labels);

    // Process 4: a client without the capability loads the same session.
    const r4 = await loadIn(t, store, live.sid, {}, { followUp: true });
    assert.deepEqual(
      r4.all.filter(isCompaction).map((l) => l.raw),
      [],
      "compaction_* replayed to a client without the capability",
    );
    t.diagnostic(`non-capable replay: ${r4.labels.join(", ")}, RESPONSE`);
    assert.match(agentText(r4.replay), /Compacted the conversation/, "the compaction is replayed as agent text");
    t.diagnostic(`non-capable replay as a v1 client shows it: ${JSON.stringify(r4.tl.view().map((i) => i.text))}`);
  });
});

// ---------------------------------------------------------------------------
// f. Nothing to compact

test("f. /compact on a new session: 'Nothing to compact' as agent text, no entity", async (t) => {
  await withStore(async (store) => {
    const live = await withAgent(t, { store }, async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      const rc = await proc.prompt(sid, "/compact");
      assert.deepEqual(rc.response, { stopReason: "end_turn" });
      await proc.settle();
      const wire = proc.wireUpdates(sid);
      assert.deepEqual(
        wire.filter(isCompaction).map((l) => l.raw),
        [],
        "no compaction entity for nothing_to_compact",
      );
      const text = agentText(between(wire, rc.requestLine.seq, rc.responseLine.seq));
      t.diagnostic(`agent text: ${JSON.stringify(text)}`);
      assert.match(text, /Nothing to compact/);
      await checkWireAndDelivery(t, proc);
      return { sid, text };
    });
    const r = await loadIn(t, store, live.sid, CAPABLE);
    assert.deepEqual(
      r.replay.filter(isCompaction).map((l) => l.raw),
      [],
      "no compaction entity in the replay",
    );
    const replayed = agentText(r.replay);
    t.diagnostic(`replayed text: ${JSON.stringify(replayed)}`);
    assert.match(replayed, /Nothing to compact/);
  });
});

// ---------------------------------------------------------------------------
// g. Errors

test("g. bad input gets JSON-RPC errors and the connection keeps working", async (t) => {
  // Version negotiation (§7.1): a later version asked for, the highest the
  // agent supports (2) answered. The connection then speaks v2 (see
  // interop-v2.test.mjs), so the rest of this test runs on a v1 connection.
  await withAgent(t, {}, async (proc) => {
    const init = await proc.request(acp.methods.agent.initialize, { protocolVersion: 99, clientCapabilities: CAPABLE });
    assert.equal(init.protocolVersion, 2);
  });
  await withAgent(t, {}, async (proc) => {
    // A request before initialize.
    await assert.rejects(proc.agent.request(acp.methods.agent.session.new, { cwd: "/", mcpServers: [] }), (err) => {
      t.diagnostic(`session/new before initialize -> ${err.code} ${err.message}`);
      assert.equal(err.code, -32600);
      return true;
    });
    const init = await proc.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: CAPABLE });
    assert.equal(init.protocolVersion, 1);
    const sid = await proc.newSession();

    // A cwd that is not an absolute, existing directory: -32602 naming it
    // (a session without its workspace tools would answer as if it had them).
    for (const cwd of ["relative/dir", join(tmpdir(), "sessionkit-interop-no-such-dir")]) {
      await assert.rejects(proc.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }), (err) => {
        t.diagnostic(`session/new with cwd ${cwd} -> ${err.code} ${err.message}`);
        assert.equal(err.code, -32602);
        assert.ok(err.message.includes(cwd), err.message);
        return true;
      });
    }

    // Malformed JSON, written raw: -32700 with id null.
    const mark = proc.lines.at(-1).seq;
    await proc.sendRaw('{"jsonrpc":"2.0","id":"raw-1","method":"session/prompt","params":{"sessionId":');
    const parseErr = await proc.waitFor(() => between(proc.incoming(), mark).find((l) => l.msg?.error), "the parse error response");
    t.diagnostic(`malformed JSON -> ${parseErr.raw}`);
    assert.equal(parseErr.msg.error.code, -32700);
    assert.equal(parseErr.msg.id, null);

    // Unknown methods: a protocol-looking one and an extension one.
    for (const method of ["session/frobnicate", "_example/unknown"]) {
      await assert.rejects(proc.agent.request(method, {}), (err) => {
        assert.ok(err instanceof acp.RequestError, `not a RequestError: ${err}`);
        assert.equal(err.code, -32601, `${method}: ${err.message}`);
        return true;
      });
    }

    // session/prompt for a session that does not exist.
    await assert.rejects(
      proc.agent.request(acp.methods.agent.session.prompt, { sessionId: "no-such-session", prompt: [{ type: "text", text: "hi" }] }),
      (err) => {
        assert.ok(err instanceof acp.RequestError);
        t.diagnostic(`unknown session -> ${err.code} ${err.message}`);
        assert.equal(err.code, -32002, "Resource not found");
        return true;
      },
    );

    // Wrong parameter types.
    await assert.rejects(proc.agent.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: "not an array" }), (err) => {
      t.diagnostic(`prompt of the wrong type -> ${err.code} ${err.message}`);
      assert.equal(err.code, -32602);
      return true;
    });

    // An oversized line (over the agent's 8 MiB limit), written raw.
    const mark2 = proc.lines.at(-1).seq;
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: "big-1",
      method: "session/prompt",
      params: { sessionId: sid, prompt: [{ type: "text", text: "x".repeat(9 << 20) }] },
    });
    await proc.sendRaw(big);
    const bigErr = await proc.waitFor(() => between(proc.incoming(), mark2).find((l) => l.msg?.error), "the oversized-line error");
    t.diagnostic(`9 MiB line -> ${bigErr.raw}`);
    assert.ok([-32600, -32700].includes(bigErr.msg.error.code), bigErr.raw);
    assert.equal(between(proc.incoming(), mark2).filter((l) => l.msg?.method === "session/update").length, 0, "no turn ran for the oversized prompt");

    // The connection and the session still work.
    const r = await proc.prompt(sid, "I am still here.");
    assert.equal(r.response.stopReason, "end_turn");
    assert.match(agentText(between(proc.wireUpdates(sid), r.requestLine.seq, r.responseLine.seq)), /Noted: I am still here\./);
    await checkWireAndDelivery(t, proc);
  });
});

// ---------------------------------------------------------------------------
// h. The _sessionkit/compact extension: a compaction outside any prompt

test("h. _sessionkit/compact on an idle session: the entity arrives outside a prompt, then _sessionkit/compact_finished", async (t) => {
  await withAgent(t, {}, async (proc) => {
    await proc.initialize(CAPABLE);
    const sid = await proc.newSession();
    await proc.prompt(sid, P1);
    await proc.prompt(sid, P2);
    const accepted = await proc.agent.request("_sessionkit/compact", { sessionId: sid });
    assert.equal(typeof accepted.compactId, "string");
    const finished = await proc.waitFor(
      () => proc.extNotifications.find((n) => n.method === "_sessionkit/compact_finished"),
      "_sessionkit/compact_finished",
    );
    await proc.settle();
    assert.equal(finished.params.sessionId, sid);
    assert.equal(finished.params.compactId, accepted.compactId);
    assert.equal(finished.params.result.compacted, true);
    const wire = proc.wireUpdates(sid);
    const { terminal } = checkLifecycle(wire, accepted.compactId);
    assert.equal(upd(terminal).status, "completed");
    // The result's summary (result.segment.summary; older builds: result.summary).
    const result = finished.params.result;
    const resultSummary = result.segment?.summary ?? result.summary;
    assert.equal(textOf(upd(terminal).summary), resultSummary, "the entity's summary is the result's summary");
    const finishedLine = proc.incoming().find((l) => l.msg?.method === "_sessionkit/compact_finished");
    assert.ok(terminal.seq < finishedLine.seq, "the terminal update comes before compact_finished");
    await checkWireAndDelivery(t, proc);
  });
});

// ---------------------------------------------------------------------------
// Totals over every scenario (runs last: tests in a file run in order)

// ---------------------------------------------------------------------------
// i. The v1 session methods and the one-writer ACP session

test("i1. session/list, session/resume and session/close through the SDK", async (t) => {
  await withStore(async (store) => {
    // Real directories: a cwd that does not exist is refused (-32602).
    const [dirA, dirB] = [mkdtempSync(join(tmpdir(), "sessionkit-a-")), mkdtempSync(join(tmpdir(), "sessionkit-b-"))];
    t.after(() => {
      rmSync(dirA, { recursive: true, force: true });
      rmSync(dirB, { recursive: true, force: true });
    });
    const { kept } = await withAgent(t, { store }, async (proc) => {
      const init = await proc.initialize(CAPABLE);
      for (const k of ["list", "resume", "close"]) {
        assert.deepEqual(init.agentCapabilities.sessionCapabilities?.[k], {}, `sessionCapabilities.${k} advertised`);
      }
      const closed = await proc.newSession(dirA);
      await proc.prompt(closed, "First session.\nMore detail here.");
      const kept = await proc.newSession(dirB);
      await proc.prompt(kept, P1);

      const all = await proc.request(acp.methods.agent.session.list, {});
      t.diagnostic(`session/list: ${JSON.stringify(all)}`);
      assert.deepEqual(all.sessions.map((s) => s.sessionId), [kept, closed], "newest first");
      assert.equal(all.sessions[1].title, "First session.", "titled after the first line of the first prompt");
      assert.equal(all.sessions[1].cwd, dirA);
      assert.ok(all.sessions.every((s) => typeof s.updatedAt === "string" && !Number.isNaN(Date.parse(s.updatedAt))), "updatedAt is ISO 8601");
      assert.ok(all.nextCursor == null, "one page");
      const inA = await proc.request(acp.methods.agent.session.list, { cwd: dirA });
      assert.deepEqual(inA.sessions.map((s) => s.sessionId), [closed]);
      const titled = proc.wireUpdates(closed).find((l) => kind(l) === "session_info_update");
      assert.ok(titled && upd(titled).title === "First session.", "session_info_update carries the title");

      const res = await proc.request(acp.methods.agent.session.close, { sessionId: closed });
      assert.deepEqual(res, {});
      await assert.rejects(proc.prompt(closed, "still there?"), (err) => err.code === -32002, "a closed session is unknown");
      await checkWireAndDelivery(t, proc);
      return { kept };
    });
    // A new process resumes the other session without a replay.
    await withAgent(t, { store }, async (proc) => {
      await proc.initialize(CAPABLE);
      const req = proc.request(acp.methods.agent.session.resume, { sessionId: kept, cwd: dirB });
      await req;
      const resumeLine = proc.outgoingRequest("session/resume");
      const respLine = proc.responseTo(resumeLine.msg.id);
      assert.deepEqual(between(proc.wireUpdates(kept), resumeLine.seq, respLine.seq).map(kind), [], "nothing replayed before the session/resume response");
      const r = await proc.prompt(kept, P2);
      assert.equal(r.response.stopReason, "end_turn");
      const turn = between(proc.wireUpdates(kept), r.requestLine.seq, r.responseLine.seq);
      assert.ok(!turn.some((l) => kind(l) === "user_message_chunk"), "no replay after the resume either");
      await checkWireAndDelivery(t, proc);
    });
  });
});

test("i2. session/load while a compaction runs, same connection: replayed in progress, then exactly one terminal status", async (t) => {
  await withAgent(t, { args: ["--summary-delay", "1s"] }, async (proc) => {
    await proc.initialize(CAPABLE);
    const sid = await proc.newSession();
    await proc.prompt(sid, P1);
    await proc.prompt(sid, P2);
    const pending = proc.startPrompt(sid, "/compact");
    const started = await proc.waitFor(
      () => proc.wireUpdates(sid).find((l) => label(l) === "compaction_update:in_progress"),
      "compaction_update in_progress",
    );
    const rl = await proc.loadSession(sid);
    const replay = between(proc.wireUpdates(sid), rl.requestLine.seq, rl.responseLine.seq);
    t.diagnostic(`replay: ${replay.map(label).join(", ")}, RESPONSE`);
    const id = idOf(started);
    assert.deepEqual(replay.filter((l) => isCompaction(l)).map(label), ["compaction_update:in_progress"], "the running compaction is replayed in progress");
    assert.equal(idOf(replay.find(isCompaction)), id);
    const rc = await pending;
    assert.equal(rc.response.stopReason, "end_turn");
    await proc.settle();
    const mine = proc.wireUpdates(sid).filter((l) => isCompaction(l) && idOf(l) === id);
    t.diagnostic(`entity ${id}: ${mine.map(label).join(", ")}`);
    const terminals = mine.filter((l) => kind(l) === "compaction_update" && TERMINAL.has(upd(l).status));
    assert.deepEqual(terminals.map(label), ["compaction_update:completed"], "exactly one terminal status for the compaction");
    assert.equal(mine.at(-1), terminals[0], "nothing follows it");
    assert.ok(terminals[0].seq < rc.responseLine.seq, "before the /compact response");
    await checkWireAndDelivery(t, proc);
  });
});

/** A local OpenAI-compatible server: the first request is refused (401), later ones stream "reply N". */
async function refusingModelServer() {
  let n = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      n++;
      if (n === 1) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta, finish) => ({ id: `c${n}`, object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
      res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: `reply ${n - 1}` }, null))}\n\n`);
      res.write(`data: ${JSON.stringify({ ...chunk({}, "stop"), usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${server.address().port}/v1` };
}

test("i3. a prompt after a failed prompt is answered in order, each turn's text before its response", async (t) => {
  const { server, url } = await refusingModelServer();
  try {
    await withAgent(t, { env: { OPENAI_BASE_URL: url, OPENAI_API_KEY: "test-key" } }, async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      await assert.rejects(proc.prompt(sid, "first"), (err) => err.code === -32603, "the refused turn is an internal error");
      const started = Date.now();
      const r2 = await proc.prompt(sid, "second");
      const r3 = await proc.prompt(sid, "third");
      t.diagnostic(`two prompts after the failed one answered in ${Date.now() - started} ms`);
      for (const [r, text] of [[r2, "reply 1"], [r3, "reply 2"]]) {
        assert.equal(r.response.stopReason, "end_turn");
        const turn = between(proc.wireUpdates(sid), r.requestLine.seq, r.responseLine.seq).filter((l) => kind(l) === "agent_message_chunk");
        assert.equal(turn.map((l) => upd(l).content.text).join(""), text, "the turn's text arrives before its response");
      }
      await checkWireAndDelivery(t, proc);
    });
  } finally {
    server.close();
  }
});

test("i4. a client that stops reading during a long summary stream, then reads again, gets every message and every terminal update", async (t) => {
  await withStore(async (store) => {
    const live = await withAgent(t, { store, args: ["--offline-delta-size", "1"] }, async (proc) => {
      await proc.initialize(CAPABLE);
      const sid = await proc.newSession();
      for (let i = 0; i < 6; i++) await proc.prompt(sid, `${P1} (round ${i})`);
      const before = proc.incoming().length;
      proc.child.stdout.pause(); // the client stops reading; the agent's writes block
      // A tool call with 300 KB of text, far more than the pipe holds, so
      // that the agent's writes block for sure; then /compact, whose summary
      // streams while they do.
      const after = proc.startPrompt(sid, `please call echo with text: ${"lorem ipsum ".repeat(25000)}`);
      const compact = proc.startPrompt(sid, "/compact");
      await new Promise((r) => setTimeout(r, 500));
      t.diagnostic(`lines read while paused: ${proc.incoming().length - before}`);
      proc.child.stdout.resume();
      const [ra, rc] = await Promise.all([after, compact]);
      assert.equal(rc.response.stopReason, "end_turn");
      assert.equal(ra.response.stopReason, "end_turn");
      await proc.settle();
      const wire = proc.wireUpdates(sid);
      const ids = [...new Set(wire.filter(isCompaction).map(idOf))];
      assert.equal(ids.length, 1, "one compaction");
      checkLifecycle(wire, ids[0]);
      await checkWireAndDelivery(t, proc);
      // Two prompts were sent back to back: "/compact" (a command, not a
      // message) is left out before the client's prompts are merged in.
      return { sid, view: liveTimeline(proc, sid, { commands: false }).view() };
    });
    // What the lagging client was sent equals the stored timeline: every
    // agent message whole, the compaction once, in order. (The client shows
    // its own prompts where it sent them; a prompt sent while the
    // compaction was queued stands after it in the store.)
    const r = await loadIn(t, store, live.sid, CAPABLE);
    const agentSide = (view) => stripIds(view).filter((i) => i.kind !== "user");
    const users = (view) => view.filter((i) => i.kind === "user").map((i) => i.text).sort();
    assert.deepEqual(agentSide(r.tl.view()), agentSide(live.view), "the lagging client's agent messages and compaction equal the replayed ones");
    assert.deepEqual(users(r.tl.view()), users(live.view), "and the same prompts");
  });
});

test("wire totals: every session/update valid for the SDK's v1 schema, all delivered", (t) => {
  t.diagnostic(
    `agent processes ${totals.processes}; session/update on the wire ${totals.wireUpdates}, delivered ${totals.deliveredUpdates}, ` +
      `invalid ${totals.invalid.length}, wire-rule violations ${totals.violations.length}, ` +
      `arrived after the client closed ${totals.afterClose}`,
  );
  assert.ok(totals.wireUpdates > 0);
  assert.deepEqual(totals.invalid, [], "invalid session/update notifications");
  assert.deepEqual(totals.violations, [], "wire-rule violations");
  assert.equal(totals.deliveredUpdates, totals.wireUpdates);
  assert.deepEqual(totals.sdkErrors, [], "the SDK logged dropped notifications");
  // Expected SDK log lines: the responses to the raw lines of (g), which the
  // SDK did not send (the -32700 one has id null).
  const unexpected = sdkLog.filter((l) => !/^Got response to unknown request (null|big-1)$/.test(l));
  assert.deepEqual(unexpected, [], "unexpected SDK log lines");
});
