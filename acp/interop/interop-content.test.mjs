// Interop tests of prompt content (docs/acp.md, "Prompt content"): the
// sessionkit ACP agent (examples/acp-agent) with its OpenAI-compatible
// provider pointed at a local fake model server that records every request
// body, against the official TypeScript SDK's clients (v1 and
// experimental/v2). A prompt with a resource_link to a file of the session's
// directory, an embedded resource and an image reaches the model request as
// text where each stands (the link with the offer to read it with
// read_file) and an image_url part; session/load (v1) and session/resume
// with replay (v2) in a fresh process give the blocks back as they were
// sent. Every raw line is validated with the SDK's zod validators (the
// harnesses'); with the offline provider no image is advertised or taken.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { acp, buildAgent, cleanupBuild, startAgent, tempStore, totals, zContentBlock, zSessionNotification } from "./harness.mjs";
import { acp2, V2Agent, v2Client, V2_INIT, v2totals, z2 } from "./harness-v2.mjs";

before(() => {
  buildAgent();
});
after(() => {
  cleanupBuild();
});

const PNG = Buffer.from("\x89PNG\r\n\x1a\n not really an image", "latin1").toString("base64");

/** The prompt's blocks: text, a link into dir, text, an embedded resource, an image. */
function blocks(dir) {
  return [
    { type: "text", text: "Compare " },
    { type: "resource_link", name: "main.go", uri: `file://${dir}/main.go`, mimeType: "text/x-go", description: "the entry point" },
    { type: "text", text: " with the notes." },
    { type: "resource", resource: { uri: `file://${dir}/NOTES.md`, mimeType: "text/markdown", text: "# Notes\nkeep tabs" } },
    { type: "image", mimeType: "image/png", data: PNG },
  ];
}

/** A local OpenAI-compatible server that records request bodies and streams "reply N". */
async function recordingModelServer() {
  const bodies = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      bodies.push(JSON.parse(body));
      const n = bodies.length;
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta, finish) => ({ id: `c${n}`, object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
      res.write(`data: ${JSON.stringify(chunk({ role: "assistant", content: `reply ${n}` }, null))}\n\n`);
      res.write(`data: ${JSON.stringify({ ...chunk({}, "stop"), usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, bodies, env: { OPENAI_BASE_URL: `http://127.0.0.1:${server.address().port}/v1`, OPENAI_API_KEY: "test-key" } };
}

/** Checks that the last user message of a Chat Completions body carries the prompt. */
function checkModelSaw(body, dir) {
  const user = body.messages.filter((m) => m.role === "user").at(-1);
  assert.ok(Array.isArray(user.content), `an image makes the content a list of parts: ${JSON.stringify(user.content)}`);
  assert.deepEqual(user.content.map((p) => p.type), ["text", "image_url"]);
  const text = user.content[0].text;
  assert.ok(text.startsWith("Compare \n[main.go](file://"), text);
  assert.ok(text.includes(`[main.go](file://${dir}/main.go) (text/x-go)\nthe entry point\n`), "the link: name, URI, type, description");
  assert.ok(text.includes(`read it with the read_file tool (path ${JSON.stringify(join(dir, "main.go"))})`), `the offer to read the file: ${text}`);
  assert.ok(text.includes(` with the notes.\n<resource uri="file://${dir}/NOTES.md" mimeType="text/markdown">\n# Notes\nkeep tabs\n</resource>`), `the resource where it stands: ${text}`);
  assert.equal(user.content[1].image_url.url, `data:image/png;base64,${PNG}`);
}

/** A fresh temp directory (the session's cwd) with main.go in it. */
function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "sk-content-"));
  writeFileSync(join(dir, "main.go"), "package main\n");
  return dir;
}

async function run(t, opts, fn) {
  const proc = await startAgent({ store: opts.store, env: opts.env ?? {} });
  try {
    return await fn(proc);
  } catch (err) {
    t.diagnostic(`wire transcript:\n${proc.transcript()}`);
    throw err;
  } finally {
    await proc.stop();
  }
}

/** The raw session/update lines of proc: valid for the SDK's v1 schema, each delivered. */
async function checkV1Lines(proc) {
  await proc.settle();
  const wire = proc.wireUpdates();
  assert.deepEqual(wire.filter((l) => !l.valid).map((l) => l.raw), [], "session/update lines the SDK's v1 schema rejects");
  assert.equal(proc.deliveredUpdates().length, wire.length, "the SDK delivered every session/update");
  for (let i = 0; i < wire.length; i++) assert.deepEqual(proc.deliveredUpdates()[i].params, zSessionNotification.parse(wire[i].msg.params));
}

test("content v1. a resource_link, an embedded resource and an image reach the model request; session/load replays them as sent", async (t) => {
  const model = await recordingModelServer();
  const store = tempStore();
  const dir = workspace();
  try {
    let sid;
    await run(t, { store: store.path, env: model.env }, async (proc) => {
      const init = await proc.initialize({});
      assert.deepEqual(init.agentCapabilities.promptCapabilities, { image: true, audio: false, embeddedContext: true }, "images advertised: the provider takes them");
      sid = await proc.newSession(dir);
      const r = await proc.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: blocks(dir) });
      assert.equal(r.stopReason, "end_turn");
      assert.equal(model.bodies.length, 1);
      checkModelSaw(model.bodies[0], dir);
      await checkV1Lines(proc);
    });
    await run(t, { store: store.path, env: model.env }, async (proc) => {
      await proc.initialize({});
      const rl = await proc.loadSession(sid, dir);
      await proc.settle();
      const replay = proc.wireUpdates(sid).filter((l) => l.seq > rl.requestLine.seq && l.seq < rl.responseLine.seq).map((l) => l.msg.params.update);
      const user = replay.filter((u) => u.sessionUpdate === "user_message_chunk");
      assert.deepEqual(user.map((u) => u.content), blocks(dir), "the user message is replayed block by block, as sent");
      assert.equal(new Set(user.map((u) => u.messageId)).size, 1, "one message");
      for (const u of user) assert.ok(zContentBlock.safeParse(u.content).success);
      assert.ok(replay.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "reply 1"));
      await checkV1Lines(proc);
    });
  } finally {
    model.server.close();
    store.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(totals.invalid, []);
});

test("content v1 offline. no image is advertised; an image block is refused with invalid params, a link and a resource are taken", async (t) => {
  const store = tempStore();
  const dir = workspace();
  try {
    await run(t, { store: store.path }, async (proc) => {
      const init = await proc.initialize({});
      assert.deepEqual(init.agentCapabilities.promptCapabilities, { image: false, audio: false, embeddedContext: true });
      const sid = await proc.newSession(dir);
      await assert.rejects(proc.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: blocks(dir) }), (err) => {
        assert.equal(err.code, -32602);
        assert.match(err.message, /item 4: content of type "image" is not supported by this agent: its model takes no images/);
        return true;
      });
      const r = await proc.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: blocks(dir).slice(0, 4) });
      assert.equal(r.stopReason, "end_turn");
      await checkV1Lines(proc);
    });
  } finally {
    store.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("content v2. the same prompt through the SDK's v2 client: the model request, the user_message echo, and session/resume with replay", async (t) => {
  const model = await recordingModelServer();
  const store = tempStore();
  const dir = workspace();
  const v2run = async (fn) => {
    const a = await V2Agent.start({ store: store.path, env: model.env });
    try {
      return await fn(a);
    } catch (err) {
      t.diagnostic(`wire transcript:\n${a.transcript()}`);
      throw err;
    } finally {
      await a.stop();
    }
  };
  try {
    let sid;
    await v2run(async (a) => {
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        const init = await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        assert.deepEqual(init.capabilities.session.prompt, { image: {}, embeddedContext: {} });
        await ctx.buildSession(dir).withSession(async (s) => {
          sid = s.sessionId;
          const r = await ctx.request(acp2.methods.agent.session.prompt, { sessionId: sid, prompt: blocks(dir) });
          assert.equal(typeof r.messageId, "string");
          const got = [];
          for (;;) {
            const m = await s.nextUpdate();
            got.push(m.update);
            if (m.kind === "stop") break;
          }
          const echo = got.find((u) => u.sessionUpdate === "user_message" && u.messageId === r.messageId);
          assert.deepEqual(echo?.content, blocks(dir), "the echo carries the blocks as sent");
        });
      });
      assert.equal(model.bodies.length, 1);
      checkModelSaw(model.bodies[0], dir);
    });
    await v2run(async (a) => {
      await v2Client().connectWith(a.sdkStream(), async (ctx) => {
        await ctx.request(acp2.methods.agent.initialize, V2_INIT);
        await ctx.request(acp2.methods.agent.session.resume, { sessionId: sid, cwd: dir, replayFrom: { type: "start" } });
      });
      const users = a.updates().filter((u) => u.sessionUpdate === "user_message");
      assert.equal(users.length, 1);
      assert.deepEqual(users[0].content, blocks(dir), "replayed as sent");
      for (const b of users[0].content) assert.ok(z2.zContentBlock.safeParse(b).success);
    });
  } finally {
    model.server.close();
    store.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(v2totals.invalid, [], "v2 lines the SDK's validators reject");
  assert.deepEqual(v2totals.sdkErrors, [], "notifications the SDK dropped");
});
