/*
 * memory-runtime.ts - mnemo as OpenClaw's memory capability: the runtime behind
 * `api.registerMemoryCapability({runtime})` (what `openclaw status --json --all` and other
 * memory consumers ask through getMemorySearchManager) and the `openclaw memory status |
 * index | search` commands (`api.registerCli`), which memory-core provides when it holds
 * the slot and which disappear when mnemo does.
 *
 * Types follow OpenClaw 2026.9.6's plugin SDK (MemoryPluginRuntime, MemorySearchManager,
 * MemoryProviderStatus in dist/plugin-entry-*.d.ts and cli-backend.types-*.d.ts); they are
 * restated here as the parts the plugin uses, since the plugin imports nothing.
 */
import {
  MnemoError,
  lastRoute,
  mnemoGet,
  mnemoIndex,
  mnemoRoute,
  mnemoSearch,
  mnemoStatus,
  type MnemoOptions,
} from "./hooks/memory-recall/mnemo-client.ts";
import { toolOptions, type PluginConfig } from "./hooks/memory-recall/memory-tools.ts";

type AnyConfig = Record<string, any>;

/* MemoryProviderStatus ("backend" is the only value the SDK's type allows). */
export type ProviderStatus = {
  backend: "builtin";
  provider: string;
  model?: string;
  requestedProvider?: string;
  files?: number;
  chunks?: number;
  dirty?: boolean;
  workspaceDir?: string;
  dbPath?: string;
  sources?: Array<"memory" | "sessions">;
  fts?: { enabled: boolean; available: boolean; error?: string };
  vector?: { enabled: boolean; available?: boolean; dims?: number };
  fallback?: { from: string; reason?: string };
  custom?: Record<string, unknown>;
};

type SearchResult = {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  vectorScore?: number;
  textScore?: number;
  snippet: string;
  source: "memory" | "sessions";
  citation?: string;
};

/** How the plugin finds the agent's workspace and whether it may start a daemon here. */
export type RuntimeHost = {
  workspaceFor(cfg: AnyConfig | undefined, agentId: string | undefined): string | undefined;
  /* true in the Gateway (its service is running): a daemon started there stops with it */
  mayStartDaemon(): boolean;
};

function optionsFor(cfg: PluginConfig, host: RuntimeHost, ocCfg: AnyConfig | undefined, agentId?: string): MnemoOptions {
  const opts = toolOptions(cfg, { workspaceDir: host.workspaceFor(ocCfg, agentId), agentId: agentId || "main" }, ocCfg ?? {});
  return { ...opts, autoStart: host.mayStartDaemon() && cfg.autoStart !== false };
}

/* mnemo status --json -> OpenClaw's MemoryProviderStatus, with mnemo's own view in custom.mnemo. */
export function providerStatus(
  st: Record<string, any>,
  route: ReturnType<typeof mnemoRoute>,
  answeredBy: string,
  settings?: MnemoOptions["openclaw"],
): ProviderStatus {
  const emb = (st.embedding ?? {}) as Record<string, any>;
  const mode = typeof st.mode === "string" ? st.mode : "keyword";
  const vectors = typeof emb.vectors === "number" ? emb.vectors : 0;
  return {
    backend: "builtin",
    provider: typeof emb.provider === "string" ? emb.provider : "none",
    ...(typeof emb.model === "string" ? { model: emb.model } : {}),
    ...(typeof emb.configured === "string" ? { requestedProvider: emb.configured } : {}),
    files: typeof st.files === "number" ? st.files : 0,
    chunks: typeof st.chunks === "number" ? st.chunks : 0,
    dirty: st.indexed === false,
    ...(typeof st.workspace === "string" ? { workspaceDir: st.workspace } : {}),
    ...(typeof st.db?.path === "string" ? { dbPath: st.db.path } : {}),
    sources: ["memory"],
    fts: { enabled: true, available: st.indexed !== false },
    vector: { enabled: mode === "hybrid", available: vectors > 0 },
    ...(mode !== "hybrid" && emb.provider && emb.provider !== "none" && emb.reason
      ? { fallback: { from: String(emb.provider), reason: String(emb.reason) } }
      : {}),
    custom: {
      mnemo: {
        version: st.version,
        mode,
        indexed: st.indexed === true,
        lastSync: st.lastSync?.at ?? null,
        vectors,
        ...(emb.reason ? { embeddingReason: emb.reason } : {}),
        memories: st.memories?.count ?? 0,
        warnings: Array.isArray(st.warnings) ? st.warnings : [],
        route: { ...route, answeredBy },
        /* which OpenClaw memory settings reached mnemo, and which did not (key names only) */
        settings: { mapped: settings?.mapped ?? [], ignored: settings?.ignored ?? [] },
      },
    },
  };
}

/** The MemorySearchManager for one agent: search, readFile, status (as last read), sync. */
class MnemoManager {
  private opts: MnemoOptions;
  private last: ProviderStatus;
  constructor(opts: MnemoOptions, status: ProviderStatus) {
    this.opts = opts;
    this.last = status;
  }
  async search(query: string, o: { maxResults?: number; minScore?: number } = {}): Promise<SearchResult[]> {
    const a = await mnemoSearch(this.opts, { query, maxResults: o.maxResults, minScore: o.minScore });
    let hits = a.results;
    if (o.minScore !== undefined) hits = hits.filter((h) => h.score >= (o.minScore as number));
    if (o.maxResults !== undefined) hits = hits.slice(0, o.maxResults);
    return hits.map((h) => ({
      path: h.path,
      startLine: h.startLine,
      endLine: h.endLine,
      score: h.score,
      ...(typeof h.vectorScore === "number" ? { vectorScore: h.vectorScore } : {}),
      ...(typeof h.textScore === "number" ? { textScore: h.textScore } : {}),
      snippet: h.snippet,
      source: h.source === "sessions" ? "sessions" : "memory",
      ...(typeof h.citation === "string" ? { citation: h.citation } : {}),
    }));
  }
  async readFile(p: { relPath: string; from?: number; lines?: number }) {
    try {
      const r = await mnemoGet(this.opts, { path: p.relPath, from: p.from, lines: p.lines });
      const from = r.from || p.from || 1;
      return {
        status: "ok" as const,
        text: r.text,
        path: r.path || p.relPath,
        from,
        lines: Math.max(0, (r.to || 0) - from + 1),
        ...(r.truncated ? { truncated: true } : {}),
        ...(r.nextFrom ? { nextFrom: r.nextFrom } : {}),
      };
    } catch (e) {
      if (e instanceof MnemoError && e.code === "not_found") return { status: "not_found" as const, text: "" as const, path: p.relPath };
      throw e;
    }
  }
  status(): ProviderStatus {
    return this.last;
  }
  async refresh(): Promise<ProviderStatus> {
    const st = await mnemoStatus(this.opts);
    this.last = providerStatus(st, mnemoRoute(this.opts), lastRoute(), this.opts.openclaw);
    return this.last;
  }
  async sync(p: { force?: boolean } = {}): Promise<void> {
    await mnemoIndex({ ...this.opts, timeoutMs: 10 * 60 * 1000 }, { force: p.force });
    await this.refresh().catch(() => undefined);
  }
  async probeEmbeddingAvailability() {
    const m = this.last.custom?.mnemo as { mode?: string; embeddingReason?: string } | undefined;
    const ok = m?.mode === "hybrid";
    return { ok, checked: true, ...(ok ? {} : { error: m?.embeddingReason || "keyword only (no embedding provider)" }) };
  }
  async probeVectorAvailability(): Promise<boolean> {
    return this.last.vector?.available === true && this.last.vector.enabled;
  }
  async close(): Promise<void> {}
}

/** The MemoryPluginRuntime given to api.registerMemoryCapability. */
export function createMemoryRuntime(cfg: PluginConfig, host: RuntimeHost) {
  return {
    async getMemorySearchManager(params: { cfg: AnyConfig; agentId: string; purpose?: string }) {
      const started = Date.now();
      const opts = optionsFor(cfg, host, params.cfg, params.agentId);
      try {
        const st = await mnemoStatus(opts);
        const manager = new MnemoManager(opts, providerStatus(st, mnemoRoute(opts), lastRoute(), opts.openclaw));
        return { manager, debug: { backend: "builtin" as const, purpose: params.purpose as any, managerMs: Date.now() - started } };
      } catch (e) {
        return { manager: null, error: `mnemo: ${e instanceof Error ? e.message : String(e)}` };
      }
    },
    resolveMemoryBackendConfig() {
      return { backend: "builtin" as const };
    },
    async closeMemorySearchManager() {},
    async closeAllMemorySearchManagers() {},
  };
}

/* ---------------------------------------------------------------- openclaw memory ... */

type Command = any; /* commander's Command, as OpenClaw passes it */

/* Standard output itself: OpenClaw sends console.log to stderr while a CLI command runs. */
const print = (text: string) => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);

function agentIds(cfg: AnyConfig | undefined, agent: string | undefined): string[] {
  if (agent) return [agent];
  const list = Array.isArray(cfg?.agents?.list) ? cfg.agents.list : [];
  const ids = list.map((a: any) => (typeof a?.id === "string" ? a.id : "")).filter(Boolean);
  return ids.length ? ids : ["main"];
}

function positiveInt(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer.`);
  return n;
}
function finite(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${flag} must be a finite number.`);
  return n;
}

/* The OpenClaw settings passed to mnemo (mnemo's key names) and those not used (OpenClaw's). */
function settingsLines(s: { mapped?: string[]; ignored?: Array<{ key: string; why: string }> }): string[] {
  const keys = [...new Set((s.mapped ?? []).map((l) => l.split(" -> ")[1]).filter(Boolean))];
  return [
    ...(keys.length ? [`  settings:  ${keys.join(", ")} (from OpenClaw's memory search config and the plugin's settings)`] : []),
    ...(s.ignored ?? []).map((i) => `  not used:  ${i.key} (${i.why})`),
  ];
}

function statusLines(agentId: string, s: ProviderStatus): string[] {
  const m = (s.custom?.mnemo ?? {}) as Record<string, any>;
  const r = (m.route ?? {}) as Record<string, any>;
  const daemon =
    r.answeredBy === "daemon"
      ? `daemon at ${r.redirectedTo ?? r.url}`
      : `CLI (no daemon answered at ${r.redirectedTo ?? r.url}${r.workspaceMismatch ? ": it serves another workspace" : ""})`;
  return [
    `Memory (${agentId}): mnemo ${m.version ?? ""}`.trimEnd(),
    `  workspace: ${s.workspaceDir ?? "?"}`,
    `  index:     ${s.dbPath ?? "?"}${m.indexed ? "" : " (not built yet: openclaw memory index)"}`,
    `  files:     ${s.files ?? 0}`,
    `  chunks:    ${s.chunks ?? 0}`,
    `  mode:      ${m.mode ?? "keyword"}${s.provider && s.provider !== "none" ? ` (${s.provider}${s.model ? ` ${s.model}` : ""})` : ""}`,
    `  last sync: ${m.lastSync ?? "never"}`,
    `  route:     ${daemon} (url from ${r.source ?? "default"})`,
    ...settingsLines((m.settings ?? {}) as { mapped?: string[]; ignored?: Array<{ key: string; why: string }> }),
    ...(Array.isArray(m.warnings) ? m.warnings.map((w: string) => `  warning:   ${w}`) : []),
  ];
}

/** Registers `openclaw memory status|index|search` on PROGRAM (the root command). */
export function registerMemoryCli(program: Command, cfg: PluginConfig, host: RuntimeHost, ocCfg: AnyConfig | undefined): void {
  const memory = program
    .command("memory")
    .description("Search, inspect, and reindex memory files (mnemo)");
  const manager = async (agentId: string) => {
    const rt = createMemoryRuntime(cfg, host);
    const r = await rt.getMemorySearchManager({ cfg: ocCfg ?? {}, agentId, purpose: "cli" });
    if (!r.manager) throw new Error(r.error || "mnemo is unavailable");
    return r.manager;
  };
  const fail = (e: unknown) => {
    console.error(`openclaw memory: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  };

  memory
    .command("status")
    .description("Show mnemo's index: files, chunks, mode, last sync, daemon route")
    .option("--agent <id>", "Agent id (default: all configured agents)")
    .option("--json", "Print JSON")
    .option("--deep", "Also probe embeddings and vectors")
    .option("--index", "Sync the index first (implies --deep)")
    .action(async (opts: { agent?: string; json?: boolean; deep?: boolean; index?: boolean }) => {
      try {
        const all: Array<Record<string, unknown>> = [];
        for (const agentId of agentIds(ocCfg, opts.agent)) {
          const m = await manager(agentId);
          if (opts.index) await m.sync();
          const entry: Record<string, unknown> = { agentId, status: m.status() };
          if (opts.deep || opts.index) {
            entry.embeddingProbe = await m.probeEmbeddingAvailability();
            entry.vectorAvailable = await m.probeVectorAvailability();
          }
          all.push(entry);
        }
        if (opts.json) {
          print(JSON.stringify(all, null, 2));
          return;
        }
        const out: string[] = [];
        for (const e of all) {
          out.push(...statusLines(String(e.agentId), e.status as ProviderStatus));
          const probe = e.embeddingProbe as { ok: boolean; error?: string } | undefined;
          if (probe) out.push(`  embeddings: ${probe.ok ? "ready" : `unavailable (${probe.error})`}`);
          out.push("");
        }
        print(out.join("\n").trimEnd());
      } catch (e) {
        fail(e);
      }
    });

  memory
    .command("index")
    .description("Sync mnemo's index with the memory files")
    .option("--agent <id>", "Agent id (default: all configured agents)")
    .option("--force", "Rebuild from scratch", false)
    .option("--json", "Print JSON")
    .action(async (opts: { agent?: string; force?: boolean; json?: boolean }) => {
      try {
        const all: Array<Record<string, unknown>> = [];
        for (const agentId of agentIds(ocCfg, opts.agent)) {
          const o = optionsFor(cfg, host, ocCfg, agentId);
          const stats = await mnemoIndex({ ...o, timeoutMs: 10 * 60 * 1000 }, { force: opts.force });
          all.push({ agentId, workspaceDir: o.workspace, ...stats });
        }
        if (opts.json) {
          print(JSON.stringify(all, null, 2));
          return;
        }
        for (const s of all as Array<Record<string, any>>)
          print(
            `Memory index updated (${s.agentId}): ${s.filesSeen} files, ${s.filesAdded} added, ${s.filesChanged} changed, ` +
              `${s.filesRemoved} removed; ${s.chunksAdded} chunks written in ${s.seconds} s${s.rebuilt ? " (rebuilt)" : ""}`,
          );
      } catch (e) {
        fail(e);
      }
    });

  memory
    .command("search")
    .description("Search memory files through mnemo")
    .argument("[query]", "Search query")
    .option("--query <text>", "Search query (alternative to positional argument)")
    .option("--agent <id>", "Agent id (default: default agent)")
    .option("--max-results <n>", "Max results", (v: string) => positiveInt(v, "--max-results"))
    .option("--min-score <n>", "Minimum score", (v: string) => finite(v, "--min-score"))
    .option("--json", "Print JSON")
    .action(async (queryArg: string | undefined, opts: { query?: string; agent?: string; maxResults?: number; minScore?: number; json?: boolean }) => {
      try {
        const query = opts.query ?? queryArg;
        if (!query) throw new Error("Missing search query. Provide a positional query or use --query <text>.");
        const m = await manager(agentIds(ocCfg, opts.agent)[0]);
        const results = await m.search(query, { maxResults: opts.maxResults, minScore: opts.minScore });
        if (opts.json) {
          print(JSON.stringify({ results, mode: (m.status().custom?.mnemo as any)?.mode }, null, 2));
          return;
        }
        if (!results.length) {
          print("No matches.");
          return;
        }
        const lines: string[] = [];
        for (const r of results) lines.push(`${r.score.toFixed(3)} ${r.path}:${r.startLine}-${r.endLine}`, r.snippet, "");
        print(lines.join("\n").trim());
      } catch (e) {
        fail(e);
      }
    });

  memory.action(() => {
    memory.outputHelp();
  });
}
