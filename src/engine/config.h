/*
 * config.h - internal view of the configuration: key ids and typed getters.
 * The public half (mnemo_config_*) is declared in mnemo.h.
 */
#ifndef MNEMO_CONFIG_H
#define MNEMO_CONFIG_H

#include <stdint.h>

#include "mnemo.h"

enum cfg_key {
    CFG_WORKSPACE,
    CFG_DB,
    CFG_MEMORY_DB,
    CFG_MEMORY_BACKUPS,
    CFG_MEMORY_BACKUP_EVERY,
    CFG_MEMORY_COUNT_LIMIT,
    CFG_EXTRA_PATHS,
    CFG_MULTIMODAL,
    CFG_CHUNK_TOKENS,
    CFG_CHUNK_OVERLAP,
    CFG_LANGUAGE,
    CFG_STOP_WORDS,
    CFG_MAX_RESULTS,
    CFG_MIN_SCORE,
    CFG_BM25_K1,
    CFG_BM25_B,
    CFG_MAX_FILE_BYTES,
    CFG_SNIPPET_CHARS,
    CFG_WATCH_DEBOUNCE_MS,
    CFG_BUSY_TIMEOUT_MS,
    CFG_PROVIDER,
    CFG_MODEL,
    CFG_BASE_URL,
    CFG_API_KEY_ENV,
    CFG_HEADERS,
    CFG_DIMENSIONS,
    CFG_QUERY_INPUT_TYPE,
    CFG_DOCUMENT_INPUT_TYPE,
    CFG_INPUT_TYPE,
    CFG_COPILOT_TOKEN_URL,
    CFG_QUERY_PREFIX,
    CFG_DOCUMENT_PREFIX,
    CFG_VECTOR_CHARS,
    CFG_EMBED_BATCH_BYTES,
    CFG_EMBED_CONCURRENCY,
    CFG_EMBED_QUERY_TIMEOUT_MS,
    CFG_EMBED_BATCH_TIMEOUT_MS,
    CFG_EMBED_CACHE_MAX,
    CFG_LOCAL_THREADS,
    CFG_LOCAL_QUANTIZATION,
    CFG_MODELS_DIR,
    CFG_HUB_ENDPOINT,
    CFG_FUSION,
    CFG_VECTOR_WEIGHT,
    CFG_TEXT_WEIGHT,
    CFG_RRF_K,
    CFG_VECTOR_QUANTIZATION,
    CFG_RECENCY_HALF_LIFE_DAYS,
    CFG_RECENCY_FLOOR,
    CFG_IMPORTANCE_MAX,
    CFG_MMR_LAMBDA,
    CFG_MMR_POOL,
    CFG_STRICT_MIN_SCORE,
    CFG_SOURCES,
    CFG_SESSIONS_DIR,
    CFG_USER_ID,
    CFG_AGENT_ID,
    CFG_MEMORY_HALF_LIFE_DAYS,
    CFG_MEMORY_MIN_SCORE,
    CFG_MEMORY_CONTEXT,
    CFG_RECALL_STRATEGY,
    CFG_RECALL_BUDGET_TOKENS,
    CFG_RECALL_MAX_MEMORIES,
    CFG_RECALL_THRESHOLD,
    CFG_RECALL_CATEGORIES,
    CFG_STORE,
    CFG_PG_ENV_FILE,
    CFG_SOURCE_TABLE,
    CFG_SOURCE_COLUMNS,
    CFG_SOURCE_PRIORITIES,
    CFG_TENANT,
    CFG__COUNT
};

/* Typed getters; the value was validated when set. */
const char *cfg_str(const mnemo_config *c, int key); /* "" when unset */
long cfg_int(const mnemo_config *c, int key);
double cfg_num(const mnemo_config *c, int key);
int cfg_bool(const mnemo_config *c, int key);

/* The multimodal setting (images and audio under extraPaths), parsed. */
typedef struct cfg_media {
    int enabled;
    int image, audio;  /* the modalities asked for (both for "all") */
    int64_t max_bytes; /* maxFileBytes */
} cfg_media;
void cfg_multimodal(const mnemo_config *c, cfg_media *out);

/* A deep copy, or NULL on out-of-memory. */
mnemo_config *cfg_copy(const mnemo_config *c);
void cfg_free(mnemo_config *c); /* mnemo_config_free */

#endif
