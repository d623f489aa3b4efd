// The peer side of the sessionkit peer benchmark: the same work as
// bench/peer/goworker on @mariozechner/pi-coding-agent (its SDK keeps a JSONL
// session file and compacts client-side, keeping recent messages by an
// estimated token budget). Prints one JSON line.
//
//   node worker.mjs --n 10000 --port 8931 --reps 5
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const rssAfterInitMB0 = process.resourceUsage().maxRSS / 1024;
const pi = await import("@mariozechner/pi-coding-agent");
const { AuthStorage, ModelRegistry, SessionManager, SettingsManager, createAgentSession } = pi;
const version = JSON.parse(readFileSync(new URL("./node_modules/@mariozechner/pi-coding-agent/package.json", import.meta.url), "utf8")).version;

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
const N = arg("n", 1000);
const PORT = arg("port", 8931);
const REPS = Math.max(1, arg("reps", 3));

const WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu"];
const role = (i) => (i % 2 === 0 ? "user" : "assistant");
function text(i) {
  let s = `${role(i)} message ${i}:`;
  let state = (i + 1) >>> 0;
  while (s.length < 500) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    s += " " + WORDS[(state >>> 16) % 26];
  }
  return s.slice(0, 500);
}

// Times the model HTTP request: from entering fetch to its return (headers),
// the counterpart of the Go worker's RoundTrip wrapper.
const http = { calls: 0, spent: 0, body: "", onEnter: null };
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const start = performance.now();
  if (http.onEnter) {
    const f = http.onEnter;
    http.onEnter = null;
    f(start);
  }
  const body = typeof init?.body === "string" ? init.body : "";
  try {
    return await realFetch(input, init);
  } finally {
    http.calls++;
    http.spent += performance.now() - start;
    http.body = body;
  }
};
function resetHTTP() {
  const r = { calls: http.calls, spent: http.spent, body: http.body };
  http.calls = 0;
  http.spent = 0;
  http.body = "";
  return r;
}
function armHTTP() {
  return new Promise((resolve) => {
    http.onEnter = resolve;
  });
}

const auth = AuthStorage.inMemory();
auth.setRuntimeApiKey("fake", "unused");
const registry = ModelRegistry.inMemory(auth);
registry.registerProvider("fake", {
  baseUrl: `http://127.0.0.1:${PORT}/v1`,
  apiKey: "unused",
  api: "openai-completions",
  models: [{ id: "fake-model", name: "fake-model", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 10_000_000, maxTokens: 4096 }],
});
const model = registry.find("fake", "fake-model");
if (!model) throw new Error("fake model not registered");

async function openSession(dir, sm) {
  const { session } = await createAgentSession({
    cwd: dir,
    agentDir: join(dir, "agent"),
    authStorage: auth,
    modelRegistry: registry,
    model,
    noTools: "all",
    sessionManager: sm,
    // Manual compaction only, as in the Go worker.
    settingsManager: SettingsManager.inMemory({ compaction: { enabled: false } }),
  });
  return session;
}

function assistant(t) {
  return {
    role: "assistant",
    content: [{ type: "text", text: t }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "stop",
    timestamp: Date.now(),
  };
}

async function rep(texts) {
  const dir = mkdtempSync(join(tmpdir(), "pi-peer-"));
  const sessionDir = join(dir, "sessions");
  const r = {};
  try {
    // (a) build: a new persistent session, N appends of one message.
    let start = performance.now();
    const sm = SessionManager.create(dir, sessionDir);
    for (let i = 0; i < texts.length; i++) {
      if (i % 2 === 0) sm.appendMessage({ role: "user", content: texts[i], timestamp: Date.now() });
      else sm.appendMessage(assistant(texts[i]));
    }
    r.build = performance.now() - start;
    const file = sm.getSessionFile();
    r.fileBytes = statSync(file).size;
    const copy = join(dir, "uncompacted.jsonl");
    copyFileSync(file, copy);

    // (b) compact: open untimed, time one compact() until it resolves.
    let session = await openSession(dir, SessionManager.open(file, sessionDir));
    resetHTTP();
    let entered = armHTTP();
    start = performance.now();
    await session.compact();
    r.e2e = performance.now() - start;
    r.prepare = (await Promise.race([entered, Promise.resolve(start)])) - start;
    const h = resetHTTP();
    r.model = h.spent;
    r.calls = h.calls;
    r.requestBytes = Buffer.byteLength(h.body);
    r.after = session.messages.length;
    session.dispose();

    // (c) reopen: a fresh session object on the file, context built.
    r.compacted = await reopen(dir, file, sessionDir);
    r.uncompacted = await reopen(dir, copy, sessionDir);
    r.storeCompacted = storeOnly(file, sessionDir);

    // resume to request: open, prompt("continue"), until fetch is entered.
    entered = armHTTP();
    start = performance.now();
    session = await openSession(dir, SessionManager.open(file, sessionDir));
    const done = session.prompt("continue");
    r.resume = (await entered) - start;
    await done;
    const body = resetHTTP().body;
    try {
      r.ctxMessages = JSON.parse(body).messages.length;
    } catch {
      r.ctxMessages = 0;
    }
    session.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return r;
}

async function reopen(dir, file, sessionDir) {
  const start = performance.now();
  const session = await openSession(dir, SessionManager.open(file, sessionDir));
  const msgs = session.messages; // the agent context the next request is built from
  const d = performance.now() - start;
  if (!msgs.length) throw new Error("empty context");
  session.dispose();
  return d;
}

// The store alone: open the JSONL file and resolve the context.
function storeOnly(file, sessionDir) {
  const start = performance.now();
  const ctx = SessionManager.open(file, sessionDir).buildSessionContext();
  const d = performance.now() - start;
  if (!ctx.messages.length) throw new Error("empty context");
  return d;
}

const round = (x) => Math.round(x * 1000) / 1000;
function stat(xs) {
  const warm = (xs.length > 1 ? xs.slice(1) : xs.slice()).sort((a, b) => a - b);
  const m = warm.length % 2 ? warm[(warm.length - 1) / 2] : (warm[warm.length / 2 - 1] + warm[warm.length / 2]) / 2;
  return { cold: round(xs[0]), median: round(m), min: round(warm[0]), max: round(warm[warm.length - 1]), n: warm.length };
}

const texts = Array.from({ length: N }, (_, i) => text(i));
const rssAfterInitMB = Math.max(rssAfterInitMB0, process.resourceUsage().maxRSS / 1024);
const reps = [];
for (let i = 0; i < REPS; i++) reps.push(await rep(texts));
const last = reps[reps.length - 1];
const col = (k) => reps.map((r) => r[k]);
const out = {
  sdk: `pi-coding-agent@${version}`,
  N,
  reps: REPS,
  rssAfterInitMB: round(rssAfterInitMB),
  build: { ms: stat(col("build")).median, fileBytes: last.fileBytes },
  compact: {
    e2e_ms: stat(col("e2e")),
    model_http_ms: stat(col("model")),
    excl_model_ms: stat(reps.map((r) => r.e2e - r.model)),
    prepare_ms: stat(col("prepare")),
    request_bytes: last.requestBytes,
    modelCalls: last.calls,
    contextMessagesAfter: last.after,
  },
  reopen: {
    compacted_ctx_ms: stat(col("compacted")),
    uncompacted_ctx_ms: stat(col("uncompacted")),
    resume_to_request_ms: stat(col("resume")),
    contextMessages: last.ctxMessages,
    store_only_compacted_ctx_ms: stat(col("storeCompacted")),
  },
  peakRssMB: round(process.resourceUsage().maxRSS / 1024),
  summarized: "messages before the newest ~20k estimated tokens (keepRecentTokens default)",
};
console.log(JSON.stringify(out));
