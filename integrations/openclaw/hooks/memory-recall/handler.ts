/*
 * memory-recall hook for OpenClaw (see HOOK.md).
 *
 * default export: the internal-hook handler (event "gateway:startup"): starts `mnemo serve`
 *   for the workspace unless a daemon answers, so later searches are warm.
 * createBeforeToolCall / beforeToolCall: a typed before_tool_call handler for plugins
 *   (api.on("before_tool_call", ...)). OpenClaw lets such a handler rewrite, block or
 *   gate a call, not return a result, so it answers memory_search by blocking the call with
 *   mnemo's results as the reason, and returns nothing (the default search runs) on any error.
 */
import os from "node:os";
import path from "node:path";
import { mnemoEnsureDaemon, type MnemoOptions } from "./mnemo-client.ts";
import { memorySearchPayload, type PluginConfig, type ToolContext } from "./memory-tools.ts";

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

export default async function handler(event: InternalHookEvent): Promise<void> {
  if (event?.type !== "gateway" || event.action !== "startup") return;
  try {
    const hookEnv = event.context?.cfg?.hooks?.internal?.entries?.["memory-recall"]?.env ?? {};
    const opts = fromEnv({ ...process.env, ...hookEnv });
    if (!opts.workspace) opts.workspace = event.context?.workspaceDir;
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
      const cfg: PluginConfig = { timeoutMs: 1500, ...fromEnv(process.env), ...options };
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
