/*
 * mnemo-client.ts - talks to mnemo for the OpenClaw plugin and the memory-recall hook.
 *
 * Every call has one hard deadline (timeoutMs). It first asks the `mnemo serve` daemon on
 * loopback (POST /v1/search, /v1/get, /v1/recall); when nothing listens there it starts the
 * daemon in the background (autoStart) and answers the current call with the `mnemo` CLI.
 * Errors reported by mnemo itself ({"error":{"code","message"}}) are final; a daemon that
 * cannot be reached, times out or answers something else falls back to the CLI while time
 * remains. Node built-ins only.
 *
 * The daemon address has one source of truth: the `url` option (the plugin's config, or the
 * hook pack's), else MNEMO_URL, else http://127.0.0.1:7373; when the option and MNEMO_URL
 * disagree that is logged once. A daemon this module starts is passed `--parent <this pid>`
 * (it exits when this process is gone) and is stopped by mnemoStopDaemons() (Gateway stop).
 * When the start fails because another daemon already serves the index, the client reads
 * that daemon's address from the index's pid file, logs once and uses it.
 *
 * Settings (the `env` option: MNEMO_* variables made from OpenClaw's memory search config by
 * openclaw-settings.ts, and an API key variable) reach every mnemo process the same way: the
 * environment of the CLI calls and of the daemon this module starts. A daemon that is already
 * running was started with its own environment: when it reports another provider or model
 * than the settings ask for (the `expect` option), that is logged once and the CLI answers.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

export type MnemoOptions = {
  /** mnemo executable (default "mnemo", or MNEMO_BIN). */
  bin?: string;
  /** Workspace folder: MEMORY.md, USER.md, memory/. */
  workspace?: string;
  /** Index file (default: mnemo's own). */
  db?: string;
  /** Daemon address (default http://127.0.0.1:7373, or MNEMO_URL). */
  url?: string;
  /** Bearer token for a daemon on a non-loopback address (or MNEMO_TOKEN). */
  token?: string;
  /** Ask the daemon at all (default true). */
  daemon?: boolean;
  /** Start `mnemo serve` when nothing listens on a loopback url (default true). */
  autoStart?: boolean;
  /** Hard deadline for one call, daemon and CLI fallback together (default 2000 ms). */
  timeoutMs?: number;
  /** Environment variables for every mnemo process started (settings; an API key). */
  env?: Record<string, string>;
  /** The provider and model a running daemon must report to be used for these settings. */
  expect?: { provider?: string; model?: string };
  /** Which OpenClaw settings were passed and which were not (for status). */
  openclaw?: { mapped: string[]; ignored: Array<{ key: string; why: string }> };
};

export type SearchParams = {
  query: string;
  maxResults?: number;
  minScore?: number;
  corpus?: "memory" | "sessions" | "all";
};

export type GetParams = { path: string; from?: number; lines?: number };

export type RecallParams = {
  message: string;
  userId?: string;
  agentId?: string;
  runId?: string;
  triggers?: boolean;
  memories?: boolean;
};

export type SearchHit = {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  snippet: string;
  source: string;
  citation?: string;
  [key: string]: unknown;
};

export type SearchAnswer = {
  results: SearchHit[];
  mode?: string;
  provider?: string;
  model?: string;
  fallback?: unknown;
  [key: string]: unknown;
};

export type GetAnswer = {
  path: string;
  from: number;
  to: number;
  totalLines?: number;
  truncated?: boolean;
  nextFrom?: number;
  text: string;
};

export type RecallAnswer = { recalled: string; triggers: string };

/** A failure: mnemo's own error code ("not_found", "denied", ...) or "timeout", "spawn", "bad_output". */
export class MnemoError extends Error {
  code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "MnemoError";
    this.code = code;
  }
}

/* ---------------------------------------------------------------- logging */

type Logger = { warn?: (msg: string) => void; info?: (msg: string) => void };
let logger: Logger = { warn: (m) => console.warn(m) };
const loggedOnce = new Set<string>();
/** Where warnings go (the plugin passes OpenClaw's api.logger); default console.warn. */
export function setMnemoLogger(l: Logger | undefined): void {
  logger = l ?? { warn: (m) => console.warn(m) };
}
/* Logs MSG once per process for KEY (a daemon that cannot be used is not news on every call). */
function warnOnce(key: string, msg: string): void {
  logOnce(key, msg, "warn");
}
/** Logs MSG once per process for KEY, as a warning or (level "info") an information. */
export function logOnce(key: string, msg: string, level: "warn" | "info" = "warn"): void {
  if (loggedOnce.has(key)) return;
  loggedOnce.add(key);
  try {
    if (level === "info" && logger.info) logger.info(msg);
    else logger.warn?.(msg);
  } catch {
    /* a logger that throws must not break a search */
  }
}

let lastRouteValue: "daemon" | "cli" | "" = "";
/** Which route answered the last call ("daemon" or "cli"); for tests and latency reports. */
export function lastRoute(): "daemon" | "cli" | "" {
  return lastRouteValue;
}

const DEFAULT_URL = "http://127.0.0.1:7373";
const DEFAULT_TIMEOUT_MS = 2000;
/* After a failed connection, skip the daemon for this long (calls go straight to the CLI). */
const DAEMON_RETRY_MS = 1000;
/* After a daemon that accepted but did not answer in time, skip it for this long. */
const DAEMON_HUNG_RETRY_MS = 5000;
/* Do not spawn the daemon more often than this. */
const SPAWN_INTERVAL_MS = 30000;

type DaemonState = {
  downUntil: number;
  spawnedAt: number;
  /* the workspace and settings this daemon was last checked to serve */
  checked: string;
  mismatch: boolean;
  /* the settings (workspace, provider, model) this daemon was found not to serve */
  refused: Set<string>;
  /* the address of the daemon that already serves this index, when it is not url */
  redirect?: string;
};
const daemons = new Map<string, DaemonState>();

function env(name: string): string | undefined {
  const v = process.env[name];
  return v && v.trim() ? v.trim() : undefined;
}

const trimUrl = (u: string) => u.trim().replace(/\/+$/, "");

/**
 * The daemon address and where it came from: the url option ("config"), else MNEMO_URL
 * ("env"), else the default. A url option that differs from MNEMO_URL is logged once.
 */
export function mnemoUrl(opts: MnemoOptions): { url: string; source: "config" | "env" | "default" } {
  const fromEnv = env("MNEMO_URL");
  if (opts.url && opts.url.trim()) {
    const url = trimUrl(opts.url);
    if (fromEnv && trimUrl(fromEnv) !== url)
      warnOnce(
        `url-mismatch ${url} ${fromEnv}`,
        `mnemo: the configured url ${url} differs from MNEMO_URL=${fromEnv}; using ${url} ` +
          "(set both to the same address, or unset MNEMO_URL)",
      );
    return { url, source: "config" };
  }
  if (fromEnv) return { url: trimUrl(fromEnv), source: "env" };
  return { url: DEFAULT_URL, source: "default" };
}

function resolved(opts: MnemoOptions) {
  return {
    bin: opts.bin || env("MNEMO_BIN") || "mnemo",
    workspace: opts.workspace ? path.resolve(opts.workspace) : undefined,
    db: opts.db,
    url: mnemoUrl(opts).url,
    token: opts.token || env("MNEMO_TOKEN"),
    daemon: opts.daemon !== false,
    autoStart: opts.autoStart !== false,
    timeoutMs: opts.timeoutMs && opts.timeoutMs > 0 ? opts.timeoutMs : DEFAULT_TIMEOUT_MS,
    env: opts.env ?? {},
    expect: opts.expect ?? {},
  };
}
type Resolved = ReturnType<typeof resolved>;

function isLoopback(url: string): boolean {
  try {
    const h = new URL(url).hostname;
    return h === "127.0.0.1" || h === "localhost" || h === "[::1]" || h === "::1";
  } catch {
    return false;
  }
}

/*
 * The environment of a mnemo process: this process's, with the settings over it. A setting
 * that replaces a different MNEMO_* value inherited from the Gateway's environment is logged
 * once (the value is not: it may be a header or a key).
 */
function childEnv(o: Resolved): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(o.env)) {
    const had = process.env[k];
    if (had !== undefined && had !== v && k.startsWith("MNEMO_"))
      warnOnce(`env ${k}`, `mnemo: ${k} from the environment is replaced by the setting the plugin passes (OpenClaw's memory search config or the plugin's settings)`);
    e[k] = v;
  }
  return e;
}

function globalArgs(o: Resolved): string[] {
  const a: string[] = [];
  if (o.workspace) a.push("--workspace", o.workspace);
  if (o.db) a.push("--db", o.db);
  return a;
}

/* ---------------------------------------------------------------- daemon */

type HttpReply = { status: number; body: unknown };
class DaemonUnavailable extends Error {}

function httpJson(o: Resolved, method: string, route: string, body: unknown, ms: number): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    let u: URL;
    try {
      u = new URL(o.url + route);
    } catch {
      reject(new DaemonUnavailable(`bad daemon url ${o.url}`));
      return;
    }
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { accept: "application/json", connection: "keep-alive" };
    if (data) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(data.length);
    }
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let settled = false;
    const done = (f: () => void) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        f();
      }
    };
    const req = http.request(
      { hostname: u.hostname.replace(/^\[|\]$/g, ""), port: u.port || 80, path: u.pathname, method, headers, agent: keepAlive },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (e) => done(() => reject(new DaemonUnavailable(String(e)))));
        res.on("end", () =>
          done(() => {
            const text = Buffer.concat(chunks).toString("utf8");
            try {
              resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
            } catch {
              reject(new DaemonUnavailable(`daemon answered HTTP ${res.statusCode} without JSON`));
            }
          }),
        );
      },
    );
    const timer = setTimeout(() => {
      done(() => {
        const err = new DaemonUnavailable(`daemon did not answer within ${ms} ms`);
        (err as DaemonUnavailable & { timedOut?: boolean }).timedOut = true;
        reject(err);
      });
      req.destroy();
    }, Math.max(1, ms));
    req.on("error", (e: NodeJS.ErrnoException) =>
      done(() => {
        const err = new DaemonUnavailable(`daemon unreachable: ${e.code || e.message}`);
        (err as DaemonUnavailable & { refused?: boolean }).refused =
          e.code === "ECONNREFUSED" || e.code === "ECONNRESET" || e.code === "EADDRNOTAVAIL";
        reject(err);
      }),
    );
    if (data) req.write(data);
    req.end();
  });
}
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 4 });

function stateOf(o: Resolved): DaemonState {
  let s = daemons.get(o.url);
  if (!s) {
    s = { downUntil: 0, spawnedAt: 0, checked: "", mismatch: false, refused: new Set() };
    daemons.set(o.url, s);
  }
  return s;
}

/* Daemons this process started (pid -> child), stopped by mnemoStopDaemons(). */
const spawned = new Map<number, ChildProcess>();
/* The pid file line `mnemo serve` prints when another daemon serves the index (exit code 6). */
const BUSY_RE = /already serves this index: (\{.*\})/;

/*
 * Spawns `mnemo serve --listen HOST:PORT --parent <pid>` detached. Its standard error is read
 * (and discarded after the first 4 KB) so that a daemon that exits at once can be explained:
 * another daemon already serving the index (exit 6) redirects this url to that daemon's
 * address; any other early exit is logged once.
 */
function startDaemon(o: Resolved, s: DaemonState): void {
  if (!o.autoStart || !isLoopback(o.url) || Date.now() - s.spawnedAt < SPAWN_INTERVAL_MS) return;
  s.spawnedAt = Date.now();
  let listen = "127.0.0.1:7373";
  try {
    const u = new URL(o.url);
    listen = `${u.hostname.replace(/^\[|\]$/g, "")}:${u.port || 80}`;
  } catch {
    /* default */
  }
  try {
    const child = spawn(o.bin, [...globalArgs(o), "serve", "--listen", listen, "--parent", String(process.pid)], {
      detached: true,
      stdio: ["ignore", "ignore", "pipe"],
      env: childEnv(o),
    });
    let err = "";
    child.stderr?.on("data", (c: Buffer) => {
      if (err.length < 4096) err += c.toString("utf8");
    });
    child.stderr?.on("error", () => {});
    (child.stderr as unknown as { unref?: () => void })?.unref?.();
    child.on("error", (e: NodeJS.ErrnoException) =>
      warnOnce(`spawn ${o.bin}`, `mnemo: cannot start the daemon (${o.bin}): ${e.code || e.message}`),
    );
    child.on("exit", (code, signal) => {
      if (child.pid) spawned.delete(child.pid);
      const m = BUSY_RE.exec(err);
      if (code === 6 && m) {
        try {
          const info = JSON.parse(m[1]) as { url?: string; pid?: number };
          if (info.url && trimUrl(info.url) !== o.url) {
            s.redirect = trimUrl(info.url);
            s.downUntil = 0;
            warnOnce(
              `redirect ${o.url} ${s.redirect}`,
              `mnemo: a daemon for this index already runs at ${s.redirect} (pid ${info.pid}), not at the ` +
                `configured ${o.url}; using it. Set the plugin's url (and MNEMO_URL) to one address.`,
            );
            return;
          }
        } catch {
          /* fall through to the generic message */
        }
      }
      if (signal === null && code !== 0)
        warnOnce(
          `exit ${o.url}`,
          `mnemo: the daemon for ${o.url} exited with code ${code}: ${err.trim().split("\n").slice(-2).join(" ")}; ` +
            "answering from the CLI",
        );
    });
    if (child.pid) spawned.set(child.pid, child);
    child.unref();
  } catch (e) {
    warnOnce(`spawn ${o.bin}`, `mnemo: cannot start the daemon (${o.bin}): ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * Stops the daemons this process started (SIGTERM; they finish the requests in flight) and
 * resolves when they are gone or after ms. The plugin calls it when the Gateway stops.
 */
export async function mnemoStopDaemons(ms = 3000): Promise<number[]> {
  const pids = [...spawned.keys()];
  for (const child of spawned.values()) {
    try {
      child.kill("SIGTERM");
    } catch {
      /* gone */
    }
  }
  const until = Date.now() + ms;
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  while (pids.some(alive) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  spawned.clear();
  return pids;
}

/** Pids of the daemons this process started that are still running. */
export function mnemoSpawnedDaemons(): number[] {
  return [...spawned.keys()];
}

/* Returns the daemon's JSON, or throws DaemonUnavailable (caller falls back) or MnemoError (final). */
async function viaDaemon(o: Resolved, route: string, body: unknown, deadline: number, method = "POST"): Promise<unknown> {
  const s = stateOf(o);
  const want = `${o.workspace ?? ""}\0${o.expect.provider ?? ""}\0${o.expect.model ?? ""}`;
  if (!o.daemon || s.mismatch || s.refused.has(want) || Date.now() < s.downUntil) throw new DaemonUnavailable("daemon skipped");
  const d = s.redirect ? { ...o, url: s.redirect } : o;
  try {
    if ((o.workspace || o.expect.provider || o.expect.model) && s.checked !== want) {
      /* once per daemon, workspace and settings: is this daemon serving our workspace, with
         the provider and model asked for? */
      const h = await httpJson(d, "GET", "/v1/status", undefined, Math.min(1000, (deadline - Date.now()) / 2));
      const ws = (h.body as { workspace?: string })?.workspace;
      if (h.status !== 200) throw new DaemonUnavailable(`daemon status HTTP ${h.status}`);
      if (o.workspace && ws && path.resolve(ws) !== o.workspace) {
        s.mismatch = true; /* it serves another workspace: use the CLI from now on */
        warnOnce(
          `workspace ${d.url} ${o.workspace}`,
          `mnemo: the daemon at ${d.url} serves ${ws}, not ${o.workspace}; answering from the CLI ` +
            "(slower). Give this workspace its own url.",
        );
        throw new DaemonUnavailable(`daemon serves ${ws}, not ${o.workspace}`);
      }
      const other = otherSettings(o, h.body);
      if (other) {
        s.refused.add(want); /* started with other settings: the CLI runs with ours */
        warnOnce(
          `settings ${d.url} ${want}`,
          `mnemo: the daemon at ${d.url} runs ${other}; answering from the CLI (slower). ` +
            "Stop that daemon (the plugin starts one with these settings) or give this agent its own url.",
        );
        throw new DaemonUnavailable(`daemon runs ${other}`);
      }
      s.checked = want;
      if (route === "/v1/status" && method === "GET") return h.body;
    }
    const r = await httpJson(d, method, route, method === "GET" ? undefined : body, deadline - Date.now());
    const err = (r.body as { error?: { code?: string; message?: string } })?.error;
    if (r.status >= 200 && r.status < 300 && !err) return r.body;
    if (err && r.status !== 401 && r.status !== 403 && r.status !== 404 && r.status !== 405)
      throw new MnemoError(err.code || "error", err.message || `mnemo daemon: HTTP ${r.status}`);
    throw new DaemonUnavailable(`daemon answered HTTP ${r.status}`);
  } catch (e) {
    if (e instanceof DaemonUnavailable && (e as DaemonUnavailable & { refused?: boolean }).refused) {
      s.downUntil = Date.now() + DAEMON_RETRY_MS;
      s.checked = "";
      s.refused.clear(); /* a daemon started next runs with the settings of its start */
      if (s.redirect) s.redirect = undefined; /* that daemon is gone: back to the configured url */
      startDaemon(o, s);
    } else if (e instanceof DaemonUnavailable && (e as DaemonUnavailable & { timedOut?: boolean }).timedOut) {
      s.downUntil = Date.now() + DAEMON_HUNG_RETRY_MS; /* something listens but does not answer */
    }
    throw e;
  }
}

/* What differs between a daemon's status and the provider and model asked for, or "". */
function otherSettings(o: Resolved, status: unknown): string {
  const emb = ((status as { embedding?: Record<string, unknown> })?.embedding ?? {}) as Record<string, unknown>;
  const diffs: string[] = [];
  const p = o.expect.provider;
  if (p && p !== "auto" && typeof emb.configured === "string" && emb.configured !== p)
    diffs.push(`provider ${emb.configured}, not ${p}`);
  const m = o.expect.model;
  if (m && typeof emb.model === "string" && emb.model !== m) diffs.push(`model ${emb.model}, not ${m}`);
  return diffs.join(" and ");
}

/* ---------------------------------------------------------------- CLI */

function runCli(o: Resolved, args: string[], deadline: number): Promise<string> {
  const ms = deadline - Date.now();
  if (ms <= 0) return Promise.reject(new MnemoError("timeout", `mnemo did not answer within ${o.timeoutMs} ms`));
  return new Promise((resolve, reject) => {
    execFile(
      o.bin,
      [...globalArgs(o), ...args],
      { timeout: ms, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024, windowsHide: true, env: childEnv(o) },
      (error, stdout, stderr) => {
        const out = String(stdout);
        if (error && (error as NodeJS.ErrnoException).code === "ENOENT") {
          reject(new MnemoError("spawn", `mnemo executable not found: ${o.bin}`));
          return;
        }
        if (error && (error as { killed?: boolean }).killed) {
          reject(new MnemoError("timeout", `mnemo did not answer within ${o.timeoutMs} ms`));
          return;
        }
        if (error && !out.trim()) {
          reject(new MnemoError("cli_failed", String(stderr).trim() || String(error.message)));
          return;
        }
        resolve(out);
      },
    );
  });
}

function parseCliJson(out: string): unknown {
  let j: unknown;
  try {
    j = JSON.parse(out);
  } catch {
    throw new MnemoError("bad_output", "mnemo printed something other than JSON");
  }
  const err = (j as { error?: { code?: string; message?: string } })?.error;
  if (err) throw new MnemoError(err.code || "error", err.message || "mnemo failed");
  return j;
}

async function call<T>(
  o: Resolved,
  route: string,
  body: unknown,
  cli: (deadline: number) => Promise<T>,
  method = "POST",
): Promise<T> {
  const deadline = Date.now() + o.timeoutMs;
  try {
    const r = (await viaDaemon(o, route, body, deadline, method)) as T;
    lastRouteValue = "daemon";
    return r;
  } catch (e) {
    if (!(e instanceof DaemonUnavailable)) throw e;
  }
  const r = await cli(deadline);
  lastRouteValue = "cli";
  return r;
}

/* ---------------------------------------------------------------- API */

export async function mnemoSearch(opts: MnemoOptions, p: SearchParams): Promise<SearchAnswer> {
  const o = resolved(opts);
  const body: Record<string, unknown> = { query: p.query };
  if (p.maxResults) body.maxResults = p.maxResults;
  if (p.minScore !== undefined) body.minScore = p.minScore;
  if (p.corpus) body.corpus = p.corpus;
  const answer = await call<SearchAnswer>(o, "/v1/search", body, async (deadline) => {
    /* bound a remote embedding call by what is left of the deadline (keywords answer if it
       times out, with mnemo's default provider policy) */
    const embedMs = Math.max(100, deadline - Date.now() - 300);
    const args = ["--set", `embedQueryTimeoutMs=${embedMs}`, "search", "--json"];
    if (p.maxResults) args.push("-n", String(p.maxResults));
    if (p.minScore !== undefined) args.push("--min-score", String(p.minScore));
    if (p.corpus) args.push("--corpus", p.corpus);
    args.push("--", p.query);
    return parseCliJson(await runCli(o, args, deadline)) as SearchAnswer;
  });
  if (!answer || !Array.isArray(answer.results)) throw new MnemoError("bad_output", "mnemo answered without results");
  return answer;
}

export async function mnemoGet(opts: MnemoOptions, p: GetParams): Promise<GetAnswer> {
  const o = resolved(opts);
  const body: Record<string, unknown> = { path: p.path };
  if (p.from) body.from = p.from;
  if (p.lines) body.lines = p.lines;
  const answer = await call<GetAnswer>(o, "/v1/get", body, async (deadline) => {
    const args = ["get", "--json"];
    if (p.from) args.push("--from", String(p.from));
    if (p.lines) args.push("--lines", String(p.lines));
    args.push("--", p.path);
    return parseCliJson(await runCli(o, args, deadline)) as GetAnswer;
  });
  if (!answer || typeof answer.text !== "string") throw new MnemoError("bad_output", "mnemo answered without text");
  return answer;
}

/** Trigger recall and/or the recalled-memories block; "" for what is off or empty. */
export async function mnemoRecall(opts: MnemoOptions, p: RecallParams): Promise<RecallAnswer> {
  const o = resolved(opts);
  const wantTriggers = p.triggers !== false;
  const wantMemories = p.memories === true;
  if (!wantTriggers && !wantMemories) return { recalled: "", triggers: "" };
  const body: Record<string, unknown> = { message: p.message, triggers: wantTriggers };
  if (p.userId) body.user_id = p.userId;
  if (p.agentId) body.agent_id = p.agentId;
  if (p.runId) body.run_id = p.runId;
  if (!wantMemories) body.strategy = "manual";
  const answer = await call<RecallAnswer>(o, "/v1/recall", body, async (deadline) => {
    const jobs: Array<Promise<string>> = [
      wantTriggers ? runCli(o, ["recall", "--triggers", "--", p.message], deadline) : Promise.resolve(""),
      wantMemories
        ? runCli(
            o,
            ["recall", ...(p.userId ? ["--user", p.userId] : []), ...(p.runId ? ["--run", p.runId] : []), "--message", p.message],
            deadline,
          )
        : Promise.resolve(""),
    ];
    const [triggers, recalled] = await Promise.all(jobs);
    return { triggers, recalled };
  });
  const recalled = typeof answer?.recalled === "string" ? answer.recalled.trim() : "";
  const triggers = typeof answer?.triggers === "string" ? answer.triggers.trim() : "";
  return {
    /* "No stored memories found ..." and other notes are not a block to inject */
    recalled: wantMemories && recalled.startsWith("<recalled-memories>") ? recalled : "",
    triggers: wantTriggers ? triggers : "",
  };
}

/** `mnemo status --json` (GET /v1/status on the daemon): files, chunks, mode, last sync, ... */
export async function mnemoStatus(opts: MnemoOptions): Promise<Record<string, unknown>> {
  const o = resolved(opts);
  const answer = await call<Record<string, unknown>>(
    o,
    "/v1/status",
    undefined,
    async (deadline) => parseCliJson(await runCli(o, ["status", "--json"], deadline)) as Record<string, unknown>,
    "GET",
  );
  if (!answer || typeof answer !== "object") throw new MnemoError("bad_output", "mnemo answered without a status");
  return answer;
}

/**
 * `mnemo index --json [--force]`: syncs the index (always the CLI: the daemon has no index
 * route; a running daemon follows the files itself and reads the new index).
 */
export async function mnemoIndex(opts: MnemoOptions, p: { force?: boolean } = {}): Promise<Record<string, unknown>> {
  const o = resolved(opts);
  const args = ["index", "--json", ...(p.force ? ["--force"] : [])];
  const r = parseCliJson(await runCli(o, args, Date.now() + o.timeoutMs)) as Record<string, unknown>;
  lastRouteValue = "cli";
  return r;
}

/**
 * The daemon route as the client sees it: the address in use (the configured one or the
 * one it was redirected to), where the address came from, and whether the daemon answered.
 */
export function mnemoRoute(opts: MnemoOptions): {
  url: string;
  source: string;
  redirectedTo?: string;
  workspaceMismatch?: boolean;
  lastRoute: string;
  startedPids: number[];
} {
  const { url, source } = mnemoUrl(opts);
  const s = daemons.get(url);
  return {
    url,
    source,
    ...(s?.redirect ? { redirectedTo: s.redirect } : {}),
    ...(s?.mismatch ? { workspaceMismatch: true } : {}),
    lastRoute: lastRouteValue,
    startedPids: mnemoSpawnedDaemons(),
  };
}

/** GET /health, or null when no daemon answers within ms. */
export async function mnemoHealth(opts: MnemoOptions, ms = 500): Promise<Record<string, unknown> | null> {
  const o = resolved(opts);
  try {
    const r = await httpJson(o, "GET", "/health", undefined, ms);
    return r.status === 200 ? (r.body as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Starts `mnemo serve` for the workspace unless a daemon already answers. */
export async function mnemoEnsureDaemon(opts: MnemoOptions): Promise<boolean> {
  if (await mnemoHealth(opts)) return true;
  const o = resolved(opts);
  startDaemon(o, stateOf(o));
  return false;
}
