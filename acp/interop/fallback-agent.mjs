// A small third-party ACP v1 agent, built on the official TypeScript SDK
// (@agentclientprotocol/sdk, agent-side app API), that offers manual
// compaction only as the `/compact` slash command: no `_sessionkit/compact`
// extension, no `_meta.sessionkit` capability. The Go client's RemoteSession
// must fall back to sending `/compact` as a prompt and finish its Handle from
// the terminal `compaction_update` (docs/design.md §8); acp/fallback_node_test.go
// drives it that way.
//
//   node fallback-agent.mjs [--commands-delay-ms=N]
//
// speaks ACP over stdin/stdout and logs to stderr. The command list is sent
// right after the session/new response, or N ms after it (the Go test asks
// for a delay to sidestep a client race; see there).
//
// Behaviour, per session:
//   - a normal prompt gets "echo: <text>" as two agent_message_chunk updates;
//   - `/compact` with fewer than 2 earlier (non-command) prompts gets the text
//     "Nothing to compact." (no compaction entity);
//   - otherwise, for a client that advertised `session.compaction` as an
//     object: compaction_update in_progress, two compaction_summary_chunk,
//     then one terminal compaction_update (a client without the capability
//     gets the summary as agent text);
//   - `/compact fail` ends `failed` (error "summary model unavailable");
//   - `/compact slow` waits up to 10 s; a session/cancel meanwhile ends it
//     `cancelled` and the prompt with stopReason "cancelled".
// Every update of a prompt is written before that prompt's response.

import { Readable, Writable } from "node:stream";
import { randomUUID } from "node:crypto";
import * as acp from "@agentclientprotocol/sdk";

const log = (...args) => console.error("[fallback-agent]", ...args);
log("started, pid", process.pid);

const commandsDelayMs = Number(/^--commands-delay-ms=(\d+)$/.exec(process.argv[2] ?? "")?.[1] ?? 0);
let compactionCapable = false; // from initialize, for the whole connection
const sessions = new Map(); // sessionId -> {prompts: string[] (earlier prompts), abort: AbortController (of the current prompt)}

const update = (client, sessionId, u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
const say = (client, sessionId, text) => update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });

/** Resolves to true after ms, or to false as soon as signal aborts. */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => resolve(true), ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), resolve(false)), { once: true });
  });
}

async function compact(client, sessionId, s, instructions) {
  if (s.prompts.length < 2) {
    await say(client, sessionId, "Nothing to compact.");
    return "end_turn";
  }
  const summary = `Earlier: ${s.prompts.join(" | ")}`;
  if (!compactionCapable) {
    // docs/design.md §7.2: a client without the capability gets plain text.
    await say(client, sessionId, `Compacted the conversation. ${summary}`);
    return "end_turn";
  }
  const compactionId = randomUUID();
  const status = (status, more = {}) => update(client, sessionId, { sessionUpdate: "compaction_update", compactionId, status, ...more });
  const chunk = (text) => update(client, sessionId, { sessionUpdate: "compaction_summary_chunk", compactionId, content: { type: "text", text } });

  await status("in_progress");
  if (instructions === "slow" && !(await sleep(10_000, s.abort.signal))) {
    await status("cancelled", { summary: null });
    return "cancelled";
  }
  if (instructions === "fail") {
    await status("failed", { summary: null, error: "summary model unavailable" });
    return "end_turn";
  }
  await chunk("Earlier: ");
  await chunk(s.prompts.join(" | "));
  await status("completed", { summary: [{ type: "text", text: summary }] });
  return "end_turn";
}

const app = acp
  .agent({ name: "fallback-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    const c = params.clientCapabilities?.session?.compaction;
    compactionCapable = typeof c === "object" && c !== null && !Array.isArray(c);
    log("initialize: compaction capability", compactionCapable);
    return {
      protocolVersion: 1,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "fallback-agent", version: "0.0.0" },
      authMethods: [],
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ client }) => {
    const sessionId = randomUUID();
    sessions.set(sessionId, { prompts: [], abort: new AbortController() });
    // After the response (a timer runs after it is written): a client knows
    // the session only once it has the ID.
    const commands = [{ name: "compact", description: "Summarize the conversation so far", input: { hint: "instructions" } }];
    const advertise = () =>
      update(client, sessionId, { sessionUpdate: "available_commands_update", availableCommands: commands }).catch((err) =>
        log("available_commands_update not sent:", err.message),
      );
    setTimeout(advertise, commandsDelayMs);
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.resourceNotFound(params.sessionId);
    s.abort = new AbortController(); // before any await: a session/cancel right after the prompt reaches it
    const text = params.prompt
      .filter((b) => b.type === "text")
      .map((b) => b.text)
      .join("")
      .trim();
    const cmd = /^\/compact(?:\s+(.*))?$/s.exec(text);
    if (cmd) return { stopReason: await compact(client, params.sessionId, s, (cmd[1] ?? "").trim()) };
    s.prompts.push(text);
    await say(client, params.sessionId, "echo: ");
    await say(client, params.sessionId, text);
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    log("session/cancel", params.sessionId);
    sessions.get(params.sessionId)?.abort.abort();
  });

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
conn.closed.then(
  () => process.exit(0),
  (err) => {
    log("connection failed:", err?.message ?? err);
    process.exit(1);
  },
);
