// Browser tests of `sessionkit serve`: playwright-core drives the system's
// chromium against the real pages, on a SQLite store that writestore (a Go
// program in this directory) writes through sessionkit's public API.
//
//	cd cmd/sessionkit/webtest && npm ci && node --test
//
// Screenshots of every page go to $WEBTEST_OUT (default: test-output/);
// $WEBTEST_CHROMIUM names the browser (default: /usr/bin/chromium).
// Every test fails on a console error or a dialog (an alert would be
// script from the store that ran). Without chromium the tests skip, or
// fail under CI=true.
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
const out = path.resolve(process.env.WEBTEST_OUT || path.join(here, "test-output"));
// $WEBTEST_CHROMIUM names another chromium binary.
const chromiumPath = (process.env.WEBTEST_CHROMIUM ? [process.env.WEBTEST_CHROMIUM] : ["/usr/bin/chromium", "/usr/bin/chromium-browser"]).find((p) => existsSync(p));
const missing = chromiumPath
  ? ""
  : "no chromium: install Debian's chromium package (apt-get install chromium); .ci/run does";
if (missing && process.env.CI) {
  throw new Error(missing + " (CI is set: the browser tests must run)");
}

let dir, bin, store, wrote, liveID, writer, serve, base, browser, page;
const problems = []; // console errors and dialogs of the current test

// lines yields the lines a child process writes on stdout.
function lines(child) {
  return readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
}

async function nextJSON(it) {
  const { value, done } = await it.next();
  assert.ok(!done, "the process ended before printing");
  return JSON.parse(value);
}

// startServe starts sessionkit serve with args and returns the process and
// the URL it printed.
async function startServe(args) {
  const child = spawn(bin, ["--store", store, "serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let ended = false;
  const waiting = new Set(); // of stderrMatch's checks, run as stderr grows and when it ends
  const check = () => waiting.forEach((f) => f());
  child.stderr.on("data", (d) => {
    stderr += d;
    check();
  });
  child.stderr.on("end", () => {
    ended = true;
    check();
  });
  // stderrMatch resolves to stderr once it matches re: stdout and stderr
  // are two pipes, so what serve wrote to stderr before its URL may reach
  // this process after the URL.
  const stderrMatch = (re) =>
    new Promise((resolve, reject) => {
      const f = () => {
        if (re.test(stderr)) {
          waiting.delete(f);
          resolve(stderr);
        } else if (ended) {
          waiting.delete(f);
          reject(new Error(`serve's stderr ended without ${re}: ${stderr}`));
        }
      };
      waiting.add(f);
      f();
    });
  const it = lines(child);
  const { value, done } = await it.next();
  assert.ok(!done, "sessionkit serve ended: " + stderr);
  const url = value.match(/http:\/\/\S+/);
  assert.ok(url, "serve printed no URL: " + value);
  return { child, url: url[0], stderrMatch };
}

before(async () => {
  if (missing) return;
  dir = mkdtempSync(path.join(tmpdir(), "sessionkit-webtest-"));
  mkdirSync(out, { recursive: true });
  bin = path.join(dir, "sessionkit");
  const writestore = path.join(dir, "writestore");
  execFileSync("go", ["build", "-o", bin, "./cmd/sessionkit"], { cwd: repo, stdio: "inherit" });
  execFileSync("go", ["build", "-o", writestore, "./cmd/sessionkit/webtest/writestore"], { cwd: repo, stdio: "inherit" });
  store = path.join(dir, "sessions.db");
  writer = spawn(writestore, ["-store", store, "-live"], { stdio: ["pipe", "pipe", "inherit"] });
  writer.lines = lines(writer);
  wrote = await nextJSON(writer.lines);
  liveID = (await nextJSON(writer.lines)).live;
  serve = await startServe(["--addr", "127.0.0.1:0"]);
  base = serve.url.replace(/\/$/, "");
  browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
});

async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = await ctx.newPage();
  p.on("console", (m) => {
    if (m.type() === "error") problems.push("console error: " + m.text());
  });
  p.on("pageerror", (e) => problems.push("page error: " + e.message));
  p.on("dialog", async (d) => {
    problems.push("dialog: " + d.message());
    await d.dismiss();
  });
  return p;
}

async function shot(p, name) {
  await p.screenshot({ path: path.join(out, name + ".png"), fullPage: true });
}

afterEach(async () => {
  if (page) await page.context().close();
  page = undefined;
  const found = problems.splice(0);
  assert.deepEqual(found, [], "no console error, no dialog");
});

after(async () => {
  if (browser) await browser.close();
  if (serve) serve.child.kill();
  if (writer) {
    writer.stdin.end();
    await new Promise((r) => writer.on("exit", r));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const opts = { skip: missing || false };

test("the session list: newest first, served by, the filter", opts, async () => {
  page = await newPage();
  await page.goto(base + "/");
  const rows = page.locator("#sessions tbody tr");
  assert.equal(await rows.count(), 3);
  assert.equal(await rows.nth(0).getAttribute("data-id"), liveID, "newest first");
  assert.match(await rows.nth(0).locator("td").nth(6).innerText(), /\S/, "the live session's lease holder");
  assert.equal((await rows.nth(0).locator("td").nth(6).innerText()).trim() === "-", false);
  const hostile = page.locator(`tr[data-id="${wrote.hostile}"] td a`);
  assert.equal(await hostile.innerText(), `<script>alert("title")</script> & <b>bold</b>`, "markup shows as text");
  await shot(page, "sessions");
  await page.fill('input[name="q"]', "falcon CLI");
  await page.click('button[type="submit"]');
  await page.waitForURL(/q=falcon/);
  assert.equal(await rows.count(), 1);
  assert.equal(await rows.nth(0).getAttribute("data-id"), wrote.story);
});

test("a session's timeline with its compactions, tool calls folded", opts, async () => {
  page = await newPage();
  await page.goto(base + "/s/" + wrote.story);
  assert.equal(await page.locator("h1").innerText(), wrote.story_title);
  const comps = page.locator("#timeline li.compaction");
  assert.equal(await comps.count(), wrote.compactions.length);
  for (const [i, c] of wrote.compactions.entries()) {
    const li = page.locator(`#pos-${c.position}`);
    assert.ok(await li.evaluate((el) => el.classList.contains("compaction")), `position ${c.position} is a compaction`);
    assert.match(await li.innerText(), new RegExp(`${c.trigger}\\s+completed`), `compaction ${i + 1}`);
    assert.match(await li.locator("details.summary").innerText(), /Summary of earlier conversation/);
    assert.match(await li.locator(".facts").innerText(), /tokens before, about \d+ after/);
  }
  const call = page.locator("details.call").first();
  assert.equal(await call.getAttribute("open"), null, "folded");
  assert.equal(await call.locator("pre").isVisible(), false);
  await call.locator("summary").click();
  assert.match(await call.locator("pre").innerText(), /"path": "main.go"/);
  await shot(page, "session");
});

test("the chart: one marker per compaction, at its step, each a link to it", opts, async () => {
  page = await newPage();
  await page.goto(base + "/s/" + wrote.story);
  const markers = page.locator("#chart a.marker");
  assert.equal(await markers.count(), wrote.compactions.length);
  for (const [i, c] of wrote.compactions.entries()) {
    assert.equal(await markers.nth(i).getAttribute("data-step"), String(c.step), `marker ${i + 1}'s step`);
    assert.equal(await markers.nth(i).getAttribute("data-compact"), c.compact_id);
  }
  assert.equal(await page.locator("#chart polyline.curve").count(), 1);
  assert.equal(await page.locator("#threshold").getAttribute("data-tokens"), String(wrote.threshold));
  await page.locator("#chart").screenshot({ path: path.join(out, "chart.png") });
  const last = wrote.compactions.at(-1);
  await markers.nth(wrote.compactions.length - 1).locator("circle").first().click();
  await page.waitForURL(new RegExp(`#pos-${last.position}$`));
  assert.equal(await page.locator(`#pos-${last.position}`).evaluate((el) => el.matches(":target")), true);
  assert.match(await page.locator(`#pos-${last.position}`).innerText(), new RegExp(last.compact_id));
});

test("a Segment: its messages verbatim, its summary, who made it", opts, async () => {
  page = await newPage();
  const c = wrote.compactions[0];
  await page.goto(base + "/s/" + wrote.story);
  await page.locator(`#pos-${c.position} a.seglink`).click();
  await page.waitForURL(new RegExp(`/segments/${c.segment_id}$`));
  const msgs = page.locator("#archived li.archived-msg");
  assert.ok((await msgs.count()) >= 2);
  assert.match(await msgs.first().innerText(), /We are building a CLI called falcon in Go\./);
  assert.match(await page.locator("#made-by").innerText(), /offline/);
  assert.match(await page.locator("#seg-summary").innerText(), /Summary of earlier conversation/);
  assert.match(await page.locator("dl.facts").innerText(), /fidelity/);
  await shot(page, "segment");
});

test("search: hits across archived and active messages", opts, async (t) => {
  page = await newPage();
  await page.goto(base + "/s/" + wrote.story + "/search?q=cobra");
  await shot(page, "search");
  // Every store of sessionkit searches: a page that says it cannot is a failure.
  assert.equal(await page.locator("#search-missing").count(), 0, "the SQLite store must search");
  const hits = page.locator("#hits li.hit");
  assert.ok((await hits.count()) > 0);
  assert.match(await hits.first().locator("mark").first().innerText(), /cobra/i);
  await hits.first().locator("a").click();
  await page.waitForURL(/#(pos|msg)-/);
});

test("export: the JSON of sessionkit export and one self-contained HTML file", opts, async () => {
  page = await newPage();
  await page.goto(base + "/s/" + wrote.story);
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("text=Export HTML")]);
  const file = path.join(dir, "export.html");
  await download.saveAs(file);
  const exported = await newPage();
  const requests = [];
  exported.on("request", (r) => requests.push(r.url()));
  await exported.goto("file://" + file);
  assert.deepEqual(requests.filter((u) => !u.startsWith("file:") && !u.startsWith("data:")), [], "no external asset");
  assert.equal(await exported.locator("#chart a.marker").count(), wrote.compactions.length);
  assert.equal(await exported.locator("section.segment").count(), wrote.compactions.length);
  await shot(exported, "export");
  await exported.context().close();
  const res = await page.request.get(base + "/s/" + wrote.story + "/export.json");
  const doc = await res.json();
  assert.equal(doc.format, "sessionkit.export.v1");
  assert.equal(doc.segments.length, wrote.compactions.length);
  assert.equal(doc.id, wrote.story);
});

test("live: a message arrives while the agent runs", opts, async () => {
  page = await newPage();
  await page.goto(base + "/s/" + liveID);
  assert.match(await page.locator("#served").innerText(), /served by/);
  const before = await page.locator("#timeline li").count();
  await page.locator("#live").waitFor({ state: "visible" }); // the stream is open
  const text = "A live update from the test agent: ship falcon 1.0 on Friday.";
  writer.stdin.write(text + "\n");
  assert.deepEqual(await nextJSON(writer.lines), { done: 1 });
  await page.locator("#timeline li.message", { hasText: text }).first().waitFor({ timeout: 15000 });
  assert.match(await page.locator("#timeline li.message").nth(before).innerText(), /user/);
  assert.ok((await page.locator("#timeline li").count()) >= before + 2, "the prompt and the answer");
  assert.ok((await page.locator("#chart polyline.curve").count()) === 1);
  await shot(page, "live");
});

// Bounded: a serve that never prints its token leaves stderrMatch waiting.
test("the token: refused without it on a non-loopback address", { ...opts, timeout: 60_000 }, async () => {
  const guarded = await startServe(["--addr", "0.0.0.0:0"]);
  try {
    assert.match(await guarded.stderrMatch(/the token is \S+/), /the token is \S+/);
    const url = new URL(guarded.url);
    const plain = `http://127.0.0.1:${url.port}/`;
    page = await newPage();
    const res = await page.request.get(plain, { maxRedirects: 0 });
    assert.equal(res.status(), 401);
    assert.match(await res.text(), /needs the token/);
    const wrong = await page.request.get(plain + "?token=wrong-token-wrong-token", { maxRedirects: 0 });
    assert.equal(wrong.status(), 401);
    await page.goto(`http://127.0.0.1:${url.port}/?token=${url.searchParams.get("token")}`);
    assert.equal(new URL(page.url()).search, "", "the token leaves the address bar");
    assert.equal(await page.locator("#sessions tbody tr").count(), 3);
    await page.goto(`http://127.0.0.1:${url.port}/s/${wrote.story}`); // the cookie carries it
    assert.equal(await page.locator("#chart a.marker").count(), wrote.compactions.length);
    await shot(page, "token");
  } finally {
    if (page) await page.context().close(); // before the server ends its live stream
    page = undefined;
    guarded.child.kill();
  }
});
