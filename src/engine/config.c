/*
 * config.c - configuration keys, their defaults, validation and layering
 * (defaults < user file < workspace file < environment < caller).
 *
 * Values are kept in string form and validated when set, so every layer
 * goes through one parser and `config show` prints exactly what was set.
 */
#include "engine/config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/errcode.h"
#include "text/dsn.h"
#include "text/tok.h"
#include "util/buf.h"

enum { T_STR, T_INT, T_NUM, T_BOOL, T_LIST, T_OBJECT };

typedef struct keydef {
    const char *name;
    const char *env;
    int type;
    const char *def;
    double lo, hi;
    const char *help;
    const char *choices; /* T_STR: comma-separated allowed values, or NULL */
} keydef;

static const keydef keys[CFG__COUNT] = {
    [CFG_WORKSPACE] = {"workspace", "MNEMO_WORKSPACE", T_STR, "", 0, 0,
                       "workspace directory holding MEMORY.md, USER.md and memory/ "
                       "(default: the current directory)"},
    [CFG_DB] = {"db", "MNEMO_DB", T_STR, "", 0, 0,
                "index database file (default: $XDG_DATA_HOME/mnemo/<workspace>-<hash>.sqlite)"},
    [CFG_MEMORY_DB] = {"memoryDb", "MNEMO_MEMORY_DB", T_STR, "", 0, 0,
                       "memory store: structured memories, their history and vectors, never "
                       "replaced by a rebuild (default: the index path with .memories.sqlite "
                       "for .sqlite)"},
    [CFG_MEMORY_BACKUPS] = {"memoryBackups", "MNEMO_MEMORY_BACKUPS", T_INT, "3", 0, 1000,
                            "JSON-lines snapshots of the memory store kept beside it "
                            "(0: none)"},
    [CFG_MEMORY_BACKUP_EVERY] = {"memoryBackupEvery", "MNEMO_MEMORY_BACKUP_EVERY", T_INT, "100",
                                 1, 1000000000,
                                 "memory writes between snapshots (and at least one a day "
                                 "while memories change)"},
    [CFG_MEMORY_COUNT_LIMIT] = {"memoryCountLimit", "MNEMO_MEMORY_COUNT_LIMIT", T_INT, "10000",
                                0, 1000000000,
                                "memories a list counts past its page for its total; beyond, "
                                "the total is a lower bound (totalCapped) (0: count all)"},
    [CFG_EXTRA_PATHS] = {"extraPaths", "MNEMO_EXTRA_PATHS", T_LIST, "[]", 0, 0,
                         "more files or folders to index: [\"notes\", {\"path\":\"docs\","
                         "\"pattern\":\"**/*.md\"}]; env/flag form: a JSON array or "
                         "comma-separated path[=pattern]"},
    [CFG_MULTIMODAL] = {"multimodal", "MNEMO_MULTIMODAL", T_OBJECT,
                        "{\"enabled\":false,\"maxFileBytes\":10485760,\"modalities\":[\"image\","
                        "\"audio\"]}",
                        0, 0,
                        "images and audio under extraPaths, embedded by a provider that "
                        "embeds media (gemini-embedding-2-preview): {\"enabled\":true,"
                        "\"modalities\":[\"image\",\"audio\"],\"maxFileBytes\":10485760}; "
                        "one field: --set multimodal.enabled=true (docs/search.md)"},
    [CFG_CHUNK_TOKENS] = {"chunkTokens", "MNEMO_CHUNK_TOKENS", T_INT, "400", 32, 8192,
                          "target chunk size in tokens"},
    [CFG_CHUNK_OVERLAP] = {"chunkOverlap", "MNEMO_CHUNK_OVERLAP", T_INT, "80", 0, 4096,
                           "overlap between consecutive chunks in tokens"},
    [CFG_LANGUAGE] = {"language", "MNEMO_LANGUAGE", T_STR, "english", 0, 0,
                      "Snowball stemmer language, or none"},
    [CFG_STOP_WORDS] = {"stopWords", "MNEMO_STOP_WORDS", T_BOOL, "true", 0, 0,
                        "drop English stop words from queries"},
    [CFG_MAX_RESULTS] = {"maxResults", "MNEMO_MAX_RESULTS", T_INT, "6", 1, 100,
                         "results returned by search"},
    [CFG_MIN_SCORE] = {"minScore", "MNEMO_MIN_SCORE", T_NUM, "0.35", 0, 1,
                       "results scoring below this are dropped (keyword mode keeps the best "
                       "matches when none clears it)"},
    [CFG_BM25_K1] = {"bm25K1", "MNEMO_BM25_K1", T_NUM, "1.2", 0, 10,
                     "BM25 term-frequency saturation"},
    [CFG_BM25_B] = {"bm25B", "MNEMO_BM25_B", T_NUM, "0.75", 0, 1, "BM25 length normalisation"},
    [CFG_MAX_FILE_BYTES] = {"maxFileBytes", "MNEMO_MAX_FILE_BYTES", T_INT, "10485760", 1024,
                            1073741824.0, "files larger than this are skipped"},
    [CFG_SNIPPET_CHARS] = {"snippetChars", "MNEMO_SNIPPET_CHARS", T_INT, "700", 80, 10000,
                           "maximum snippet length in characters"},
    [CFG_WATCH_DEBOUNCE_MS] = {"watchDebounceMs", "MNEMO_WATCH_DEBOUNCE_MS", T_INT, "1500", 0,
                               600000, "quiet time before index --watch syncs"},
    [CFG_BUSY_TIMEOUT_MS] = {"busyTimeoutMs", "MNEMO_BUSY_TIMEOUT_MS", T_INT, "5000", 0,
                             600000, "how long to wait for a locked database"},
    [CFG_PROVIDER] = {"provider", "MNEMO_PROVIDER", T_STR, "auto", 0, 0,
                      "embedding provider: auto, none, local, static, openai, "
                      "openai-compatible, ollama, gemini, voyage, mistral, deepinfra, bedrock, "
                      "github-copilot",
                      "auto,none,local,static,openai,openai-compatible,ollama,gemini,voyage,"
                      "mistral,deepinfra,bedrock,github-copilot"},
    [CFG_MODEL] = {"model", "MNEMO_MODEL", T_STR, "", 0, 0,
                   "embedding model (static: an imported table's name or path; default: the "
                   "provider's)"},
    [CFG_BASE_URL] = {"baseUrl", "MNEMO_BASE_URL", T_STR, "", 0, 0,
                      "provider endpoint (required for openai-compatible; bedrock: replaces "
                      "https://bedrock-runtime.REGION.amazonaws.com; github-copilot: replaces "
                      "the API base the Copilot token names)"},
    [CFG_API_KEY_ENV] = {"apiKeyEnv", "MNEMO_API_KEY_ENV", T_STR, "", 0, 0,
                         "environment variable holding the API key (default: OPENAI_API_KEY, "
                         "GEMINI_API_KEY, VOYAGE_API_KEY, MISTRAL_API_KEY, DEEPINFRA_API_KEY; "
                         "bedrock: AWS_BEARER_TOKEN_BEDROCK, else AWS keys; github-copilot: "
                         "a GitHub token from COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN)"},
    [CFG_HEADERS] = {"headers", "MNEMO_HEADERS", T_OBJECT, "{}", 0, 0,
                     "extra HTTP headers for the provider, a JSON object (github-copilot: "
                     "replaces the editor headers of the same name)"},
    [CFG_DIMENSIONS] = {"dimensions", "MNEMO_DIMENSIONS", T_INT, "0", 0, 8192,
                        "embedding dimensions to request (0: the model's default)"},
    [CFG_QUERY_INPUT_TYPE] = {"queryInputType", "MNEMO_QUERY_INPUT_TYPE", T_STR, "", 0, 0,
                              "input type sent with queries (voyage: query, gemini: "
                              "RETRIEVAL_QUERY by default)"},
    [CFG_DOCUMENT_INPUT_TYPE] = {"documentInputType", "MNEMO_DOCUMENT_INPUT_TYPE", T_STR, "", 0,
                                 0, "input type sent with documents"},
    [CFG_INPUT_TYPE] = {"inputType", "MNEMO_INPUT_TYPE", T_STR, "", 0, 0,
                        "input type sent with queries and documents alike, where "
                        "queryInputType or documentInputType is not set"},
    [CFG_COPILOT_TOKEN_URL] = {"copilotTokenUrl", "MNEMO_COPILOT_TOKEN_URL", T_STR, "", 0, 0,
                               "github-copilot: where the GitHub token is exchanged (default: "
                               "https://api.github.com/copilot_internal/v2/token, api.DOMAIN "
                               "with COPILOT_GITHUB_DOMAIN)"},
    [CFG_QUERY_PREFIX] = {"queryPrefix", "MNEMO_QUERY_PREFIX", T_STR, "", 0, 0,
                          "text put before each query (e.g. \"query: \")"},
    [CFG_DOCUMENT_PREFIX] = {"documentPrefix", "MNEMO_DOCUMENT_PREFIX", T_STR, "", 0, 0,
                             "text put before each chunk when embedding"},
    [CFG_VECTOR_CHARS] = {"vectorChars", "MNEMO_VECTOR_CHARS", T_INT, "350", 0, 100000,
                          "a chunk is embedded an entry (bullet, heading, paragraph) at a "
                          "time; longer entries as runs of whole lines of about this many "
                          "characters (0: one vector a chunk)"},
    [CFG_EMBED_BATCH_BYTES] = {"embedBatchBytes", "MNEMO_EMBED_BATCH_BYTES", T_INT, "8000", 256,
                               16777216, "UTF-8 bytes per embedding request"},
    [CFG_EMBED_CONCURRENCY] = {"embedConcurrency", "MNEMO_EMBED_CONCURRENCY", T_INT, "4", 1, 16,
                               "embedding requests in flight (ollama: always 1)"},
    [CFG_EMBED_QUERY_TIMEOUT_MS] = {"embedQueryTimeoutMs", "MNEMO_EMBED_QUERY_TIMEOUT_MS", T_INT,
                                    "10000", 100, 600000, "timeout for embedding a query"},
    [CFG_EMBED_BATCH_TIMEOUT_MS] = {"embedBatchTimeoutMs", "MNEMO_EMBED_BATCH_TIMEOUT_MS", T_INT,
                                    "120000", 100, 3600000,
                                    "timeout for one embedding request while indexing"},
    [CFG_EMBED_CACHE_MAX] = {"embeddingCacheMax", "MNEMO_EMBEDDING_CACHE_MAX", T_INT, "200000", 0,
                             100000000, "cached embeddings kept (oldest pruned first)"},
    [CFG_LOCAL_THREADS] = {"localThreads", "MNEMO_LOCAL_THREADS", T_INT, "0", 0, 64,
                           "threads of the local encoder (0: one per core)"},
    [CFG_LOCAL_QUANTIZATION] = {"localQuantization", "MNEMO_LOCAL_QUANTIZATION", T_STR, "none",
                                0, 0,
                                "products of the local encoder: none (float) or int8 (weights "
                                "and activations as bytes: about twice as fast; vectors within "
                                "about 0.99 cosine)",
                                "none,int8"},
    [CFG_MODELS_DIR] = {"modelsDir", "MNEMO_MODELS_DIR", T_STR, "", 0, 0,
                        "folder of imported embedding tables (default: "
                        "$XDG_DATA_HOME/mnemo/models)"},
    [CFG_HUB_ENDPOINT] = {"hubEndpoint", "HF_ENDPOINT", T_STR, "https://huggingface.co", 0, 0,
                          "the model hub `mnemo model pull` downloads from"},
    [CFG_FUSION] = {"fusion", "MNEMO_FUSION", T_STR, "weighted", 0, 0,
                    "how keyword and vector scores combine: weighted or rrf", "weighted,rrf"},
    [CFG_VECTOR_WEIGHT] = {"vectorWeight", "MNEMO_VECTOR_WEIGHT", T_NUM, "0.8", 0, 1,
                           "weight of the vector score (weighted fusion: 1 - (1 - text)(1 - "
                           "vectorWeight * vector))"},
    [CFG_TEXT_WEIGHT] = {"textWeight", "MNEMO_TEXT_WEIGHT", T_NUM, "0.3", 0, 1,
                         "unused since the weighted fusion became 1 - (1 - text)(1 - "
                         "vectorWeight * vector); accepted for old configurations"},
    [CFG_RRF_K] = {"rrfK", "MNEMO_RRF_K", T_INT, "60", 1, 10000,
                   "reciprocal rank fusion constant"},
    [CFG_VECTOR_QUANTIZATION] = {"vectorQuantization", "MNEMO_VECTOR_QUANTIZATION", T_STR, "none",
                                 0, 0, "none, or int8: scan int8 copies, rescore in float",
                                 "none,int8"},
    [CFG_RECENCY_HALF_LIFE_DAYS] = {"recencyHalfLifeDays", "MNEMO_RECENCY_HALF_LIFE_DAYS", T_NUM,
                                    "30", 0, 36500,
                                    "age at which a dated note's recency bonus halves (0: off)"},
    [CFG_RECENCY_FLOOR] = {"recencyFloor", "MNEMO_RECENCY_FLOOR", T_NUM, "0.8", 0, 1,
                           "share of its score the oldest note keeps (1: no recency)"},
    [CFG_IMPORTANCE_MAX] = {"importanceMax", "MNEMO_IMPORTANCE_MAX", T_NUM, "1.25", 1, 4,
                            "score factor of importance 10 (importance 1: its inverse)"},
    [CFG_MMR_LAMBDA] = {"mmrLambda", "MNEMO_MMR_LAMBDA", T_NUM, "0.7", 0, 1,
                        "diversity: 1 keeps the score order, lower favours variety"},
    [CFG_MMR_POOL] = {"mmrPool", "MNEMO_MMR_POOL", T_INT, "30", 0, 1000,
                      "how many top results the diversity pass reorders"},
    [CFG_STRICT_MIN_SCORE] = {"strictMinScore", "MNEMO_STRICT_MIN_SCORE", T_BOOL, "false", 0, 0,
                              "return nothing when no result clears minScore (abstain)"},
    [CFG_SOURCES] = {"sources", "MNEMO_SOURCES", T_LIST, "[\"memory\"]", 0, 0,
                     "what to index: memory, sessions (transcripts in sessionsDir)"},
    [CFG_SESSIONS_DIR] = {"sessionsDir", "MNEMO_SESSIONS_DIR", T_STR, "", 0, 0,
                          "folder of JSONL session transcripts (OpenClaw, Claude Code)"},
    [CFG_USER_ID] = {"userId", "MNEMO_USER_ID", T_STR, "default", 0, 0,
                     "whose memories: the user_id of stored memories by default"},
    [CFG_AGENT_ID] = {"agentId", "MNEMO_AGENT_ID", T_STR, "", 0, 0,
                      "the agent_id of stored memories by default (empty: shared)"},
    [CFG_MEMORY_HALF_LIFE_DAYS] = {"memoryHalfLifeDays", "MNEMO_MEMORY_HALF_LIFE_DAYS", T_NUM,
                                   "30", 0, 36500,
                                   "how fast unconfirmed memories fade (each confirmation "
                                   "lengthens it)"},
    [CFG_MEMORY_MIN_SCORE] = {"memoryMinScore", "MNEMO_MEMORY_MIN_SCORE", T_NUM, "0.3", 0, 1,
                              "memory search: drop results scoring below this"},
    [CFG_MEMORY_CONTEXT] = {"memoryContext", "MNEMO_MEMORY_CONTEXT", T_NUM, "0.7", 0, 1,
                            "memory search: share of a memory's text evidence that comes from "
                            "the memories stored just before and after it (0: none)"},
    [CFG_RECALL_STRATEGY] = {"recallStrategy", "MNEMO_RECALL_STRATEGY", T_STR, "smart", 0, 0,
                             "recalled-memories block: smart, always (adds session memory), "
                             "manual (nothing)",
                             "smart,always,manual"},
    [CFG_RECALL_BUDGET_TOKENS] = {"recallBudgetTokens", "MNEMO_RECALL_BUDGET_TOKENS", T_INT,
                                  "1500", 0, 100000,
                                  "size of the recalled-memories block (about 4 characters a "
                                  "token)"},
    [CFG_RECALL_MAX_MEMORIES] = {"recallMaxMemories", "MNEMO_RECALL_MAX_MEMORIES", T_INT, "15", 0,
                                 1000, "most memories in the recalled-memories block"},
    [CFG_RECALL_THRESHOLD] = {"recallThreshold", "MNEMO_RECALL_THRESHOLD", T_NUM, "0.4", 0, 1,
                              "similarity a memory needs to be recalled for a message"},
    [CFG_RECALL_CATEGORIES] = {"recallCategories", "MNEMO_RECALL_CATEGORIES", T_LIST,
                               "[\"identity\",\"configuration\",\"rule\",\"preference\","
                               "\"decision\",\"technical\",\"relationship\",\"project\","
                               "\"operational\"]",
                               0, 0, "order of categories in the recalled-memories block"},
    [CFG_STORE] = {"store", "MNEMO_STORE", T_OBJECT, "{\"backend\":\"sqlite\"}", 0, 0,
                   "storage backend: {\"backend\":\"sqlite\"} or {\"backend\":\"postgres\","
                   "\"dsn\":\"postgres://...\"}, with read replicas \"readDsns\":[...], "
                   "\"replicaWaitMs\", \"replicaMaxLagMs\", \"replicaRetryMs\"; env/flag form: a "
                   "postgres:// URI or the object; one field: --set store.readDsns=A,B "
                   "(docs/postgres.md)"},
    [CFG_PG_ENV_FILE] = {"pgEnvFile", "MNEMO_PG_ENV_FILE", T_STR, "", 0, 0,
                         "file of KEY=VALUE lines with PostgreSQL settings (PGHOST, PGPORT, "
                         "PGUSER, PGPASSWORD, PGDATABASE, DATABASE_URL ...)"},
    [CFG_SOURCE_TABLE] = {"sourceTable", "MNEMO_SOURCE_TABLE", T_STR, "", 0, 0,
                          "search this existing PostgreSQL table of embedded memories "
                          "(read-only) instead of the local index"},
    [CFG_SOURCE_COLUMNS] = {"sourceColumns", "MNEMO_SOURCE_COLUMNS", T_OBJECT, "{}", 0, 0,
                            "column names of sourceTable: {\"id\",\"content\",\"source_type\","
                            "\"embedding\",\"created_at\",\"updated_at\"} (default: those names)"},
    [CFG_SOURCE_PRIORITIES] = {"sourcePriorities", "MNEMO_SOURCE_PRIORITIES", T_STR,
                               "memory_type_priorities", 0, 0,
                               "table of (source_type, priority) weights for sourceTable "
                               "(\"\": none)"},
    [CFG_TENANT] = {"tenant", "MNEMO_TENANT", T_STR, "", 0, 0,
                    "on PostgreSQL: whose rows these are (every table is keyed by it); "
                    "empty: this host and workspace, so workspaces do not mix; set the same "
                    "value to share"},
};

struct mnemo_config {
    char *val[CFG__COUNT];
    char *src[CFG__COUNT];
};

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static void seterr(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(char **err, const char *fmt, ...)
{
    if (!err)
        return;
    buf b;
    buf_init(&b, 4096);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    free(*err);
    *err = buf_detach(&b);
}

int mnemo_config_new(mnemo_config **out)
{
    mnemo_config *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return MNEMO_NOMEM;
    for (int i = 0; i < CFG__COUNT; i++) {
        c->val[i] = dupstr(keys[i].def);
        c->src[i] = dupstr("default");
        if (!c->val[i] || !c->src[i]) {
            cfg_free(c);
            return MNEMO_NOMEM;
        }
    }
    *out = c;
    return MNEMO_OK;
}

void cfg_free(mnemo_config *c)
{
    if (!c)
        return;
    for (int i = 0; i < CFG__COUNT; i++) {
        free(c->val[i]);
        free(c->src[i]);
    }
    free(c);
}

void mnemo_config_free(mnemo_config *c) { cfg_free(c); }

mnemo_config *cfg_copy(const mnemo_config *c)
{
    mnemo_config *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    for (int i = 0; i < CFG__COUNT; i++) {
        d->val[i] = dupstr(c->val[i]);
        d->src[i] = dupstr(c->src[i]);
        if (!d->val[i] || !d->src[i]) {
            cfg_free(d);
            return NULL;
        }
    }
    return d;
}

static int find_key(const char *name)
{
    for (int i = 0; i < CFG__COUNT; i++)
        if (strcmp(keys[i].name, name) == 0)
            return i;
    return -1;
}

const char *mnemo_config_key(size_t i, const char **env, const char **help)
{
    if (i >= CFG__COUNT)
        return NULL;
    if (env)
        *env = keys[i].env;
    if (help)
        *help = keys[i].help;
    return keys[i].name;
}

/* Normalises a list value to a compact JSON array of strings and
 * {"path","pattern"} objects. */
/* sources: each entry "memory" or "sessions". */
static int check_sources(const char *norm, char **err)
{
    json_t *arr = json_loads(norm, 0, NULL);
    size_t i;
    json_t *v;
    int bad = 0;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        if (!bad && (!s || (strcmp(s, "memory") != 0 && strcmp(s, "sessions") != 0))) {
            seterr(err, "sources: unknown source '%s' (expected memory or sessions)",
                   s ? s : "(object)");
            bad = 1;
        }
    }
    json_decref(arr);
    return bad;
}

static char *parse_list(const char *value, const char *name, char **err)
{
    json_t *arr = NULL;
    const char *p = value;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '[') {
        json_error_t je;
        arr = json_loads(value, 0, &je);
        if (!arr || !json_is_array(arr)) {
            seterr(err, "%s: invalid JSON array: %s", name, arr ? "not an array" : je.text);
            json_decref(arr);
            return NULL;
        }
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v)
        {
            if (json_is_string(v) && json_string_length(v) > 0)
                continue;
            if (json_is_object(v) && json_is_string(json_object_get(v, "path"))) {
                json_t *pat = json_object_get(v, "pattern");
                const char *k;
                json_t *x;
                int bad = pat && !json_is_string(pat);
                json_object_foreach(v, k, x)
                {
                    if (strcmp(k, "path") != 0 && strcmp(k, "pattern") != 0)
                        bad = 1;
                }
                if (!bad)
                    continue;
            }
            seterr(err, "%s: entry %zu must be a path string or {\"path\":...,\"pattern\":...}",
                   name, i);
            json_decref(arr);
            return NULL;
        }
    } else {
        arr = json_array();
        if (!arr)
            return NULL;
        const char *s = value;
        while (*s) {
            const char *e = strchr(s, ',');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            while (n && (*s == ' ' || *s == '\t')) {
                s++;
                n--;
            }
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
            if (n) {
                const char *eq = memchr(s, '=', n);
                json_t *item;
                if (eq)
                    item = json_pack("{s:s%,s:s%}", "path", s, (size_t)(eq - s), "pattern",
                                     eq + 1, (size_t)(n - (size_t)(eq - s) - 1));
                else
                    item = json_stringn(s, n);
                json_array_append_new(arr, item);
            }
            s = e ? e + 1 : s + strlen(s);
        }
    }
    char *out = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return out;
}

/* The PostgreSQL keys: store (a postgres:// URI, "sqlite", "postgres" or
 * {"backend","dsn"}), sourceColumns (known columns only) and the table
 * names, which must be plain or schema-qualified identifiers: they are the
 * only configured text that goes into SQL. */
static const char *const source_cols[] = {"id",         "content",    "source_type",
                                          "embedding",  "created_at", "updated_at"};

/* The store object's fields besides backend and dsn: the read replicas
 * (an array of DSNs) and the routing's bounds in milliseconds. */
static const struct {
    const char *name;
    long lo, hi;
} store_nums[] = {
    {"replicaWaitMs", 0, 60000},
    {"replicaMaxLagMs", 0, 86400000},
    {"replicaRetryMs", 0, 3600000},
};
#define NSTORE_NUMS (sizeof store_nums / sizeof *store_nums)

/* readDsns as given: a JSON array of strings, or one string, a comma-
 * separated list (a DSN that holds a comma itself needs the array). The
 * array of the non-empty entries into *OUT (new reference). */
static int store_read_dsns(json_t *v, json_t **out, char **err)
{
    *out = NULL;
    json_t *arr = json_array();
    if (!arr)
        return MNEMO_NOMEM;
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            const char *s = json_string_value(x);
            if (!s) {
                seterr(err, "store: readDsns entry %zu must be a string", i);
                json_decref(arr);
                return MNEMO_INVALID;
            }
            if (*s)
                json_array_append_new(arr, json_string(s));
        }
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        while (*s) {
            const char *e = strchr(s, ',');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            while (n && (*s == ' ' || *s == '\t')) {
                s++;
                n--;
            }
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
            if (n)
                json_array_append_new(arr, json_stringn(s, n));
            s = e ? e + 1 : s + strlen(s);
        }
    } else {
        seterr(err, "store: readDsns must be an array of DSNs or a comma-separated list");
        json_decref(arr);
        return MNEMO_INVALID;
    }
    *out = arr;
    return MNEMO_OK;
}

/* A millisecond field given as a JSON integer or a string of digits. */
static int store_num(const char *key, json_t *v, long lo, long hi, json_t **out, char **err)
{
    char *end = NULL;
    double d = json_is_integer(v)  ? (double)json_integer_value(v)
               : json_is_string(v) ? strtod(json_string_value(v), &end)
                                   : NAN;
    if (end && (end == json_string_value(v) || *end))
        d = NAN;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi) {
        seterr(err, "store: %s must be an integer in [%ld, %ld] (milliseconds)", key, lo, hi);
        return MNEMO_INVALID;
    }
    *out = json_integer((json_int_t)d);
    return *out ? MNEMO_OK : MNEMO_NOMEM;
}

static int check_pg_key(int k, const char *value, char **norm, char **err)
{
    const char *name = keys[k].name;
    if (k == CFG_SOURCE_TABLE || k == CFG_SOURCE_PRIORITIES) {
        if (*value && !dsn_ident_valid(value)) {
            seterr(err, "%s: '%s' is not a table name (letters, digits and _, optionally "
                        "schema.table)", name, value);
            return MNEMO_INVALID;
        }
        *norm = dupstr(value);
        return *norm ? MNEMO_OK : MNEMO_NOMEM;
    }
    json_t *o = NULL;
    const char *p = value;
    while (*p == ' ' || *p == '\t')
        p++;
    if (k == CFG_STORE && *p != '{') {
        if (!strcmp(p, "sqlite") || !strcmp(p, "postgres"))
            o = json_pack("{s:s}", "backend", p);
        else if (!strncmp(p, "postgres://", 11) || !strncmp(p, "postgresql://", 13))
            o = json_pack("{s:s,s:s}", "backend", "postgres", "dsn", p);
        else {
            seterr(err, "%s: expected a postgres:// URI, sqlite, postgres or a JSON object",
                   name);
            return MNEMO_INVALID;
        }
    } else {
        o = json_loads(value, 0, NULL);
    }
    const char *key;
    json_t *v;
    int bad = !json_is_object(o);
    if (!bad) {
        json_t *fixed = k == CFG_STORE ? json_object() : NULL;
        json_object_foreach(o, key, v)
        {
            const char *s = json_string_value(v);
            if (k == CFG_STORE && !strcmp(key, "readDsns")) {
                json_t *arr;
                int rc = store_read_dsns(v, &arr, err);
                if (rc == MNEMO_NOMEM) {
                    json_decref(fixed);
                    json_decref(o);
                    return rc;
                }
                bad |= rc != MNEMO_OK;
                if (rc == MNEMO_OK)
                    json_object_set_new(fixed, key, arr);
                continue;
            }
            size_t ni = 0;
            while (k == CFG_STORE && ni < NSTORE_NUMS && strcmp(key, store_nums[ni].name) != 0)
                ni++;
            if (k == CFG_STORE && ni < NSTORE_NUMS) {
                json_t *num;
                int rc = store_num(key, v, store_nums[ni].lo, store_nums[ni].hi, &num, err);
                if (rc == MNEMO_NOMEM) {
                    json_decref(fixed);
                    json_decref(o);
                    return rc;
                }
                bad |= rc != MNEMO_OK;
                if (rc == MNEMO_OK)
                    json_object_set_new(fixed, key, num);
                continue;
            }
            if (!s) {
                seterr(err, "%s: '%s' must be a string", name, key);
                bad = 1;
            } else if (k == CFG_STORE) {
                if (!strcmp(key, "backend")) {
                    if (strcmp(s, "sqlite") != 0 && strcmp(s, "postgres") != 0) {
                        seterr(err, "%s: backend '%s' is not one of sqlite,postgres", name, s);
                        bad = 1;
                    }
                } else if (strcmp(key, "dsn") != 0) {
                    seterr(err,
                           "%s: unknown field '%s' (backend, dsn, readDsns, replicaWaitMs, "
                           "replicaMaxLagMs, replicaRetryMs)",
                           name, key);
                    bad = 1;
                }
            } else {
                int known = 0;
                for (size_t i = 0; i < sizeof source_cols / sizeof *source_cols; i++)
                    known |= !strcmp(key, source_cols[i]);
                if (!known) {
                    seterr(err, "%s: unknown column role '%s' (id, content, source_type, "
                                "embedding, created_at, updated_at)", name, key);
                    bad = 1;
                } else if (!dsn_ident_valid(s) || strchr(s, '.')) {
                    seterr(err, "%s: '%s' is not a column name (letters, digits and _)", name,
                           s);
                    bad = 1;
                }
            }
        }
        if (fixed) {
            json_object_update(o, fixed);
            json_decref(fixed);
        }
    } else {
        seterr(err, "%s: expected a JSON object of strings", name);
    }
    if (!bad && k == CFG_STORE && !json_object_get(o, "backend"))
        json_object_set_new(o, "backend", json_string(json_object_get(o, "dsn") ? "postgres"
                                                                               : "sqlite"));
    if (bad) {
        json_decref(o);
        return MNEMO_INVALID;
    }
    *norm = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return *norm ? MNEMO_OK : MNEMO_NOMEM;
}

/* The largest media file multimodal.maxFileBytes allows: a request carries
 * it base64-encoded (a third larger), and providers take about 20 MB. */
#define MEDIA_MAX_BYTES (15 << 20)

/* A boolean as JSON or as text ("true", "on", "1"...); -1 when neither. */
static int bool_of(const json_t *v)
{
    if (json_is_boolean(v))
        return json_is_true(v);
    const char *s = json_string_value(v);
    if (!s)
        return -1;
    if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "on"))
        return 1;
    if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "off"))
        return 0;
    return -1;
}

/* The modalities of V (an array of names, or a comma-separated string)
 * into *IMAGE and *AUDIO; -1 when a name is not image, audio or all. */
static int modalities_of(const json_t *v, int *image, int *audio, char **err)
{
    json_t *arr = NULL;
    if (json_is_string(v)) {
        arr = json_array();
        const char *p = json_string_value(v);
        while (arr && *p) {
            size_t n = strcspn(p, ",");
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)(n < 31 ? n : 31), p);
            json_array_append_new(arr, json_string(name));
            p += n + (p[n] == ',');
        }
    } else if (json_is_array(v)) {
        arr = json_incref((json_t *)v);
    }
    if (!arr) {
        seterr(err, "multimodal.modalities: expected a list of image, audio or all");
        return -1;
    }
    *image = *audio = 0;
    size_t i;
    json_t *e;
    int rc = 0;
    json_array_foreach(arr, i, e) {
        const char *s = json_string_value(e);
        if (s && !strcmp(s, "image"))
            *image = 1;
        else if (s && !strcmp(s, "audio"))
            *audio = 1;
        else if (s && !strcmp(s, "all"))
            *image = *audio = 1;
        else {
            seterr(err, "multimodal.modalities: '%s' is not image, audio or all",
                   s ? s : "(not a string)");
            rc = -1;
            break;
        }
    }
    json_decref(arr);
    if (!rc && !*image && !*audio) {
        seterr(err, "multimodal.modalities: empty (image, audio or all)");
        rc = -1;
    }
    return rc;
}

/* Validates the multimodal object VALUE (or just true/false) into *NORM:
 * {"enabled","maxFileBytes","modalities"}, missing fields at their
 * defaults. */
static int check_multimodal(const char *value, char **norm, char **err)
{
    json_t *o = json_loads(value, JSON_DECODE_ANY, NULL);
    int on = bool_of(o);
    if (on >= 0) {
        json_decref(o);
        o = json_pack("{s:b}", "enabled", on);
    }
    if (!json_is_object(o)) {
        json_decref(o);
        seterr(err, "multimodal: expected a JSON object {\"enabled\",\"modalities\","
                    "\"maxFileBytes\"} or true/false");
        return MNEMO_INVALID;
    }
    int enabled = 0, image = 1, audio = 1, bad = 0;
    json_int_t max = 10 << 20;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (!strcmp(key, "enabled")) {
            if ((enabled = bool_of(v)) < 0) {
                seterr(err, "multimodal.enabled: expected true or false");
                bad = 1;
            }
        } else if (!strcmp(key, "modalities")) {
            bad |= modalities_of(v, &image, &audio, err) != 0;
        } else if (!strcmp(key, "maxFileBytes")) {
            const char *s = json_string_value(v);
            char *end = NULL;
            max = json_is_integer(v) ? json_integer_value(v)
                  : s               ? (json_int_t)strtoll(s, &end, 10)
                                    : -1;
            if ((s && (!*s || *end)) || max < 1 || max > MEDIA_MAX_BYTES) {
                seterr(err, "multimodal.maxFileBytes: expected a number of bytes from 1 to %d",
                       MEDIA_MAX_BYTES);
                bad = 1;
            }
        } else {
            seterr(err, "multimodal: unknown field '%s' (enabled, modalities, maxFileBytes)",
                   key);
            bad = 1;
        }
        if (bad)
            break;
    }
    json_decref(o);
    if (bad)
        return MNEMO_INVALID;
    json_t *n = json_pack("{s:b,s:I,s:[]}", "enabled", enabled, "maxFileBytes", max,
                          "modalities");
    json_t *mods = json_object_get(n, "modalities");
    if (mods && image)
        json_array_append_new(mods, json_string("image"));
    if (mods && audio)
        json_array_append_new(mods, json_string("audio"));
    *norm = n ? json_dumps(n, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(n);
    return *norm ? MNEMO_OK : MNEMO_NOMEM;
}

void cfg_multimodal(const mnemo_config *c, cfg_media *out)
{
    memset(out, 0, sizeof *out);
    json_t *o = json_loads(c->val[CFG_MULTIMODAL], 0, NULL);
    out->enabled = json_is_true(json_object_get(o, "enabled"));
    out->max_bytes = json_integer_value(json_object_get(o, "maxFileBytes"));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "modalities"), i, e) {
        out->image |= !strcmp(json_string_value(e), "image");
        out->audio |= !strcmp(json_string_value(e), "audio");
    }
    json_decref(o);
    if (!o) /* out of memory: as if off */
        out->enabled = 0;
}

/* multimodal.FIELD=VALUE: one field, the others kept. */
static int config_set(mnemo_config *c, const char *name, const char *value, const char *source,
                      char **err);
static int set_media_field(mnemo_config *c, const char *field, const char *value,
                           const char *source, char **err)
{
    json_t *o = json_loads(c->val[CFG_MULTIMODAL], 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    json_object_set_new(o, field, json_string(value));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s)
        return MNEMO_NOMEM;
    int rc = config_set(c, "multimodal", s, source, err);
    free(s);
    return rc;
}

/* store.FIELD=VALUE: one field of the store object, the others kept
 * (readDsns as a comma-separated list or a JSON array). */
static int set_store_field(mnemo_config *c, const char *field, const char *value,
                           const char *source, char **err)
{
    json_t *o = json_loads(c->val[CFG_STORE], 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    json_t *v = NULL;
    const char *p = value;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!strcmp(field, "readDsns") && *p == '[') {
        json_error_t je;
        if (!(v = json_loads(value, 0, &je))) {
            seterr(err, "store.readDsns: invalid JSON array: %s", je.text);
            json_decref(o);
            return MNEMO_INVALID;
        }
    } else {
        v = json_string(value);
    }
    json_object_set_new(o, field, v);
    if (!strcmp(field, "dsn") && !json_object_get(o, "backend"))
        json_object_set_new(o, "backend", json_string("postgres"));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s)
        return MNEMO_NOMEM;
    int rc = config_set(c, "store", s, source, err);
    free(s);
    return rc;
}

static int config_set(mnemo_config *c, const char *name, const char *value, const char *source,
                      char **err)
{
    int k = find_key(name);
    if (k < 0 && !strncmp(name, "store.", 6) && name[6]) {
        static const char *const fields[] = {"backend",       "dsn",
                                             "readDsns",      "replicaWaitMs",
                                             "replicaMaxLagMs", "replicaRetryMs"};
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
            if (!strcmp(name + 6, fields[i]))
                return set_store_field(c, fields[i], value, source, err);
    }
    if (k < 0 && !strncmp(name, "multimodal.", 11) && name[11]) {
        static const char *const fields[] = {"enabled", "modalities", "maxFileBytes"};
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
            if (!strcmp(name + 11, fields[i]))
                return set_media_field(c, fields[i], value, source, err);
    }
    if (k < 0) {
        seterr(err, "unknown configuration key '%s' (mnemo config keys lists them)", name);
        return MNEMO_INVALID;
    }
    const keydef *d = &keys[k];
    char *norm = NULL;
    int pg_key = k == CFG_STORE || k == CFG_SOURCE_COLUMNS || k == CFG_SOURCE_TABLE ||
                 k == CFG_SOURCE_PRIORITIES;
    if (pg_key || k == CFG_MULTIMODAL) {
        int rc = pg_key ? check_pg_key(k, value, &norm, err) : check_multimodal(value, &norm, err);
        if (rc)
            return rc;
    }
    switch (pg_key || k == CFG_MULTIMODAL ? -1 : d->type) {
    case T_STR:
        if (d->choices) {
            size_t vl = strlen(value);
            int ok = 0;
            for (const char *ch = d->choices; *ch;) {
                const char *e = strchr(ch, ',');
                size_t n = e ? (size_t)(e - ch) : strlen(ch);
                if (n == vl && strncmp(ch, value, n) == 0)
                    ok = 1;
                ch += n + (e ? 1 : 0);
            }
            if (!ok) {
                seterr(err, "%s: '%s' is not one of %s", name, value, d->choices);
                return MNEMO_INVALID;
            }
        }
        if (k == CFG_LANGUAGE && !tok_language_valid(value)) {
            char list[1024];
            tok_language_list(list, sizeof list);
            seterr(err, "%s: unknown language '%s'; use none or one of: %s", name, value, list);
            return MNEMO_INVALID;
        }
        norm = dupstr(value);
        break;
    case T_INT:
    case T_NUM: {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        while (*end == ' ')
            end++;
        if (!*value || *end || errno || !isfinite(v) ||
            (d->type == T_INT && v != floor(v))) {
            seterr(err, "%s: '%s' is not %s", name, value,
                   d->type == T_INT ? "an integer" : "a number");
            return MNEMO_INVALID;
        }
        if (v < d->lo || v > d->hi) {
            seterr(err, "%s: %s is out of range [%g, %g]", name, value, d->lo, d->hi);
            return MNEMO_INVALID;
        }
        char tmp[64];
        if (d->type == T_INT)
            snprintf(tmp, sizeof tmp, "%ld", (long)v);
        else
            snprintf(tmp, sizeof tmp, "%.17g", v);
        /* Prefer the short form when it round-trips. */
        if (d->type == T_NUM) {
            char shortf[64];
            snprintf(shortf, sizeof shortf, "%g", v);
            if (strtod(shortf, NULL) == v)
                memcpy(tmp, shortf, strlen(shortf) + 1);
        }
        norm = dupstr(tmp);
        break;
    }
    case T_BOOL:
        if (!strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "yes") ||
            !strcmp(value, "on"))
            norm = dupstr("true");
        else if (!strcmp(value, "false") || !strcmp(value, "0") || !strcmp(value, "no") ||
                 !strcmp(value, "off"))
            norm = dupstr("false");
        else {
            seterr(err, "%s: '%s' is not true or false", name, value);
            return MNEMO_INVALID;
        }
        break;
    case T_LIST:
        norm = parse_list(value, name, err);
        if (!norm)
            return err && *err ? MNEMO_INVALID : MNEMO_NOMEM;
        if (k == CFG_SOURCES && check_sources(norm, err)) {
            free(norm);
            return MNEMO_INVALID;
        }
        break;
    case T_OBJECT: {
        json_error_t je;
        json_t *o = json_loads(value, 0, &je);
        const char *k2;
        json_t *v;
        int bad = !json_is_object(o);
        if (!bad)
            json_object_foreach(o, k2, v) if (!json_is_string(v)) bad = 1;
        if (bad) {
            seterr(err, "%s: expected a JSON object of strings", name);
            json_decref(o);
            return MNEMO_INVALID;
        }
        norm = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(o);
        break;
    }
    }
    char *src = dupstr(source ? source : "caller");
    if (!norm || !src) {
        free(norm);
        free(src);
        return MNEMO_NOMEM;
    }
    free(c->val[k]);
    free(c->src[k]);
    c->val[k] = norm;
    c->src[k] = src;
    return MNEMO_OK;
}

int mnemo_config_set(mnemo_config *c, const char *name, const char *value, const char *source,
                     char **err)
{
    return config_set(c, name, value, source, err);
}

const char *mnemo_config_get(const mnemo_config *c, const char *name)
{
    int k = find_key(name);
    return k < 0 ? NULL : c->val[k];
}

const char *cfg_str(const mnemo_config *c, int key) { return c->val[key]; }
long cfg_int(const mnemo_config *c, int key) { return strtol(c->val[key], NULL, 10); }
double cfg_num(const mnemo_config *c, int key) { return strtod(c->val[key], NULL); }
int cfg_bool(const mnemo_config *c, int key) { return strcmp(c->val[key], "true") == 0; }

static int load_file(mnemo_config *c, const char *path, char **err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return MNEMO_NOTFOUND;
        seterr(err, "%s: %s", path, strerror(errno));
        return MNEMO_IO;
    }
    json_error_t je;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!root) {
        seterr(err, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column, je.text);
        return MNEMO_INVALID;
    }
    int rc = MNEMO_OK;
    if (!json_is_object(root)) {
        seterr(err, "%s: the configuration must be a JSON object", path);
        rc = MNEMO_INVALID;
        goto done;
    }
    const char *name;
    json_t *v;
    json_object_foreach(root, name, v)
    {
        if (name[0] == '$' || name[0] == '_')
            continue; /* "$schema", "_comment" */
        int k = find_key(name);
        if (k < 0) {
            seterr(err, "%s: unknown configuration key '%s'", path, name);
            rc = MNEMO_INVALID;
            goto done;
        }
        char *str = NULL;
        char num[64];
        const char *s = NULL;
        if (json_is_string(v) && keys[k].type != T_LIST)
            s = json_string_value(v);
        else if (json_is_integer(v) && (keys[k].type == T_INT || keys[k].type == T_NUM)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
            s = num;
        } else if (json_is_real(v) && keys[k].type == T_NUM) {
            snprintf(num, sizeof num, "%.17g", json_real_value(v));
            s = num;
        } else if (json_is_boolean(v) && keys[k].type == T_BOOL)
            s = json_is_true(v) ? "true" : "false";
        else if (json_is_array(v) && keys[k].type == T_LIST)
            s = str = json_dumps(v, JSON_COMPACT);
        else if (json_is_object(v) && keys[k].type == T_OBJECT)
            s = str = json_dumps(v, JSON_COMPACT);
        if (!s) {
            seterr(err, "%s: '%s' has the wrong type", path, name);
            rc = MNEMO_INVALID;
            goto done;
        }
        char *e2 = NULL;
        rc = config_set(c, name, s, path, &e2);
        free(str);
        if (rc) {
            seterr(err, "%s: %s", path, e2 ? e2 : errcode_text(rc));
            free(e2);
            goto done;
        }
    }
done:
    json_decref(root);
    return rc;
}

int mnemo_config_load_file(mnemo_config *c, const char *path, char **err)
{
    return load_file(c, path, err);
}

static int load_env(mnemo_config *c, char **err)
{
    for (int i = 0; i < CFG__COUNT; i++) {
        const char *v = getenv(keys[i].env);
        if (!v)
            continue;
        char *e2 = NULL;
        int rc = config_set(c, keys[i].name, v, keys[i].env, &e2);
        if (rc) {
            seterr(err, "%s: %s", keys[i].env, e2 ? e2 : errcode_text(rc));
            free(e2);
            return rc;
        }
    }
    return MNEMO_OK;
}

int mnemo_config_load_env(mnemo_config *c, char **err) { return load_env(c, err); }

int mnemo_config_load_standard(mnemo_config *c, const char *explicit_file, char **err)
{
    buf path;
    buf_init(&path, 8192);
    int rc = MNEMO_OK;
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        buf_printf(&path, "%s/mnemo/config.json", xdg);
    else if (home && *home)
        buf_printf(&path, "%s/.config/mnemo/config.json", home);
    if (path.len && !buf_err(&path)) {
        rc = load_file(c, path.data, err);
        if (rc == MNEMO_NOTFOUND)
            rc = MNEMO_OK;
        if (rc)
            goto done;
    }
    if (explicit_file) {
        rc = load_file(c, explicit_file, err);
        if (rc == MNEMO_NOTFOUND)
            seterr(err, "%s: configuration file not found", explicit_file);
        if (rc)
            goto done;
    } else {
        /* The workspace may itself come from the environment. */
        const char *ws = getenv("MNEMO_WORKSPACE");
        if (!ws || !*ws || strcmp(c->src[CFG_WORKSPACE], "default") != 0)
            ws = c->val[CFG_WORKSPACE];
        buf_reset(&path);
        buf_printf(&path, "%s/mnemo.json", *ws ? ws : ".");
        if (!buf_err(&path)) {
            rc = load_file(c, path.data, err);
            if (rc == MNEMO_NOTFOUND)
                rc = MNEMO_OK;
            if (rc)
                goto done;
        }
    }
    rc = load_env(c, err);
done:
    buf_cleanup(&path);
    return rc;
}

/* V as a JSON string with its credentials masked (dsn_redact). */
static json_t *redacted(const char *v)
{
    buf red;
    buf_init(&red, 0);
    dsn_redact(&red, v, NULL);
    json_t *j = buf_err(&red) ? NULL : json_string(red.data ? red.data : "");
    buf_cleanup(&red);
    return j;
}

char *mnemo_config_json(const mnemo_config *c, int with_sources)
{
    json_t *root = json_object();
    if (!root)
        return NULL;
    for (int i = 0; i < CFG__COUNT; i++) {
        const char *v = c->val[i];
        json_t *jv;
        switch (keys[i].type) {
        case T_INT:
            jv = json_integer(strtoll(v, NULL, 10));
            break;
        case T_NUM:
            jv = json_real(strtod(v, NULL));
            break;
        case T_BOOL:
            jv = json_boolean(strcmp(v, "true") == 0);
            break;
        case T_LIST:
            jv = json_loads(v, 0, NULL);
            break;
        case T_OBJECT: {
            jv = json_loads(v, 0, NULL);
            if (i == CFG_SOURCE_COLUMNS || i == CFG_MULTIMODAL)
                break;
            if (i == CFG_STORE) {
                json_t *dsn = json_object_get(jv, "dsn");
                if (json_is_string(dsn))
                    json_object_set_new(jv, "dsn", redacted(json_string_value(dsn)));
                size_t ri;
                json_t *rv;
                json_array_foreach(json_object_get(jv, "readDsns"), ri, rv)
                {
                    json_array_set_new(json_object_get(jv, "readDsns"), ri,
                                       redacted(json_string_value(rv)));
                }
                break;
            }
            /* Header values may carry credentials: never print them. */
            const char *hk;
            json_t *hv;
            json_object_foreach(jv, hk, hv)
            {
                if (strchr(json_string_value(hv), '$') == NULL)
                    json_object_set_new(jv, hk, json_string("(set)"));
            }
            break;
        }
        default:
            /* Endpoints may carry user:password@ or ?key=: never print them. */
            jv = i == CFG_BASE_URL || i == CFG_HUB_ENDPOINT ? redacted(v) : json_string(v);
        }
        if (with_sources)
            jv = json_pack("{s:o,s:s}", "value", jv, "source", c->src[i]);
        json_object_set_new(root, keys[i].name, jv);
    }
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    return s;
}
