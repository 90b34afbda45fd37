#!/usr/bin/env node
/*
 * e2e.mjs - a real OpenClaw (from npm) loads the mnemo plugin and its memory_search /
 * memory_get tool calls are answered by mnemo. Run with Node 24 (setup.sh installs it):
 *
 *   node tests/openclaw/e2e.mjs --mnemo build/mnemo --openclaw DIR/node_modules/openclaw
 *
 * Exits 0 and prints "openclaw e2e: ok" only when every check passed. What it does:
 *
 *  0. The plugin's TypeScript passes tsc --strict; the plugin module alone: hard timeouts (a mnemo that hangs, a daemon that never
 *     answers) give OpenClaw's "memory unavailable" result or the CLI's answer in time.
 *  1. Gateway A: integrations/openclaw/install.sh puts the plugin into the state dir's
 *     extensions/; `openclaw gateway run` with plugins.slots.memory = "mnemo" and the
 *     plugin entry install.sh prints; POST /tools/invoke runs memory_search and memory_get
 *     through OpenClaw's tool registry and policy. Checks the result shape, maxResults,
 *     minScore, the CLI route, the daemon started by the plugin and then the daemon route,
 *     get / not_found / denied, and the unavailable result once the index is broken.
 *     Then one whole agent turn through the Gateway's /v1/chat/completions, with a scripted
 *     OpenAI-compatible model server standing in for the LLM: the prompt it receives must
 *     carry mnemo's trigger recall and <recalled-memories> block (before_prompt_build), and
 *     the memory_search call it makes (through Tool Search's tool_call) must be answered by
 *     mnemo.
 *     OpenClaw's memory search settings: Gateway A's memory.search (extraPaths, query.maxResults)
 *     reach mnemo through the tools and the daemon; `openclaw memory index|search|status`
 *     with memory.search naming provider openai, a model, remote.baseUrl (a loopback fake
 *     embedding server), remote.apiKey, remote.headers and input types: the server sees them,
 *     and the key is on no command line and in no file.
 *  2. Gateway B: memory-core keeps the slot; the memory-recall hook pack, installed by
 *     install.sh into <state>/hooks/ (its gateway:startup handler must start the daemon)
 *     and a test plugin registers the hook's before_tool_call handler: memory_search is
 *     answered from mnemo through the block reason, and falls through to memory-core when
 *     mnemo cannot run.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, "../..");
const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const mnemoBin = path.resolve(arg("--mnemo", process.env.MNEMO_BIN || path.join(src, "build/mnemo")));
const openclawDir = path.resolve(
  arg("--openclaw", path.join(process.env.MNEMO_JS_CACHE || path.join(os.homedir(), ".cache/mnemo-test"), "openclaw/node_modules/openclaw")),
);
const keep = args.includes("--keep");
const openclawMjs = path.join(openclawDir, "openclaw.mjs");
const started = Date.now();

let failures = 0;
function check(cond, what, detail) {
  if (cond) console.log(`  ok   ${what}`);
  else {
    failures++;
    console.log(`  FAIL ${what}${detail !== undefined ? `\n       ${typeof detail === "string" ? detail : JSON.stringify(detail).slice(0, 1500)}` : ""}`);
  }
}
function die(msg) {
  console.log(`openclaw e2e: FAILED: ${msg}`);
  cleanup();
  process.exit(1);
}

if (!fs.existsSync(mnemoBin)) die(`no mnemo binary at ${mnemoBin}`);
if (!fs.existsSync(openclawMjs)) die(`no OpenClaw at ${openclawDir} (run tests/openclaw/setup.sh)`);
const major = Number(process.versions.node.split(".")[0]);
if (major < 24) die(`Node ${process.versions.node}: OpenClaw needs Node 24 (setup.sh installs it)`);
const ocVersion = JSON.parse(fs.readFileSync(path.join(openclawDir, "package.json"), "utf8")).version;
console.log(`openclaw e2e: OpenClaw ${ocVersion}, Node ${process.versions.node}, mnemo ${mnemoBin}`);

/* ------------------------------------------------------------ scratch */

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mnemo-openclaw-e2e-"));
const children = [];
const daemonPidFiles = [];
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/* Stops what this script started (the Gateways' process groups, the daemons the plugin and
   the hook started, found by their pid files), waits for them, then removes the scratch
   folder; a daemon still exiting could otherwise write its lock file into it again. */
function cleanup() {
  for (const c of children) {
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }
  const pids = [];
  for (const f of daemonPidFiles) {
    try {
      const pid = JSON.parse(fs.readFileSync(f, "utf8")).pid;
      if (pid > 0 && alive(pid)) {
        process.kill(pid, "SIGTERM");
        pids.push(pid);
      }
    } catch {
      /* not running */
    }
  }
  const until = Date.now() + 3000;
  while (pids.some(alive) && Date.now() < until) spawnSync("sleep", ["0.05"]);
  for (const pid of pids.filter(alive)) process.kill(pid, "SIGKILL");
  if (keep) {
    console.log(`kept ${tmp}`);
    return;
  }
  for (let i = 0; i < 5 && fs.existsSync(tmp); i++) {
    try {
      fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    } catch {
      spawnSync("sleep", ["0.1"]);
    }
  }
  if (fs.existsSync(tmp)) console.log(`  (could not remove ${tmp})`);
}
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => die(`${sig}`));

/* Pids of `mnemo serve` processes whose command line names DB (an orphan check that does not
   depend on the pid file, which a daemon killed hard leaves behind). */
function serveProcesses(db) {
  const pids = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (argv.includes("serve") && argv.includes(db)) pids.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return pids;
}
async function noServeLeft(db, ms = 4000) {
  const until = Date.now() + ms;
  let left = serveProcesses(db);
  while (left.length && Date.now() < until) {
    await sleep(100);
    left = serveProcesses(db);
  }
  return left;
}

function copyDir(from, to) {
  fs.cpSync(from, to, { recursive: true, filter: (p) => !p.includes("node_modules") });
}

const ws = path.join(tmp, "workspace");
copyDir(path.join(src, "examples/memory"), ws);
fs.mkdirSync(path.join(ws, "memory"), { recursive: true });
fs.writeFileSync(
  path.join(ws, "memory/2026-11-29.md"),
  "# 2026-11-29\n\n- Ran the OpenClaw check. The canary phrase is zephyr quokka lantern 4711.\n- Nothing else happened.\n",
);

/* a folder outside the workspace, indexed through memory.search.extraPaths */
const extraDir = path.join(tmp, "extra-notes");
fs.mkdirSync(extraDir, { recursive: true });
fs.writeFileSync(path.join(extraDir, "runbook.md"), "# Runbook\n\n- The extra canary is ocelot tamarind 2718.\n");

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function health(url) {
  try {
    const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(500) });
    return r.ok ? await r.json() : null;
  } catch {
    return null;
  }
}

/* ------------------------------------------------------------ 0. module-level timeouts */

async function moduleChecks() {
  console.log("0. plugin sources and module: types, hard timeouts");
  /* the TypeScript OpenClaw loads as is must also pass a strict type check (OpenClaw ships tsc) */
  const modules = path.dirname(openclawDir);
  const tsc = path.join(modules, "typescript/bin/tsc");
  if (fs.existsSync(tsc)) {
    const plug = path.join(src, "integrations/openclaw");
    const r = spawnSync(process.execPath, [tsc, "--noEmit", "--strict", "--target", "es2022", "--module", "nodenext",
      "--moduleResolution", "nodenext", "--allowImportingTsExtensions", "--typeRoots", path.join(modules, "@types"), "--types", "node",
      path.join(plug, "index.ts"), path.join(plug, "hooks/memory-recall/handler.ts")], { encoding: "utf8" });
    check(r.status === 0, "plugin and hook TypeScript pass tsc --strict", r.stdout + r.stderr);
  }
  const client = await import(pathToFileURL(path.join(src, "integrations/openclaw/hooks/memory-recall/mnemo-client.ts")).href);
  const tools = await import(pathToFileURL(path.join(src, "integrations/openclaw/hooks/memory-recall/memory-tools.ts")).href);
  const hang = path.join(tmp, "mnemo-hang.sh");
  fs.writeFileSync(hang, "#!/bin/sh\nexec sleep 30\n", { mode: 0o755 });
  let t = Date.now();
  const r1 = await tools.memorySearchPayload({ bin: hang, workspace: ws, daemon: false, timeoutMs: 300 }, {}, { query: "postgres" });
  let ms = Date.now() - t;
  check(!r1.ok && r1.payload.unavailable === true && r1.payload.disabled === true && r1.payload.timedOut === true,
    `a hanging mnemo gives the unavailable result (timedOut) in ${ms} ms`, r1.payload);
  check(ms < 1000, "  ... within the 300 ms deadline (+ slack)", ms);

  /* a daemon that accepts and never answers: the CLI answers within the deadline */
  const port = await freePort();
  const sockets = [];
  const mute = net.createServer((s) => sockets.push(s)).listen(port, "127.0.0.1");
  t = Date.now();
  const r2 = await tools.memorySearchPayload(
    { bin: mnemoBin, workspace: ws, db: path.join(tmp, "mod.sqlite"), url: `http://127.0.0.1:${port}`, timeoutMs: 1500, autoStart: false },
    {},
    { query: "zephyr quokka" },
  );
  ms = Date.now() - t;
  for (const s of sockets) s.destroy();
  mute.close();
  check(r2.ok && r2.payload.debug?.route === "cli" && r2.payload.results?.[0]?.path === "memory/2026-11-29.md",
    `a daemon that never answers: the CLI answers in ${ms} ms`, r2.payload);
  check(ms < 1500, "  ... within the 1500 ms deadline", ms);

  const e = await client.mnemoGet({ bin: "/nonexistent/mnemo", workspace: ws, daemon: false }, { path: "MEMORY.md" }).catch((x) => x);
  check(e instanceof client.MnemoError && e.code === "spawn", "a missing mnemo executable is an error, not a hang", String(e));

  /* one daemon address: the url option wins over a different MNEMO_URL, and that is logged once */
  const warnings = [];
  client.setMnemoLogger({ warn: (m) => warnings.push(m) });
  process.env.MNEMO_URL = "http://127.0.0.1:1";
  const u1 = client.mnemoUrl({ url: "http://127.0.0.1:2" });
  const u2 = client.mnemoUrl({ url: "http://127.0.0.1:2/" });
  delete process.env.MNEMO_URL;
  check(u1.url === "http://127.0.0.1:2" && u1.source === "config" && u2.url === u1.url &&
    warnings.filter((w) => /differs from MNEMO_URL=http:\/\/127\.0\.0\.1:1/.test(w)).length === 1,
    "url option and a different MNEMO_URL: the option is used, the mismatch logged once", warnings);

  /* a daemon already serves the index at another address: the client finds it (logged once)
     instead of answering every call from the CLI */
  const rdb = path.join(tmp, "redirect.sqlite");
  daemonPidFiles.push(`${rdb}.serve.pid`);
  const running = spawn(mnemoBin, ["--workspace", ws, "--db", rdb, "serve", "--listen", "127.0.0.1:0"], { stdio: "ignore" });
  let runningUrl = null;
  for (let i = 0; i < 100 && !runningUrl; i++) {
    try {
      runningUrl = JSON.parse(fs.readFileSync(`${rdb}.serve.pid`, "utf8")).url;
    } catch {
      await sleep(100);
    }
  }
  warnings.length = 0;
  const ro = { bin: mnemoBin, workspace: ws, db: rdb, url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 3000 };
  const routes = [];
  routes.push((await tools.memorySearchPayload(ro, {}, { query: "zephyr quokka" })).payload.debug?.route);
  for (let i = 0; i < 50 && !client.mnemoRoute(ro).redirectedTo; i++) await sleep(100);
  for (let i = 0; i < 3; i++) routes.push((await tools.memorySearchPayload(ro, {}, { query: "zephyr quokka" })).payload.debug?.route);
  check(runningUrl && client.mnemoRoute(ro).redirectedTo === runningUrl && routes.join() === "cli,daemon,daemon,daemon" &&
    warnings.filter((w) => w.includes(`already runs at ${runningUrl}`)).length === 1 && warnings.length === 1,
    "another daemon serves the index: later calls go to it, logged once (not the CLI every time)", { routes, runningUrl, warnings });
  running.kill("SIGTERM");
  client.setMnemoLogger(undefined);

  /* OpenClaw's memory search config -> mnemo's settings (openclaw-settings.ts) */
  const st = await import(pathToFileURL(path.join(src, "integrations/openclaw/hooks/memory-recall/openclaw-settings.ts")).href);
  const oc = {
    memorySearch: { provider: "gemini", chunkSize: 300 },
    agents: {
      defaults: { memorySearch: { provider: "voyage", maxResults: 4, extraPaths: ["notes"] } },
      entries: { Ops: { memory: { search: { model: "agent-model", extraPaths: [{ path: "/srv/runbooks", pattern: "**/*.md" }] } } } },
    },
    memory: {
      search: {
        provider: "openai", inputType: "shared-type", documentInputType: "doc-type", fallback: "gemini", cache: { enabled: true },
        remote: { baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-unit-secret", headers: { "X-Team": "ops" } },
        multimodal: { enabled: true, modalities: ["image"], maxFileBytes: 1000, frames: 4 }, query: { minScore: 0.2 },
      },
    },
  };
  const mset = st.mnemoSettings(oc, "ops", { maxResults: 9 });
  const ev = mset.env;
  check(ev.MNEMO_PROVIDER === "openai" && ev.MNEMO_MODEL === "agent-model" && ev.MNEMO_BASE_URL === "http://127.0.0.1:9/v1" &&
    ev.MNEMO_CHUNK_TOKENS === "300" && ev.MNEMO_MIN_SCORE === "0.2" && ev.MNEMO_MAX_RESULTS === "9",
    "settings: memory.search over agents.defaults.memorySearch over top-level memorySearch, the agent's over all, the plugin's settings win", ev);
  check(ev.MNEMO_EXTRA_PATHS === JSON.stringify(["notes", { path: "/srv/runbooks", pattern: "**/*.md" }]),
    "settings: extraPaths of every level are concatenated (strings and {path, pattern})", ev.MNEMO_EXTRA_PATHS);
  check(ev.MNEMO_QUERY_INPUT_TYPE === "shared-type" && ev.MNEMO_DOCUMENT_INPUT_TYPE === "doc-type" &&
    ev.MNEMO_HEADERS === JSON.stringify({ "X-Team": "ops" }) &&
    ev.MNEMO_MULTIMODAL === JSON.stringify({ enabled: true, modalities: ["image"], maxFileBytes: 1000 }) &&
    mset.ignored.some((i) => i.key.endsWith("multimodal.frames")),
    "settings: inputType fills the input type not set; headers and multimodal pass as JSON (a field mnemo lacks is left out, said)", ev);
  check(ev.MNEMO_API_KEY_ENV === st.OPENCLAW_KEY_ENV && ev[st.OPENCLAW_KEY_ENV] === "sk-unit-secret" &&
    !JSON.stringify([mset.mapped, mset.ignored, mset.notes]).includes("sk-unit-secret"),
    "settings: remote.apiKey only in a variable apiKeyEnv names, in no log line", mset);
  check(mset.notes.length === 1 && /fallback \(gemini\) has no equivalent/.test(mset.notes[0]) &&
    mset.ignored.some((i) => i.key === "memory.search.cache"), "settings: fallback and cache are reported as not used", mset);
  const copilot = st.mnemoSettings({ memory: { search: { provider: "github-copilot", remote: { apiKey: { source: "env", provider: "default", id: "MY_KEY" } } } } }, "main");
  const deep = st.mnemoSettings({ memorySearch: { provider: "deepinfra" } }, "main");
  check(copilot.env.MNEMO_PROVIDER === "github-copilot" && !copilot.ignored.some((i) => /github-copilot/.test(i.why)) && copilot.env.MNEMO_API_KEY_ENV === "MY_KEY" &&
    deep.env.MNEMO_PROVIDER === "deepinfra" && !deep.env.MNEMO_BASE_URL,
    "settings: an env secret reference names apiKeyEnv; github-copilot and deepinfra are mnemo's providers of those names", { copilot, deep });
  const off = st.mnemoSettings(oc, "ops", { model: "mine" }, false);
  check(JSON.stringify(off.env) === JSON.stringify({ MNEMO_MODEL: "mine" }), "settings: openclawSettings false passes the plugin's settings only", off.env);

  /* a daemon already running with another provider than the settings ask for: not used, logged once */
  const sdb = path.join(tmp, "settings.sqlite");
  daemonPidFiles.push(`${sdb}.serve.pid`);
  const sport = await freePort();
  const other = spawn(mnemoBin, ["--workspace", ws, "--db", sdb, "serve", "--listen", `127.0.0.1:${sport}`], {
    stdio: "ignore",
    env: { ...process.env, MNEMO_PROVIDER: "auto" },
  });
  const surl = `http://127.0.0.1:${sport}`;
  for (let i = 0; i < 100 && !(await health(surl)); i++) await sleep(100);
  warnings.length = 0;
  client.setMnemoLogger({ warn: (m) => warnings.push(m) });
  const so = { bin: mnemoBin, workspace: ws, db: sdb, url: surl, autoStart: false, timeoutMs: 5000 };
  /* the plugin's settings name provider none; the daemon runs auto */
  const none = { ...so, settings: { provider: "none" } };
  const sr = [];
  for (let i = 0; i < 2; i++) sr.push((await tools.memorySearchPayload(none, {}, { query: "zephyr quokka" })).payload.debug?.route);
  const same = (await tools.memorySearchPayload({ ...so, settings: { provider: "auto" } }, {}, { query: "zephyr quokka" })).payload;
  check(sr.join() === "cli,cli" && warnings.filter((w) => w.includes("runs provider auto, not none")).length === 1 && same.debug?.route === "daemon",
    "a running daemon with another provider than the settings: the CLI answers, logged once; with the same, the daemon", { sr, warnings, same: same.debug });
  other.kill("SIGTERM");
  client.setMnemoLogger(undefined);
}

/*
 * A fake OpenAI embedding server (POST /v1/embeddings): vectors made from the words of each
 * input, every request kept (headers and body) for the checks.
 */
async function fakeEmbedder() {
  const requests = [];
  const dims = 64;
  const vec = (text) => {
    const v = new Array(dims).fill(0);
    for (const w of String(text).toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      let h = 2166136261;
      for (const ch of w) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
      v[h % dims] += 1;
    }
    const n = Math.hypot(...v) || 1;
    return v.map((x) => x / n);
  };
  const port = await freePort();
  const server = http
    .createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        let body = {};
        try {
          body = JSON.parse(raw);
        } catch {
          /* keep {} */
        }
        requests.push({ url: req.url, headers: req.headers, body });
        const inputs = Array.isArray(body.input) ? body.input : [body.input];
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", model: body.model, data: inputs.map((t, index) => ({ object: "embedding", index, embedding: vec(t) })) }));
      });
    })
    .listen(port, "127.0.0.1");
  return { url: `http://127.0.0.1:${port}`, requests, close: () => server.close() };
}

/* ------------------------------------------------------------ a scripted model */

/*
 * An OpenAI-compatible /v1/chat/completions server standing in for the model (no API keys
 * here): its first answer calls memory_search through Tool Search's tool_call, its second
 * (after the tool result) ends the turn. Every request is kept for the checks.
 */
async function fakeModel() {
  const requests = [];
  const port = await freePort();
  const server = http
    .createServer((req, res) => {
      let raw = "";
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        let body = {};
        try {
          body = JSON.parse(raw);
        } catch {
          /* keep {} */
        }
        requests.push({ url: req.url, body });
        const msgs = Array.isArray(body.messages) ? body.messages : [];
        const toolDone = msgs.some((m) => m.role === "tool");
        const call = {
          id: "call_mnemo_1",
          type: "function",
          function: {
            name: "tool_call",
            arguments: JSON.stringify({ id: "memory_search", args: { query: "zephyr quokka lantern", maxResults: 2 } }),
          },
        };
        const message = toolDone
          ? { role: "assistant", content: "The canary phrase is zephyr quokka lantern 4711." }
          : { role: "assistant", content: null, tool_calls: [call] };
        const finish = toolDone ? "stop" : "tool_calls";
        const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };
        if (body.stream) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          const base = { id: "chatcmpl-e2e", object: "chat.completion.chunk", created: 1, model: body.model };
          const delta = toolDone
            ? { role: "assistant", content: message.content }
            : { role: "assistant", tool_calls: [{ index: 0, ...call }] };
          res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
          res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage })}\n\n`);
          res.end("data: [DONE]\n\n");
        } else {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ id: "chatcmpl-e2e", object: "chat.completion", created: 1, model: body.model,
            choices: [{ index: 0, message, finish_reason: finish }], usage }));
        }
      });
    })
    .listen(port, "127.0.0.1");
  return {
    requests,
    provider: {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: "e2e-not-a-key",
      api: "openai-completions",
      models: [{ id: "scripted", name: "Scripted", api: "openai-completions", reasoning: false, input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4000 }],
    },
    close: () => server.close(),
  };
}

/* ------------------------------------------------------------ gateways */

/* Runs integrations/openclaw/install.sh into STATE (as OPENCLAW_STATE_DIR); returns its output. */
function install(state, extra = []) {
  const r = spawnSync("sh", [path.join(src, "integrations/openclaw/install.sh"), ...extra], {
    env: { ...process.env, OPENCLAW_STATE_DIR: state },
    encoding: "utf8",
  });
  if (r.status !== 0) die(`install.sh failed: ${r.stderr}`);
  return r.stdout;
}

async function startGateway(name, config) {
  const dir = path.join(tmp, name);
  const state = path.join(dir, "state");
  fs.mkdirSync(path.join(dir, "home"), { recursive: true });
  fs.mkdirSync(path.join(dir, "tmp"), { recursive: true });
  fs.mkdirSync(state, { recursive: true });
  if (config.install) {
    const out = install(state, config.install);
    const again = install(state, config.install);
    check(out === again && fs.existsSync(path.join(state, "extensions/mnemo/openclaw.plugin.json")),
      `install.sh ${config.install.join(" ")} into ${name}'s state dir (twice: same result)`, out);
    delete config.install;
  }
  const port = await freePort();
  const token = `e2e-${Math.random().toString(36).slice(2)}`;
  config.gateway = { mode: "local", port, bind: "loopback", auth: { mode: "token", token }, ...(config.http ? { http: config.http } : {}) };
  delete config.http;
  config.logging = { file: path.join(dir, "openclaw.log") };
  fs.writeFileSync(path.join(state, "openclaw.json"), JSON.stringify(config, null, 2));
  const env = { ...process.env };
  for (const k of Object.keys(env))
    if (k.startsWith("OPENCLAW_") || k.startsWith("MNEMO_") || /_API_KEY$/.test(k)) delete env[k];
  Object.assign(env, {
    HOME: path.join(dir, "home"),
    TMPDIR: path.join(dir, "tmp"),
    OPENCLAW_STATE_DIR: state,
    OPENCLAW_CONFIG_PATH: path.join(state, "openclaw.json"),
    PATH: `${path.dirname(process.execPath)}:${env.PATH || "/usr/bin:/bin"}`,
    NO_COLOR: "1",
  });
  const log = fs.openSync(path.join(dir, "gateway.log"), "w");
  const child = spawn(process.execPath, [openclawMjs, "gateway", "run"], { env, stdio: ["ignore", log, log], detached: true });
  children.push(child);
  let exited = false;
  child.on("exit", () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  const t = Date.now();
  while (!(await health(url))) {
    // About 15 s alone; two at once beside the rest of the suite on 2 CPUs took over 60.
    if (exited || Date.now() - t > 150000) {
      const tail = fs.readFileSync(path.join(dir, "gateway.log"), "utf8").slice(-3000);
      die(`gateway ${name} did not start (${exited ? "exited" : "timeout"}):\n${tail}`);
    }
    await sleep(200);
  }
  console.log(`   gateway ${name} up on ${url} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return {
    url,
    dir,
    state,
    config,
    pid: child.pid,
    exited: () => exited,
    /* `openclaw ARGS...` as a separate CLI process with this Gateway's state and config */
    cli(cliArgs, extraEnv = {}) {
      return new Promise((resolve) => {
        const p = spawn(process.execPath, [openclawMjs, ...cliArgs], { env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let err = "";
        p.stdout.on("data", (c) => (out += c));
        p.stderr.on("data", (c) => (err += c));
        const timer = setTimeout(() => p.kill("SIGKILL"), 60000);
        p.on("close", (code) => {
          clearTimeout(timer);
          /* the JSON document that ends stdout (log lines such as "[plugins] ..." may precede it) */
          let json = null;
          for (let i = 0; i >= 0 && json === null; i = out.indexOf("\n", i + 1)) {
            const at = i === 0 ? 0 : i + 1;
            if (out[at] !== "{" && out[at] !== "[") continue;
            try {
              json = JSON.parse(out.slice(at));
            } catch {
              /* not here */
            }
          }
          resolve({ code, out, err, json });
        });
      });
    },
    async kill() {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        return;
      }
      for (let i = 0; i < 50 && !exited; i++) await sleep(100);
    },
    async invoke(tool, toolArgs) {
      const r = await fetch(`${url}/tools/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ tool, args: toolArgs, sessionKey: "main" }),
        signal: AbortSignal.timeout(20000),
      });
      const body = await r.json().catch(() => null);
      return { status: r.status, body, details: body?.result?.details, text: body?.result?.content?.[0]?.text };
    },
    async chat(text) {
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "openclaw/default", messages: [{ role: "user", content: text }] }),
        signal: AbortSignal.timeout(60000),
      });
      return { status: r.status, body: await r.json().catch(() => null) };
    },
    async stop() {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        return;
      }
      for (let i = 0; i < 50 && !exited; i++) await sleep(100);
      if (!exited) process.kill(-child.pid, "SIGKILL");
    },
    log: () => fs.readFileSync(path.join(dir, "gateway.log"), "utf8"),
  };
}

function hasSearchShape(d) {
  return (
    d &&
    Array.isArray(d.results) &&
    d.results.every(
      (h) =>
        typeof h.path === "string" &&
        Number.isInteger(h.startLine) &&
        Number.isInteger(h.endLine) &&
        typeof h.score === "number" &&
        typeof h.snippet === "string" &&
        typeof h.source === "string" &&
        typeof h.citation === "string",
    )
  );
}

async function gatewayA() {
  const daemonPort = await freePort();
  const db = path.join(tmp, "a.sqlite");
  daemonPidFiles.push(`${db}.serve.pid`);
  const daemonUrl = `http://127.0.0.1:${daemonPort}`;
  /* a stored memory, for the <recalled-memories> block */
  const add = spawnSync(mnemoBin, ["--workspace", ws, "--db", db, "memory", "add", "User is Chris, senior platform engineer",
    "--category", "identity"], { encoding: "utf8" });
  if (add.status !== 0) die(`mnemo memory add failed: ${add.stderr}`);
  const model = await fakeModel();
  /* installed by install.sh into <state>/extensions/mnemo, enabled as install.sh says */
  const starting = startGateway("a", {
    install: ["--no-hook"],
    http: { endpoints: { chatCompletions: { enabled: true } } },
    models: { mode: "merge", providers: { scripted: model.provider } },
    agents: { defaults: { workspace: ws, model: { primary: "scripted/scripted" } } },
    /* OpenClaw's memory search settings, which the plugin passes to mnemo */
    memory: { search: { extraPaths: [extraDir], query: { maxResults: 2 } } },
    plugins: {
      slots: { memory: "mnemo" },
      entries: {
        "memory-core": { enabled: false },
        mnemo: {
          enabled: true,
          hooks: { allowConversationAccess: true },
          config: { bin: mnemoBin, db, url: daemonUrl, timeoutMs: 5000, recall: { triggers: true, memories: true } },
        },
      },
    },
  });
  /* the Gateway starts now; the checks run when the caller is ready for them */
  return async () => {
    const gw = await starting;
    console.log("1. gateway A: plugins.slots.memory = mnemo");
    let r = await gw.invoke("memory_search", { query: "zephyr quokka lantern", maxResults: 3 });
    check(r.status === 200 && hasSearchShape(r.details), "memory_search via /tools/invoke: 200 with OpenClaw's result shape", r.body);
    check(r.details?.results?.[0]?.path === "memory/2026-11-29.md", "  ... the canary note comes first", r.details?.results?.[0]);
    check(r.details?.debug?.backend === "mnemo", "  ... answered by mnemo", r.details?.debug);
    check(r.details?.debug?.route === "cli", "  ... through the CLI (no daemon yet)", r.details?.debug);
    const top = r.details?.results?.[0] ?? {};
    const cite = `${top.path}#L${top.startLine}${top.endLine !== top.startLine ? `-L${top.endLine}` : ""}`;
    check(top.citation === cite && top.snippet?.endsWith(`\n\nSource: ${cite}`) && top.corpus === "memory",
      "  ... citation, Source line and corpus as memory-core formats them", top);
    check(typeof r.text === "string" && JSON.parse(r.text).results.length === r.details.results.length,
      "  ... content[0].text is the same JSON for the model");

    r = await gw.invoke("memory_search", { query: "ocelot tamarind" });
    check(r.details?.results?.[0]?.path?.endsWith("extra-notes/runbook.md"),
      "memory.search.extraPaths: memory_search finds the note in the extra folder", r.details?.results?.[0] ?? r.details);
    r = await gw.invoke("memory_search", { query: "postgres" });
    check(r.details?.results?.length === 2, "memory.search.query.maxResults 2: memory_search without maxResults gives 2 results", r.details?.results?.length);
    r = await gw.invoke("memory_search", { query: "postgres migration", maxResults: 3 });
    check(r.details?.results?.length === 3, "maxResults 3 gives 3 results", r.details?.results?.length);
    r = await gw.invoke("memory_search", { query: "postgres migration gateway deploy", minScore: 0.9 });
    check(r.details?.results?.length > 0 && r.details.results.every((h) => h.score >= 0.9), "minScore 0.9 keeps only scores >= 0.9",
      r.details?.results?.map((h) => h.score));

    /* the plugin started `mnemo serve` on the first call; wait for it, then the daemon answers */
    let h = null;
    for (let i = 0; i < 150 && !h; i++) {
      h = await health(daemonUrl);
      if (!h) await sleep(100);
    }
    check(h?.ok === true, "the plugin started `mnemo serve` (autoStart)", h);
    await sleep(1100); /* the plugin retries the daemon 1 s after a refused connection */
    r = await gw.invoke("memory_search", { query: "zephyr quokka lantern" });
    /* on a loaded machine the first daemon answer can miss its time slice; the plugin then
       answers from the CLI and leaves the daemon alone for 5 s */
    for (let i = 0; i < 2 && r.details?.debug?.route === "cli"; i++) {
      await sleep(5200);
      r = await gw.invoke("memory_search", { query: "zephyr quokka lantern" });
    }
    check(r.details?.debug?.route === "daemon" && r.details?.results?.[0]?.path === "memory/2026-11-29.md",
      "memory_search through the daemon", r.details?.debug);
    r = await gw.invoke("memory_search", { query: "ocelot tamarind" });
    check(r.details?.debug?.route === "daemon" && r.details?.results?.[0]?.path?.endsWith("extra-notes/runbook.md"),
      "  ... the daemon the plugin started indexes memory.search.extraPaths too", r.details);

    /* the plugin started its daemon with --parent <a process of the Gateway> */
    const daemonPid = JSON.parse(fs.readFileSync(`${db}.serve.pid`, "utf8")).pid;
    const dargv = fs.readFileSync(`/proc/${daemonPid}/cmdline`, "utf8").split("\0");
    const parentPid = Number(dargv[dargv.indexOf("--parent") + 1]);
    let parentPgrp = -1;
    try {
      parentPgrp = Number(fs.readFileSync(`/proc/${parentPid}/stat`, "utf8").split(") ")[1].split(" ")[2]);
    } catch {
      /* no such process */
    }
    check(dargv.includes("--parent") && parentPgrp === gw.pid, "the daemon the plugin started is tied to the Gateway (--parent)", { dargv, parentPid, parentPgrp, gw: gw.pid });

    /* openclaw memory status|search and status --json --all, as separate CLI processes that load
       the plugin: its memory runtime answers them (through the daemon the Gateway's plugin
       started). The status --all one reads a copy of the config whose Gateway port is closed:
       OpenClaw reports memory from the plugin only when it scans locally. */
    const direct = JSON.parse(spawnSync(mnemoBin, ["--workspace", ws, "--db", db, "status", "--json"],
      { encoding: "utf8", env: { ...process.env, MNEMO_EXTRA_PATHS: JSON.stringify([extraDir]) } }).stdout);
    const offline = path.join(gw.state, "openclaw-offline.json");
    fs.writeFileSync(offline, JSON.stringify({ ...gw.config, gateway: { ...gw.config.gateway, port: await freePort() } }, null, 2));
    const otherUrl = `http://127.0.0.1:${await freePort()}`;
    const [st, stText, se, all] = await Promise.all([
      gw.cli(["memory", "status", "--json"], { MNEMO_URL: otherUrl }),
      gw.cli(["memory", "status"]),
      gw.cli(["memory", "search", "--json", "--max-results", "3", "zephyr quokka lantern"]),
      gw.cli(["status", "--json", "--all", "--timeout", "3000"], { OPENCLAW_CONFIG_PATH: offline }),
    ]);
    const ms0 = st.json?.[0]?.status;
    const mn = ms0?.custom?.mnemo;
    check(st.code === 0 && st.json?.[0]?.agentId === "main" && ms0?.files === direct.files && ms0?.chunks === direct.chunks && direct.files > 0 &&
      ms0?.workspaceDir === ws && ms0?.dbPath === db && mn?.mode === "keyword" && mn?.lastSync === direct.lastSync?.at,
      `openclaw memory status --json: mnemo's files (${direct.files}), chunks, mode, last sync`, st.json ?? st.out + st.err);
    check(mn?.route?.answeredBy === "daemon" && mn?.route?.url === daemonUrl && mn?.route?.source === "config",
      "  ... and the daemon route (the plugin's url, answered by the daemon)", mn?.route);
    const mismatch = (st.out + st.err).split(`differs from MNEMO_URL=${otherUrl}`).length - 1;
    check(mismatch === 1, "  ... a MNEMO_URL that differs from the plugin's url is logged once", st.err.slice(-1500));
    check(stText.code === 0 && new RegExp(`files: +${direct.files}\\b`).test(stText.out) && /mode: +keyword/.test(stText.out) &&
      stText.out.includes(`route:     daemon at ${daemonUrl}`) && /last sync: +\d{4}-/.test(stText.out),
      "openclaw memory status: files, chunks, mode, last sync, route", stText.out + stText.err);
    check(se.code === 0 && se.json?.results?.[0]?.path === "memory/2026-11-29.md" && se.json.results.length <= 3 && se.json?.mode === "keyword",
      "openclaw memory search --json answers from the workspace through mnemo", se.json ?? se.out + se.err);
    const am = all.json?.memory;
    check(all.json && am?.agentId === "main" && am?.files === direct.files && am?.chunks === direct.chunks && am?.custom?.mnemo?.mode === "keyword" &&
      am?.custom?.mnemo?.lastSync === direct.lastSync?.at && all.json?.memoryPlugin?.slot === "mnemo",
      "openclaw status --json --all: \"memory\" is mnemo's state (files, chunks, mode, last sync)", am ?? all.out.slice(0, 800) + all.err.slice(-800));

    await providerSettings(gw);

    /* openclaw memory index: a new note, then a forced rebuild; the daemon keeps answering */
    fs.writeFileSync(path.join(ws, "memory/2026-11-30.md"), "# 2026-11-30\n\n- The second canary is marmot heliotrope 0815.\n");
    const ix = await gw.cli(["memory", "index", "--force", "--json"]);
    check(ix.code === 0 && ix.json?.[0]?.rebuilt === true && ix.json?.[0]?.filesSeen === direct.files + 1,
      "openclaw memory index --force: rebuilt, with the new note", ix.json ?? ix.out + ix.err);
    r = await gw.invoke("memory_search", { query: "marmot heliotrope" });
    check(r.details?.results?.[0]?.path === "memory/2026-11-30.md", "  ... and memory_search finds the new note", r.details);

    r = await gw.invoke("memory_get", { path: "memory/2026-11-29.md", from: 3, lines: 1 });
    check(r.details?.status === "ok" && r.details?.text?.includes("zephyr quokka lantern 4711") && r.details?.from === 3 && r.details?.lines === 1 &&
      r.details?.truncated === true && r.details?.nextFrom === 4, "memory_get: status ok, text, from, lines, truncated, nextFrom", r.details);
    r = await gw.invoke("memory_get", { path: "memory/2026-11-29.md#L3-L3" });
    check(r.details?.status === "ok" && r.details?.text?.includes("zephyr quokka lantern 4711") && r.details?.from === 3 && r.details?.lines === 1,
      "memory_get of a citation (path#L3-L3): those lines", r.details);
    r = await gw.invoke("memory_get", { path: "memory/1999-01-01.md" });
    check(r.details?.status === "not_found" && r.details?.text === "", "memory_get of a missing note: status not_found", r.details);
    r = await gw.invoke("memory_get", { path: "../../etc/passwd" });
    check(r.details?.status === "error" && r.details?.code === "MEMORY_PATH_NOT_ALLOWED", "memory_get outside the memory roots: error MEMORY_PATH_NOT_ALLOWED", r.details);

    /* a whole agent turn: recall before prompt build, then the model's memory_search call */
    const turn = await gw.chat("can we ship the hotfix on friday?");
    check(turn.status === 200 && /zephyr quokka lantern 4711/.test(turn.body?.choices?.[0]?.message?.content ?? ""),
      "agent turn through /v1/chat/completions with a scripted model completes", turn.body);
    const first = model.requests.find((q) => Array.isArray(q.body.messages) && !q.body.messages.some((m) => m.role === "tool"));
    const userText = JSON.stringify(first?.body?.messages?.filter((m) => m.role === "user") ?? []);
    check(/<relevant-memories>/.test(userText) && /No production deploys on Fridays/.test(userText) && /Source: MEMORY\.md#L40/.test(userText),
      "before_prompt_build: trigger recall is in the prompt the model gets", userText.slice(0, 1500));
    check(/<recalled-memories>/.test(userText) && /User is Chris, senior platform engineer/.test(userText),
      "before_prompt_build: the <recalled-memories> block is in the prompt", userText.slice(0, 1500));
    const toolNames = JSON.stringify(first?.body?.tools ?? []);
    check(/memory_search \(mnemo\)/.test(JSON.stringify(first?.body?.messages ?? [])) || /"memory_search"/.test(toolNames),
      "the model is offered memory_search from the mnemo plugin");
    const second = model.requests.find((q) => Array.isArray(q.body.messages) && q.body.messages.some((m) => m.role === "tool"));
    const toolText = JSON.stringify(second?.body?.messages?.filter((m) => m.role === "tool") ?? []);
    check(/memory\/2026-11-29\.md/.test(toolText) && /\\+"backend\\+": *\\+"mnemo/.test(toolText),
      "the model's memory_search call is answered by mnemo (the tool result it reads)", toolText.slice(0, 1500));
    model.close();

    /* stop the daemon, break the index: OpenClaw's unavailable result, quickly */
    try {
      process.kill(JSON.parse(fs.readFileSync(`${db}.serve.pid`, "utf8")).pid, "SIGTERM");
    } catch {
      /* gone */
    }
    for (let i = 0; i < 30 && (await health(daemonUrl)); i++) await sleep(100);
    fs.writeFileSync(db, Buffer.alloc(8192, 0x5a));
    const t = Date.now();
    r = await gw.invoke("memory_search", { query: "postgres" });
    const ms = Date.now() - t;
    const d = r.details;
    check(r.status === 200 && d?.disabled === true && d?.unavailable === true && Array.isArray(d?.results) && d.results.length === 0 &&
      typeof d?.error === "string" && typeof d?.warning === "string" && typeof d?.action === "string" && d?.debug?.error === d?.error,
      `mnemo failing: OpenClaw's "memory unavailable" result (${ms} ms)`, d);
    await gw.stop();
    const leftA = await noServeLeft(db);
    check(leftA.length === 0, "no mnemo serve left after gateway A stopped", leftA);
    check(!/plugin.*mnemo.*(failed|error)/i.test(gw.log().split("\n").filter((l) => !/name conflict/.test(l)).join("\n")),
      "gateway A log has no mnemo plugin errors");
  };
}

/*
 * `openclaw memory index|search|status` (separate CLI processes loading the plugin) with a
 * config whose memory.search names provider openai, a model, remote.baseUrl (a fake embedding
 * server), remote.apiKey, remote.headers, input types, a fallback and a cache setting. The
 * plugin runs mnemo through a wrapper that records its command lines.
 */
async function providerSettings(gw) {
  const emb = await fakeEmbedder();
  const key = `e2e-secret-${Math.random().toString(36).slice(2)}`;
  const vdir = path.join(tmp, "provider");
  fs.mkdirSync(vdir, { recursive: true });
  const vdb = path.join(vdir, "index.sqlite");
  const argvLog = path.join(vdir, "argv.log");
  const wrapper = path.join(vdir, "mnemo-wrapper.sh");
  fs.writeFileSync(wrapper, `#!/bin/sh\nprintf '%s\\n' "$*" >>'${argvLog}'\nexec '${mnemoBin}' "$@"\n`, { mode: 0o755 });
  const config = structuredClone(gw.config);
  config.plugins.entries.mnemo.config = { bin: wrapper, db: vdb, daemon: false, timeoutMs: 20000 };
  config.memory = {
    search: {
      provider: "openai",
      model: "e2e-embed-model",
      remote: { baseUrl: `${emb.url}/v1`, apiKey: key, headers: { "X-E2E-Team": "memory" } },
      queryInputType: "query-e2e",
      documentInputType: "passage-e2e",
      extraPaths: [extraDir],
      fallback: "gemini",
      cache: { enabled: true },
    },
  };
  const vcfg = path.join(gw.state, "openclaw-provider.json");
  fs.writeFileSync(vcfg, JSON.stringify(config, null, 2));
  const env = { OPENCLAW_CONFIG_PATH: vcfg };
  const ix = await gw.cli(["memory", "index", "--json"], env);
  const docs = emb.requests.filter((q) => q.body?.input_type === "passage-e2e");
  check(ix.code === 0 && docs.length > 0 && docs.every((q) => q.body.model === "e2e-embed-model" && q.url === "/v1/embeddings"),
    "memory.search provider openai, model, remote.baseUrl, documentInputType: openclaw memory index embeds through them",
    { index: ix.json ?? ix.out + ix.err, requests: emb.requests.map((q) => ({ url: q.url, model: q.body?.model, type: q.body?.input_type })) });
  check(docs.length > 0 && docs.every((q) => q.headers.authorization === `Bearer ${key}` && q.headers["x-e2e-team"] === "memory"),
    "  ... with remote.apiKey and remote.headers on the requests", docs[0]?.headers);
  const before = emb.requests.length;
  const [se, st, sx] = await Promise.all([
    gw.cli(["memory", "search", "--json", "ocelot tamarind"], env),
    gw.cli(["memory", "status", "--json"], env),
    gw.cli(["memory", "status"], env),
  ]);
  const queries = emb.requests.slice(before).filter((q) => q.body?.input_type === "query-e2e");
  check(se.code === 0 && se.json?.results?.[0]?.path?.endsWith("extra-notes/runbook.md") && se.json?.mode === "hybrid" && queries.length > 0,
    "  ... openclaw memory search: hybrid, the query embedded with queryInputType, the extraPaths note first",
    { search: se.json ?? se.out + se.err, queries: queries.length });
  const s0 = st.json?.[0]?.status;
  const set = s0?.custom?.mnemo?.settings;
  check(st.code === 0 && s0?.provider === "openai" && s0?.model === "e2e-embed-model" &&
    set?.mapped?.includes("memory.search.remote.apiKey -> apiKeyEnv") && set?.ignored?.some((i) => i.key === "memory.search.cache"),
    "  ... openclaw memory status: provider and model, the settings passed and those not used", s0 ?? st.out + st.err);
  check(sx.code === 0 && /settings: +provider, model, baseUrl, headers, apiKeyEnv, queryInputType, documentInputType, extraPaths\b/.test(sx.out) &&
    /not used: +memory\.search\.cache \(/.test(sx.out) && /mode: +hybrid \(openai e2e-embed-model\)/.test(sx.out),
    "  ... openclaw memory status (text): the settings passed and those not used", sx.out + sx.err);
  const logs = st.out + st.err;
  check(logs.split("memory.search.fallback (gemini) has no equivalent").length === 2 && logs.includes("not used for agent main: memory.search.cache"),
    "  ... the fallback and the unused settings are logged once", logs.slice(-2000));
  const argv = fs.readFileSync(argvLog, "utf8");
  const files = fs.readdirSync(vdir).filter((f) => f !== "argv.log").map((f) => fs.readFileSync(path.join(vdir, f)));
  check(argv.includes("index --json") && !argv.includes(key) && !files.some((b) => b.includes(key)) &&
    ![ix, se, st, sx].some((x) => (x.out + x.err).includes(key)),
    "  ... the API key is on no mnemo command line, in no index file and in no output", argv);
  emb.close();
}

async function gatewayB() {
  const daemonPort = await freePort();
  const db = path.join(tmp, "b.sqlite");
  daemonPidFiles.push(`${db}.serve.pid`);
  const daemonUrl = `http://127.0.0.1:${daemonPort}`;
  const plug = path.join(tmp, "intercept-plugin");
  copyDir(path.join(here, "fixtures/intercept-plugin"), plug);
  copyDir(path.join(src, "integrations/openclaw/hooks/memory-recall"), path.join(plug, "memory-recall"));
  const hookEnv = { MNEMO_BIN: mnemoBin, MNEMO_WORKSPACE: ws, MNEMO_DB: db, MNEMO_URL: daemonUrl };
  /* the hook pack installed by install.sh into <state>/hooks/memory-recall (managed hooks) */
  const starting = startGateway("b", {
    install: [],
    agents: { defaults: { workspace: ws } },
    hooks: { internal: { entries: { "memory-recall": { enabled: true, env: hookEnv } } } },
    plugins: {
      load: { paths: [plug] },
      entries: {
        "mnemo-intercept-test": { enabled: true, config: { bin: mnemoBin, workspace: ws, db, url: daemonUrl } },
      },
    },
  });
  /* the Gateway starts now; the checks run when the caller is ready for them */
  return async () => {
    const gw = await starting;
    console.log("2. gateway B: memory-core in the slot, memory_search through before_tool_call; the hook pack");
    /* the hook pack's gateway:startup handler starts the daemon */
    let h = null;
    let pid = null;
    for (let i = 0; i < 100 && !(h && pid); i++) {
      h = await health(daemonUrl);
      try {
        pid = JSON.parse(fs.readFileSync(`${db}.serve.pid`, "utf8"));
      } catch {
        pid = null; /* not written yet */
      }
      if (!(h && pid)) await sleep(100);
    }
    check(h?.ok === true && pid?.workspace === ws, "hook pack memory-recall (gateway:startup) started `mnemo serve` for the workspace", pid ?? h);

    let r = await gw.invoke("memory_search", { query: "zephyr quokka lantern" });
    const blocked = r.details?.status === "blocked";
    let payload = null;
    try {
      payload = JSON.parse(r.text ?? r.body?.error?.message ?? "");
    } catch {
      /* not JSON */
    }
    check(blocked || r.status === 403, "before_tool_call: memory_search is blocked by the hook", r.body);
    check(payload?.debug?.backend === "mnemo" && payload?.results?.[0]?.path === "memory/2026-11-29.md" && hasSearchShape(payload),
      "  ... and the block reason the model reads is mnemo's memory_search result", payload ?? r.body);

    r = await gw.invoke("memory_search", { query: "[broken] zephyr quokka lantern" });
    check(r.status === 200 && r.details?.status !== "blocked" && r.details?.debug?.backend !== "mnemo" && Array.isArray(r.details?.results),
      "mnemo failing: the call falls through to memory-core's memory_search", r.body);
    /* killed hard, the Gateway can stop nothing: the daemon the hook started exits by itself */
    const before = serveProcesses(db);
    await gw.kill();
    const leftB = await noServeLeft(db);
    check(before.length === 1 && gw.exited() && leftB.length === 0, "gateway B killed (SIGKILL): the daemon its hook started exits too", { before, leftB });
  };
}

/* ------------------------------------------------------------ main */

try {
  await moduleChecks();
  /* both Gateways start at once (most of the run time is their start-up) */
  const checksA = await gatewayA();
  const checksB = await gatewayB();
  await checksA();
  await checksB();
} catch (e) {
  failures++;
  console.log(`  FAIL ${e?.stack || e}`);
}
cleanup();
const secs = ((Date.now() - started) / 1000).toFixed(1);
if (failures) {
  console.log(`openclaw e2e: FAILED (${failures} checks, ${secs} s)`);
  process.exit(1);
}
console.log(`openclaw e2e: ok (${secs} s)`);
process.exit(0);
