/*
 * openclaw-settings.ts - OpenClaw's memory search configuration, as users write it, turned
 * into mnemo's settings, so a user who switches the memory slot to mnemo keeps the provider,
 * model, endpoint, extra paths and ranking they configured for memory-core.
 *
 * Where OpenClaw keeps them (2026.9.6, src/agents/memory-search.ts and the doctor's
 * migrations), lowest precedence first:
 *   top-level `memorySearch`, `agents.defaults.memorySearch`   legacy global settings
 *   `memory.search`                                           global settings
 *   `agents.entries.<id>.memorySearch`, `agents.list[].memorySearch`         legacy, per agent
 *   `agents.entries.<id>.memory.search`, `agents.list[].memory.search`       per agent
 * Objects merge key by key; `extraPaths` of every level are concatenated, as OpenClaw does.
 * The plugin's own `settings` (mnemo's key names) win over all of them.
 *
 * The result is a set of environment variables (MNEMO_<KEY>, mnemo's environment layer) for
 * every mnemo process the plugin runs, the CLI calls and the daemon it starts alike: the
 * environment, unlike --set arguments, is not readable by other users (/proc/PID/cmdline is),
 * and a key this mnemo does not know yet is ignored rather than an error. An API key written
 * in OpenClaw's config is passed the same way, in a variable of its own that apiKeyEnv names;
 * it is never put on a command line or in a file.
 */

type AnyRecord = Record<string, any>;

/** What the plugin passes to mnemo, and what it could not. */
export type MnemoSettings = {
  /** Environment variables for every mnemo process the plugin runs. */
  env: Record<string, string>;
  /** "memory.search.model -> model" lines (the OpenClaw key and mnemo's). */
  mapped: string[];
  /** OpenClaw keys mnemo has no equivalent for, each with the reason. */
  ignored: Array<{ key: string; why: string }>;
  /** Notes worth a log line (a fallback provider, an unresolvable key). */
  notes: string[];
  /** What a running daemon must report to serve these settings (status embedding). */
  provider?: string;
  model?: string;
};

/** The environment variable mnemo reads KEY from (config.c: MNEMO_ and the key in capitals). */
export function mnemoEnvName(key: string): string {
  if (key === "hubEndpoint") return "HF_ENDPOINT"; /* the hub's own variable */
  return `MNEMO_${key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase()}`;
}

/* The variable an API key from OpenClaw's config is handed to mnemo in (apiKeyEnv names it). */
export const OPENCLAW_KEY_ENV = "MNEMO_OPENCLAW_API_KEY";

/*
 * OpenClaw's embedding adapter ids -> mnemo's providers. Each entry: mnemo's provider, and
 * for adapters mnemo reaches through another wire format, the endpoint and key variable.
 */
type ProviderMap = { provider: string; baseUrl?: string; apiKeyEnv?: string; keyOwner?: string };
const PROVIDERS: Record<string, ProviderMap> = {
  openai: { provider: "openai", keyOwner: "openai" },
  "openai-compatible": { provider: "openai-compatible" },
  gemini: { provider: "gemini", keyOwner: "google" },
  voyage: { provider: "voyage", keyOwner: "voyage" },
  mistral: { provider: "mistral", keyOwner: "mistral" },
  ollama: { provider: "ollama" },
  bedrock: { provider: "bedrock" },
  "amazon-bedrock": { provider: "bedrock" },
  local: { provider: "local" },
  deepinfra: { provider: "deepinfra", keyOwner: "deepinfra" },
  /* the GitHub token (COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN) is exchanged by mnemo */
  "github-copilot": { provider: "github-copilot" },
  /* legacy "auto" picked what was available, as mnemo's auto does (OpenClaw now reads it as openai) */
  auto: { provider: "auto" },
  none: { provider: "none" },
};
const UNSUPPORTED_PROVIDERS: Record<string, string> = {
  "lm-studio": "set provider openai-compatible with remote.baseUrl of the LM Studio server",
};

/* OpenClaw keys mnemo has nothing for, and why (printed once). */
const IGNORED: Record<string, string> = {
  enabled: "mnemo holds the memory slot; to turn memory search off, give the slot back (plugins.slots.memory)",
  rememberAcrossConversations: "OpenClaw keeps transcripts in its agent database, which mnemo does not read",
  sources: "OpenClaw keeps transcripts in its agent database; mnemo indexes JSONL transcripts: set settings.sources and settings.sessionsDir",
  experimental: "session transcripts: see sources",
  "remote.batch": "mnemo batches its own requests (embedBatchBytes, embedConcurrency); it has no batch API jobs",
  store: "mnemo keeps its own index file (the plugin's db)",
  cache: "mnemo keeps its own embedding cache (embeddingCacheMax)",
  sync: "mnemo's daemon follows the files itself (watchDebounceMs)",
  "query.hybrid.enabled": "mnemo always runs keywords, and vectors when a provider is configured (provider none: keywords only)",
  "query.hybrid.textWeight": "mnemo's fusion has one weight (vectorWeight)",
  "query.hybrid.candidateMultiplier": "mnemo sizes its candidate pools itself",
};

const isRecord = (v: unknown): v is AnyRecord => typeof v === "object" && v !== null && !Array.isArray(v);

/* OpenClaw's legacy flat fields (doctor: LEGACY_MEMORY_SEARCH_FIELD_MAPPINGS) moved into place. */
function unflatten(ms: AnyRecord): AnyRecord {
  const out: AnyRecord = { ...ms };
  const move = (legacy: string, parent: string, key: string) => {
    if (!(legacy in out)) return;
    const p = isRecord(out[parent]) ? { ...out[parent] } : {};
    if (p[key] === undefined) p[key] = out[legacy];
    out[parent] = p;
    delete out[legacy];
  };
  move("chunkSize", "chunking", "tokens");
  move("chunkOverlap", "chunking", "overlap");
  move("maxResults", "query", "maxResults");
  return out;
}

/* B over A, object by object; arrays and values replace, extraPaths concatenate. */
function merge(a: AnyRecord, b: AnyRecord, top = true): AnyRecord {
  const out: AnyRecord = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (v === undefined) continue;
    if (top && k === "extraPaths" && Array.isArray(v)) out[k] = [...(Array.isArray(out[k]) ? out[k] : []), ...v];
    else if (isRecord(v) && isRecord(out[k]) && k !== "headers") out[k] = merge(out[k], v, false);
    else out[k] = v;
  }
  return out;
}

/* The agent's entry: agents.entries.<id> (keyed) or agents.list[] (legacy roster). */
function agentEntry(cfg: AnyRecord, agentId: string): AnyRecord | undefined {
  const id = agentId.trim().toLowerCase();
  const entries = cfg.agents?.entries;
  if (isRecord(entries)) {
    for (const [k, v] of Object.entries(entries)) if (k.toLowerCase() === id && isRecord(v)) return v;
  }
  const list = cfg.agents?.list;
  if (Array.isArray(list)) return list.find((a) => isRecord(a) && typeof a.id === "string" && a.id.toLowerCase() === id);
  return undefined;
}

/** OpenClaw's effective memory search settings for AGENTID, with where each layer came from. */
export function openclawMemorySearch(cfg: AnyRecord | undefined, agentId: string): { merged: AnyRecord; layers: string[] } {
  const layers: Array<[string, unknown]> = [];
  if (cfg) {
    layers.push(["memorySearch", cfg.memorySearch]);
    layers.push(["agents.defaults.memorySearch", cfg.agents?.defaults?.memorySearch]);
    layers.push(["memory.search", cfg.memory?.search]);
    const entry = agentEntry(cfg, agentId);
    layers.push([`agents.entries.${agentId}.memorySearch`, entry?.memorySearch]);
    layers.push([`agents.entries.${agentId}.memory.search`, entry?.memory?.search]);
  }
  let merged: AnyRecord = {};
  const used: string[] = [];
  for (const [name, v] of layers) {
    if (!isRecord(v)) continue;
    merged = merge(merged, unflatten(v));
    used.push(name);
  }
  return { merged, layers: used };
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/**
 * mnemo's settings for AGENTID from OpenClaw's config CFG and the plugin's own SETTINGS
 * (mnemo key -> value, which win). USE_OPENCLAW false skips OpenClaw's keys.
 */
export function mnemoSettings(
  cfg: AnyRecord | undefined,
  agentId: string,
  settings: AnyRecord | undefined,
  useOpenclaw = true,
): MnemoSettings {
  const out: MnemoSettings = { env: {}, mapped: [], ignored: [], notes: [] };
  const set: AnyRecord = {}; /* mnemo key -> value */
  const from: Record<string, string> = {};
  const put = (key: string, value: unknown, source: string) => {
    if (value === undefined) return;
    set[key] = value;
    from[key] = source;
  };
  const ignore = (key: string, why: string) => out.ignored.push({ key: `memory.search.${key}`, why });

  const { merged: ms } = useOpenclaw ? openclawMemorySearch(cfg, agentId) : { merged: {} as AnyRecord };
  const at = (k: string) => `memory.search.${k}`;

  /* provider, and what it implies for the endpoint and the key */
  const rawProvider = str(ms.provider);
  let pmap: ProviderMap | undefined;
  if (rawProvider) {
    const id = rawProvider.toLowerCase();
    const custom = cfg?.models?.providers?.[rawProvider];
    pmap = PROVIDERS[id];
    if (!pmap && isRecord(custom) && typeof custom.api === "string") {
      /* a models.providers.<id> entry whose api names the adapter: its endpoint and key */
      const api = custom.api.toLowerCase();
      const base = str(custom.baseUrl);
      if (api === "ollama") pmap = { provider: "ollama", ...(base ? { baseUrl: base } : {}), keyOwner: rawProvider };
      else if (api.startsWith("openai")) pmap = { provider: "openai-compatible", ...(base ? { baseUrl: base } : {}), keyOwner: rawProvider };
    }
    if (pmap) put("provider", pmap.provider, at("provider"));
    else ignore("provider", `${rawProvider}: ${UNSUPPORTED_PROVIDERS[id] ?? "not a provider mnemo has; mnemo's own provider choice applies"}`);
  }
  put("model", str(ms.model), at("model"));
  if (!str(ms.model) && pmap?.provider === "local" && str(ms.local?.modelPath)) {
    const mp = str(ms.local.modelPath) as string;
    if (/^(hf:|https?:)/i.test(mp)) ignore("local.modelPath", "a download reference: import the model with `mnemo model pull` and name it in model");
    else put("model", mp, at("local.modelPath"));
  }
  put("dimensions", num(ms.outputDimensionality), at("outputDimensionality"));

  const remote = isRecord(ms.remote) ? ms.remote : {};
  const baseUrl = str(remote.baseUrl) ?? pmap?.baseUrl;
  put("baseUrl", baseUrl, str(remote.baseUrl) ? at("remote.baseUrl") : at("provider"));
  if (isRecord(remote.headers) && Object.keys(remote.headers).length) put("headers", remote.headers, at("remote.headers"));

  /* the API key: never on a command line or in a file; the environment of mnemo's processes */
  let key: unknown = remote.apiKey;
  let keySource = at("remote.apiKey");
  if (key === undefined && !str(remote.baseUrl) && pmap?.keyOwner) {
    /* OpenClaw inherits the provider's key only for the provider's own endpoint */
    key = cfg?.models?.providers?.[pmap.keyOwner]?.apiKey;
    keySource = `models.providers.${pmap.keyOwner}.apiKey`;
  }
  const envRef = typeof key === "string" ? /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(key.trim()) : null;
  if (envRef) put("apiKeyEnv", envRef[1], keySource);
  else if (typeof key === "string" && key.trim()) {
    out.env[OPENCLAW_KEY_ENV] = key.trim();
    put("apiKeyEnv", OPENCLAW_KEY_ENV, keySource);
  } else if (isRecord(key) && key.source === "env" && typeof key.id === "string" && key.id) {
    put("apiKeyEnv", key.id, keySource);
  } else {
    if (isRecord(key))
      out.ignored.push({
        key: keySource,
        why: `a ${String(key.source)} secret reference mnemo cannot resolve: put the key in an environment variable and name it in settings.apiKeyEnv`,
      });
    if (pmap?.apiKeyEnv) put("apiKeyEnv", pmap.apiKeyEnv, at("provider"));
  }

  /* input types: inputType is the default of both */
  const inputType = str(ms.inputType);
  put("queryInputType", str(ms.queryInputType) ?? inputType, str(ms.queryInputType) ? at("queryInputType") : at("inputType"));
  put("documentInputType", str(ms.documentInputType) ?? inputType, str(ms.documentInputType) ? at("documentInputType") : at("inputType"));

  if (Array.isArray(ms.extraPaths) && ms.extraPaths.length) {
    const paths = ms.extraPaths.filter((p: unknown) => (typeof p === "string" && p.trim()) || (isRecord(p) && typeof p.path === "string"));
    if (paths.length) put("extraPaths", paths, at("extraPaths"));
  }
  /* mnemo's multimodal object has OpenClaw's fields; any other would make mnemo refuse the
   * whole configuration, so it is left out and said */
  if (isRecord(ms.multimodal)) {
    const mm: AnyRecord = {};
    for (const [k, v] of Object.entries(ms.multimodal)) {
      if (k === "enabled" || k === "modalities" || k === "maxFileBytes") mm[k] = v;
      else ignore(`multimodal.${k}`, "mnemo's multimodal setting has enabled, modalities and maxFileBytes");
    }
    put("multimodal", mm, at("multimodal"));
  }

  /* ranking and chunking */
  const q = isRecord(ms.query) ? ms.query : {};
  put("maxResults", num(q.maxResults), at("query.maxResults"));
  put("minScore", num(q.minScore), at("query.minScore"));
  const hy = isRecord(q.hybrid) ? q.hybrid : {};
  put("vectorWeight", num(hy.vectorWeight), at("query.hybrid.vectorWeight"));
  if (isRecord(hy.mmr)) {
    if (hy.mmr.enabled === false) put("mmrLambda", 1, at("query.hybrid.mmr.enabled"));
    else put("mmrLambda", num(hy.mmr.lambda), at("query.hybrid.mmr.lambda"));
  }
  if (isRecord(hy.temporalDecay)) {
    if (hy.temporalDecay.enabled === false) put("recencyHalfLifeDays", 0, at("query.hybrid.temporalDecay.enabled"));
    else put("recencyHalfLifeDays", num(hy.temporalDecay.halfLifeDays), at("query.hybrid.temporalDecay.halfLifeDays"));
  }
  const ch = isRecord(ms.chunking) ? ms.chunking : {};
  put("chunkTokens", num(ch.tokens), at("chunking.tokens"));
  put("chunkOverlap", num(ch.overlap), at("chunking.overlap"));

  /* what mnemo has no equivalent for */
  const fallback = str(ms.fallback);
  if (fallback && fallback !== "none")
    out.notes.push(
      `mnemo: memory.search.fallback (${fallback}) has no equivalent in mnemo and is not used: mnemo embeds with one ` +
        "provider (an index holds one model's vectors); a named provider that fails makes memory_search unavailable, " +
        "as in OpenClaw without a fallback, while provider auto (or none) answers from keywords",
    );
  for (const [k, why] of Object.entries(IGNORED)) {
    const path = k.split(".");
    let v: unknown = ms;
    for (const p of path) v = isRecord(v) ? v[p] : undefined;
    if (v !== undefined && !(k === "enabled" && v === true)) ignore(k, why);
  }

  /* the plugin's own settings win */
  if (isRecord(settings)) for (const [k, v] of Object.entries(settings)) put(k, v, `settings.${k}`);

  for (const [k, v] of Object.entries(set)) {
    out.env[mnemoEnvName(k)] = typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : JSON.stringify(v);
    out.mapped.push(`${from[k]} -> ${k}`);
  }
  if (typeof set.provider === "string") out.provider = set.provider;
  if (typeof set.model === "string") out.model = set.model;
  return out;
}
