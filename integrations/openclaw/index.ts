/*
 * mnemo memory plugin for OpenClaw.
 *
 * Owns the memory slot (plugins.slots.memory = "mnemo") and serves `memory_search` and
 * `memory_get` from mnemo with the parameters and result shapes of OpenClaw's built-in
 * memory-core tools. With `recall.triggers` / `recall.memories` it also prepends mnemo's
 * trigger recall and the <recalled-memories> block before the prompt is built.
 *
 * It is also OpenClaw's memory capability (registerMemoryCapability: the runtime that
 * `openclaw status --json --all` and other memory consumers ask), owns the `openclaw memory
 * status|index|search` commands (registerCli; memory-core's go away with memory-core), and
 * runs a Gateway service whose stop ends the `mnemo serve` daemons this plugin started.
 *
 * No SDK import: the entry is the plain object definePluginEntry() returns, so the plugin
 * has no dependencies beyond Node's built-ins.
 */
import { mnemoRecall, mnemoStopDaemons, mnemoUrl, setMnemoLogger } from "./hooks/memory-recall/mnemo-client.ts";
import { createMemoryRuntime, registerMemoryCli, type RuntimeHost } from "./memory-runtime.ts";
import {
  createMemoryGetTool,
  createMemorySearchTool,
  recallBlock,
  str,
  toolOptions,
  type PluginConfig,
  type ToolContext,
} from "./hooks/memory-recall/memory-tools.ts";

const plugin = {
  id: "mnemo",
  name: "mnemo memory",
  description: "memory_search and memory_get served by mnemo, with trigger recall",
  kind: "memory",
  register(api: any) {
    const cfg: PluginConfig = (api.pluginConfig ?? {}) as PluginConfig;
    const mode: string = api.registrationMode ?? "full";
    if (api.logger) setMnemoLogger(api.logger);
    let gatewayRunning = false;
    const host: RuntimeHost = {
      workspaceFor(ocCfg, agentId) {
        try {
          const dir = api.runtime?.agent?.resolveAgentWorkspaceDir?.(ocCfg ?? api.config ?? {}, agentId || "main");
          if (typeof dir === "string" && dir) return dir;
        } catch {
          /* no runtime in this registration mode */
        }
        const d = (ocCfg ?? api.config)?.agents?.defaults?.workspace;
        return typeof d === "string" && d ? d : undefined;
      },
      mayStartDaemon: () => gatewayRunning,
    };

    /* openclaw memory status|index|search (the manifest's cliCommands names the root) */
    api.registerCli(
      ({ program, config }: { program: any; config?: Record<string, any> }) =>
        registerMemoryCli(program, cfg, host, config ?? api.config),
      { descriptors: [{ name: "memory", description: "Search, inspect, and reindex memory files (mnemo)", hasSubcommands: true }] },
    );
    if (mode === "cli-metadata") return;

    api.registerMemoryCapability({ runtime: createMemoryRuntime(cfg, host) });
    /* a tool's context carries OpenClaw's config (memory.search: see openclaw-settings.ts);
       the config the plugin was registered with stands in when it does not */
    const withConfig = (ctx: ToolContext | undefined): ToolContext =>
      ctx?.config || ctx?.runtimeConfig || ctx?.getRuntimeConfig ? ctx : { ...ctx, config: api.config };
    api.registerTool((ctx: ToolContext) => createMemorySearchTool(cfg, withConfig(ctx)), { names: ["memory_search"] });
    api.registerTool((ctx: ToolContext) => createMemoryGetTool(cfg, withConfig(ctx)), { names: ["memory_get"] });

    /* The Gateway's lifetime: a daemon this plugin starts is stopped with it (and, passed
       --parent, exits by itself if the Gateway dies without stopping it). */
    api.registerService({
      id: "mnemo-daemon",
      start() {
        gatewayRunning = true;
        const { url, source } = mnemoUrl(cfg);
        api.logger?.info?.(`mnemo: daemon url ${url} (from ${source})`);
      },
      async stop() {
        gatewayRunning = false;
        const pids = await mnemoStopDaemons();
        if (pids.length) api.logger?.info?.(`mnemo: stopped the daemon${pids.length > 1 ? "s" : ""} it started (pid ${pids.join(", ")})`);
      },
    });

    const recall = cfg.recall ?? {};
    if (recall.triggers || recall.memories) {
      api.on("before_prompt_build", async (event: any, ctx: any) => {
        if (ctx?.trigger && ctx.trigger !== "user") return; /* heartbeat, cron: no user message */
        const message = typeof event?.currentUserMessage === "string" ? event.currentUserMessage : str(event?.prompt);
        if (!message.trim()) return;
        try {
          const r = await mnemoRecall(
            { ...toolOptions(cfg, ctx, api.config), timeoutMs: recall.timeoutMs ?? 1500 },
            {
              message,
              triggers: recall.triggers === true,
              memories: recall.memories === true,
              userId: recall.userId,
            },
          );
          const block = recallBlock(r);
          return block ? { prependContext: block } : undefined;
        } catch (e) {
          api.logger?.warn?.(`mnemo: recall skipped: ${e instanceof Error ? e.message : String(e)}`);
          return undefined;
        }
      });
    }
  },
};

export default plugin;
