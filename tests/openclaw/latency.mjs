#!/usr/bin/env node
/*
 * latency.mjs - warm round-trip time of the plugin's memory_search, daemon route and CLI
 * route, on examples/memory. Run with Node 24 (tests/openclaw/setup.sh installs it):
 *
 *   node tests/openclaw/latency.mjs [--mnemo build/mnemo] [-n 200] [--gateway DIR/node_modules/openclaw]
 *
 * "plugin" rows call the registered tool's execute() as OpenClaw does (argument parsing,
 * mnemo, result shaping, JSON text). With --gateway, "gateway" rows also time a full
 * POST /tools/invoke on a real OpenClaw Gateway (HTTP, auth, tool policy, hooks, the tool).
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, "../..");
const args = process.argv.slice(2);
const arg = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const mnemoBin = path.resolve(arg("--mnemo", path.join(src, "build/mnemo")));
const n = Number(arg("-n", "200"));
const gatewayDir = arg("--gateway", "");
const queries = ["postgres migration", "gateway port", "who owns the orders database", "deploy on friday", "grafana dashboards"];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "mnemo-openclaw-latency-"));
const ws = path.join(tmp, "workspace");
fs.cpSync(path.join(src, "examples/memory"), ws, { recursive: true });
const db = path.join(tmp, "index.sqlite");
spawnSync(mnemoBin, ["--workspace", ws, "--db", db, "index", "--quiet"]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });

function stats(name, xs) {
  xs.sort((a, b) => a - b);
  const q = (p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(
    `${name.padEnd(22)} n=${xs.length}  mean ${mean.toFixed(2)} ms  p50 ${q(0.5).toFixed(2)}  p95 ${q(0.95).toFixed(2)}  max ${xs[xs.length - 1].toFixed(2)}`,
  );
}

async function time(fn, label, check) {
  for (let i = 0; i < 10; i++) await fn(queries[i % queries.length]); /* warm-up */
  const xs = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await fn(queries[i % queries.length]);
    xs.push(performance.now() - t);
    if (i === 0 && !check(r)) throw new Error(`${label}: unexpected answer ${JSON.stringify(r).slice(0, 300)}`);
  }
  stats(label, xs);
}

const plugin = (await import(pathToFileURL(path.join(src, "integrations/openclaw/index.ts")).href)).default;
function searchTool(config) {
  let factory;
  plugin.register({ pluginConfig: config, registerTool: (f, o) => o.names[0] === "memory_search" && (factory = f), on() {} });
  return factory({ workspaceDir: ws, sessionKey: "agent:main:main" });
}

const daemonPort = await freePort();
const daemonUrl = `http://127.0.0.1:${daemonPort}`;
const daemon = spawn(mnemoBin, ["--workspace", ws, "--db", db, "serve", "--listen", `127.0.0.1:${daemonPort}`], { stdio: "ignore" });
let gw = null;
try {
  for (let i = 0; i < 100; i++) {
    if (await fetch(`${daemonUrl}/health`).then((r) => r.ok, () => false)) break;
    await sleep(50);
  }
  console.log(`memory_search round trip, warm, examples/memory, ${os.cpus().length} CPUs, Node ${process.versions.node}`);
  const viaDaemon = searchTool({ bin: mnemoBin, db, url: daemonUrl, autoStart: false });
  await time((q) => viaDaemon.execute("t", { query: q, maxResults: 6 }), "plugin, daemon", (r) => r.details.debug?.route === "daemon");
  const viaCli = searchTool({ bin: mnemoBin, db, daemon: false });
  await time((q) => viaCli.execute("t", { query: q, maxResults: 6 }), "plugin, CLI", (r) => r.details.debug?.route === "cli");

  if (gatewayDir) {
    const state = path.join(tmp, "state");
    fs.mkdirSync(path.join(tmp, "home"), { recursive: true });
    spawnSync("sh", [path.join(src, "integrations/openclaw/install.sh"), "--no-hook"], { env: { ...process.env, OPENCLAW_STATE_DIR: state } });
    const port = await freePort();
    const token = "latency";
    const config = (daemonFlag) => ({
      gateway: { mode: "local", port, bind: "loopback", auth: { mode: "token", token } },
      logging: { file: path.join(tmp, "openclaw.log") },
      agents: { defaults: { workspace: ws } },
      plugins: {
        slots: { memory: "mnemo" },
        entries: { "memory-core": { enabled: false }, mnemo: { enabled: true, config: { bin: mnemoBin, db, url: daemonUrl, daemon: daemonFlag } } },
      },
    });
    const env = { ...process.env, HOME: path.join(tmp, "home"), OPENCLAW_STATE_DIR: state, OPENCLAW_CONFIG_PATH: path.join(state, "openclaw.json"),
      PATH: `${path.dirname(process.execPath)}:${process.env.PATH}` };
    const invoke = (q) =>
      fetch(`http://127.0.0.1:${port}/tools/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ tool: "memory_search", args: { query: q, maxResults: 6 } }),
      }).then((r) => r.json());
    for (const daemonFlag of [true, false]) {
      fs.writeFileSync(path.join(state, "openclaw.json"), JSON.stringify(config(daemonFlag)));
      gw = spawn(process.execPath, [path.join(gatewayDir, "openclaw.mjs"), "gateway", "run"], { env, stdio: "ignore", detached: true });
      for (let i = 0; i < 600; i++) {
        if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
        await sleep(100);
      }
      await time(invoke, `gateway, ${daemonFlag ? "daemon" : "CLI"}`, (r) => r.result?.details?.debug?.route === (daemonFlag ? "daemon" : "cli"));
      process.kill(-gw.pid, "SIGTERM");
      await new Promise((r) => gw.once("exit", r));
      gw = null;
    }
  }
} finally {
  if (gw) process.kill(-gw.pid, "SIGKILL");
  daemon.kill("SIGTERM");
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
