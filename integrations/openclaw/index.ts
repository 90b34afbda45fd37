/*
 * mnemo memory plugin for OpenClaw.
 *
 * Owns the memory slot (plugins.slots.memory = "mnemo") and serves `memory_search` and
 * `memory_get` from mnemo with the parameters and result shapes of OpenClaw's built-in
 * memory-core tools. With `recall.triggers` / `recall.memories` it also prepends mnemo's
 * trigger recall and the <recalled-memories> block before the prompt is built.
 *
 * No SDK import: the entry is the plain object definePluginEntry() returns, so the plugin
 * has no dependencies beyond Node's built-ins.
 */
import { mnemoRecall } from "./hooks/memory-recall/mnemo-client.ts";
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
    api.registerTool((ctx: ToolContext) => createMemorySearchTool(cfg, ctx), { names: ["memory_search"] });
    api.registerTool((ctx: ToolContext) => createMemoryGetTool(cfg, ctx), { names: ["memory_get"] });

    const recall = cfg.recall ?? {};
    if (recall.triggers || recall.memories) {
      api.on("before_prompt_build", async (event: any, ctx: any) => {
        if (ctx?.trigger && ctx.trigger !== "user") return; /* heartbeat, cron: no user message */
        const message = typeof event?.currentUserMessage === "string" ? event.currentUserMessage : str(event?.prompt);
        if (!message.trim()) return;
        try {
          const r = await mnemoRecall(
            { ...toolOptions(cfg, ctx), timeoutMs: recall.timeoutMs ?? 1500 },
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
