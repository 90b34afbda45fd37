/*
 * memory-recall hook for OpenClaw (see HOOK.md).
 *
 * default export: the internal-hook handler. "gateway:startup" starts `mnemo serve` for the
 *   workspace unless a daemon answers, so later searches are warm; "gateway:shutdown" stops
 *   the daemon it started (which also exits by itself if the Gateway dies: --parent). The
 *   daemon address is the mnemo plugin's `url` when the plugin is configured, so the hook and
 *   the plugin use one daemon; else MNEMO_URL (hook env, then process), else the default.
 * createBeforeToolCall / beforeToolCall: a typed before_tool_call handler for plugins
 *   (api.on("before_tool_call", ...)). OpenClaw lets such a handler rewrite, block or
 *   gate a call, not return a result, so it answers memory_search by blocking the call with
 *   mnemo's results as the reason, and returns nothing (the default search runs) on any error.
 */
import os from "node:os";
import path from "node:path";
import { mnemoEnsureDaemon, mnemoStopDaemons, type MnemoOptions } from "./mnemo-client.ts";
import { memorySearchPayload, settingsFor, type PluginConfig, type ToolContext } from "./memory-tools.ts";

function expandHome(p: string | undefined): string | undefined {
  if (!p) return undefined;
  return p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p;
}

function fromEnv(env: Record<string, string | undefined>): MnemoOptions {
  return {
    bin: env.MNEMO_BIN || undefined,
    workspace: expandHome(env.MNEMO_WORKSPACE) || undefined,
    db: env.MNEMO_DB || undefined,
    url: env.MNEMO_URL || undefined,
    token: env.MNEMO_TOKEN || undefined,
  };
}

type InternalHookEvent = {
  type?: string;
  action?: string;
  context?: { workspaceDir?: string; cfg?: any };
};

const mismatchLogged = new Set<string>();

/* The mnemo plugin's settings and openclawSettings (plugins.entries.mnemo.config), if any. */
function pluginSettings(cfg: any): Pick<PluginConfig, "settings" | "openclawSettings"> {
  const entry = cfg?.plugins?.entries?.mnemo;
  const plugin = entry && entry.enabled !== false ? (entry.config ?? {}) : {};
  return { settings: plugin.settings, openclawSettings: plugin.openclawSettings };
}

/**
 * The hook's mnemo options: the mnemo plugin's config (plugins.entries.mnemo.config) where it
 * sets a key, else the hook's env (hooks.internal.entries.memory-recall.env), else the
 * process environment. A plugin url and a MNEMO_URL that differ are logged once. The daemon
 * gets the default agent's settings (OpenClaw's memory search config, the plugin's settings),
 * as the tool calls do.
 */
export function hookOptions(cfg: any, workspaceDir?: string): MnemoOptions {
  const hookEnv = cfg?.hooks?.internal?.entries?.["memory-recall"]?.env ?? {};
  const fromEnvs = fromEnv({ ...process.env, ...hookEnv });
  const entry = cfg?.plugins?.entries?.mnemo;
  const plugin = entry && entry.enabled !== false ? (entry.config ?? {}) : {};
  const pick = (k: "bin" | "workspace" | "db" | "url" | "token") =>
    typeof plugin[k] === "string" && plugin[k].trim() ? (plugin[k] as string) : fromEnvs[k];
  const opts: MnemoOptions = {
    bin: pick("bin"),
    workspace: expandHome(pick("workspace")) || workspaceDir,
    db: pick("db"),
    url: pick("url"),
    token: pick("token"),
  };
  const s = settingsFor(pluginSettings(cfg), cfg ?? undefined, "main");
  opts.env = s.env;
  opts.expect = { provider: s.provider, model: s.model };
  if (typeof plugin.url === "string" && fromEnvs.url && plugin.url.replace(/\/+$/, "") !== fromEnvs.url.replace(/\/+$/, "")) {
    const key = `${plugin.url} ${fromEnvs.url}`;
    if (!mismatchLogged.has(key)) {
      mismatchLogged.add(key);
      console.warn(
        `memory-recall: MNEMO_URL=${fromEnvs.url} differs from the mnemo plugin's url ${plugin.url}; using ${plugin.url} ` +
          "(set both to the same address, or unset MNEMO_URL)",
      );
    }
  }
  return opts;
}

export default async function handler(event: InternalHookEvent): Promise<void> {
  if (event?.type !== "gateway") return;
  try {
    if (event.action === "shutdown") {
      await mnemoStopDaemons();
      return;
    }
    if (event.action !== "startup") return;
    const opts = hookOptions(event.context?.cfg, event.context?.workspaceDir);
    if (!opts.workspace) return;
    await mnemoEnsureDaemon(opts);
  } catch {
    /* warming is best effort */
  }
}

type BeforeToolCallEvent = { toolName?: string; params?: Record<string, unknown> };
type BeforeToolCallResult = { block: true; blockReason: string } | undefined;

/**
 * A before_tool_call handler answering memory_search from mnemo. Options default to the
 * MNEMO_* environment variables; without a workspace it does nothing. timeoutMs (default
 * 1500) bounds the whole call, after which the default search runs.
 */
export function createBeforeToolCall(options: MnemoOptions = {}) {
  return async function beforeToolCall(
    event: BeforeToolCallEvent,
    ctx?: { sessionKey?: string; config?: any },
  ): Promise<BeforeToolCallResult> {
    try {
      if (event?.toolName !== "memory_search") return undefined;
      const cfg: PluginConfig = { timeoutMs: 1500, ...pluginSettings(ctx?.config), ...fromEnv(process.env), ...options };
      cfg.workspace = expandHome(cfg.workspace);
      if (!cfg.workspace) return undefined;
      const toolCtx: ToolContext = { sessionKey: ctx?.sessionKey, config: ctx?.config };
      const { ok, payload } = await memorySearchPayload(cfg, toolCtx, event.params ?? {});
      if (!ok) return undefined;
      return { block: true, blockReason: JSON.stringify(payload, null, 2) };
    } catch {
      return undefined;
    }
  };
}

export const beforeToolCall = createBeforeToolCall();
