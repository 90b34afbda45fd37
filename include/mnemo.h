/*
 * mnemo.h - the public API of libmnemo, a memory search engine for AI agents.
 *
 * mnemo indexes an agent's Markdown memory (MEMORY.md, USER.md, every .md file under memory/
 * and configured extra paths) into an embedded SQLite database and answers
 * keyword searches over it. This header is the API reference: every function
 * has its contract written above it.
 *
 * Conventions, stated once:
 *  - Every fallible function returns an int status: MNEMO_OK (0) or one of
 *    the MNEMO_* codes below. Results go through out-parameters.
 *  - Inputs are borrowed; the library copies whatever it keeps.
 *  - A returned `const char *` is borrowed: valid until the next call on the
 *    same handle (or until the owning object is freed).
 *  - A returned `char *` belongs to the caller, who frees it with mnemo_free().
 *  - Every destructor accepts NULL.
 *  - A handle may move between threads but must be used by one at a time.
 *  - The library never exits, aborts or prints; out-of-memory is MNEMO_NOMEM.
 */
#ifndef MNEMO_H
#define MNEMO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MNEMO_VERSION "0.1.0"

/* What libmnemo.so exports: the functions below and nothing else (the
 * library is built with -fvisibility=hidden). */
#if defined(__GNUC__) || defined(__clang__)
#define MNEMO_API __attribute__((visibility("default")))
#else
#define MNEMO_API
#endif

/* Status codes, from one list (as libuv's UV_ERRNO_MAP): X(NAME, value, text, api) for each
 * MNEMO_NAME. The value is its number, in order from 0; the list is only ever appended to, so
 * a number never changes. The text is what mnemo_strerror() says; api is the stable name the
 * command, the daemon and the MCP server give it in {"error":{"code":...}}. A caller may
 * expand the list too, e.g. into a table indexed by code. */
#define MNEMO_STATUS_MAP(X)                                                                    \
    X(OK, 0, "ok", "ok")                                                                       \
    X(NOMEM, 1, "out of memory", "nomem")                                                      \
    X(IO, 2, "file system error", "io")                                                        \
    X(DB, 3, "database error", "db")                                                           \
    X(HTTP, 4, "HTTP error", "http")                     /* or a network error */              \
    X(TIMEOUT, 5, "timed out", "timeout")                /* an operation ran out of time */    \
    X(NOTFOUND, 6, "not found", "not_found")             /* no such file, index or record */   \
    X(INVALID, 7, "invalid argument", "invalid")         /* argument, configuration, input */  \
    X(UNAVAILABLE, 8, "unavailable", "unavailable")      /* a needed service or feature */     \
    X(MISUSE, 9, "library misuse", "misuse")             /* API used in a way not allowed */   \
    X(CORRUPT, 10, "database is damaged, foreign or too new", "corrupt")                       \
    X(BUSY, 11, "locked by another process", "busy")                                           \
    X(DENIED, 12, "path outside the memory roots", "denied")

#define MNEMO_STATUS_ENUM(name, value, text, api) MNEMO_##name = value,
enum { MNEMO_STATUS_MAP(MNEMO_STATUS_ENUM) };
#undef MNEMO_STATUS_ENUM

/* Static English text for a status code; never NULL. */
MNEMO_API const char *mnemo_strerror(int code);

/* Library version string, equal to MNEMO_VERSION of the build. */
MNEMO_API const char *mnemo_version(void);

/* Frees memory returned by the library as `char *`. Accepts NULL. */
MNEMO_API void mnemo_free(void *p);

/* ------------------------------------------------------------------------
 * Configuration
 *
 * A configuration is a set of typed keys (camelCase, as in mnemo.json), each
 * with a default, an environment variable (MNEMO_ + UPPER_SNAKE name) and a
 * record of where its current value came from. Layering, lowest first:
 * defaults, $XDG_CONFIG_HOME/mnemo/config.json, <workspace>/mnemo.json (or an
 * explicit file), MNEMO_* environment variables, then values the caller sets
 * (command-line flags).
 * ---------------------------------------------------------------------- */

typedef struct mnemo_config mnemo_config;

/* Creates a configuration holding the defaults. *out is NULL on MNEMO_NOMEM. */
MNEMO_API int mnemo_config_new(mnemo_config **out);

/* Frees a configuration. Accepts NULL. */
MNEMO_API void mnemo_config_free(mnemo_config *cfg);

/* Sets KEY from its string form VALUE (numbers, true/false, JSON arrays for
 * list keys). SOURCE names where the value came from ("flag", "env", a file
 * path); it is copied. On MNEMO_INVALID, *err (if err is not NULL) receives a
 * message naming the key and the problem, to be freed with mnemo_free(). */
MNEMO_API int mnemo_config_set(mnemo_config *cfg, const char *key, const char *value,
                               const char *source, char **err);

/* Applies a JSON object file. Unknown keys and values of the wrong type are
 * MNEMO_INVALID with *err naming the file and key; a missing file is
 * MNEMO_NOTFOUND (without a message). */
MNEMO_API int mnemo_config_load_file(mnemo_config *cfg, const char *path, char **err);

/* Applies every MNEMO_* environment variable that names a key. */
MNEMO_API int mnemo_config_load_env(mnemo_config *cfg, char **err);

/* The standard layering after the defaults: the user config file, then
 * EXPLICIT_FILE if not NULL (it must exist) or else <workspace>/mnemo.json if
 * present, then the environment. The workspace is the value of the
 * "workspace" key when this is called (defaults to the current directory). */
MNEMO_API int mnemo_config_load_standard(mnemo_config *cfg, const char *explicit_file, char **err);

/* The current value of KEY in string form, or NULL for an unknown key.
 * Borrowed until the next change to CFG. */
MNEMO_API const char *mnemo_config_get(const mnemo_config *cfg, const char *key);

/* The effective configuration as a pretty JSON object; with WITH_SOURCES each
 * value is {"value":...,"source":...}. Credentials are masked as
 * mnemo_redact masks them (DSNs, baseUrl, hubEndpoint) and header values
 * shown as "(set)": the text is for printing, not for writing back.
 * Caller frees. NULL on out-of-memory. */
MNEMO_API char *mnemo_config_json(const mnemo_config *cfg, int with_sources);

/* Iterates the known keys: returns the name of key I (0-based) or NULL past
 * the end; *env and *help (if not NULL) receive its variable name and text. */
MNEMO_API const char *mnemo_config_key(size_t i, const char **env, const char **help);

/* ------------------------------------------------------------------------
 * The handle
 * ---------------------------------------------------------------------- */

typedef struct mnemo mnemo;

/* Opens a handle for the workspace and index that CFG names (CFG is copied).
 * The database is opened lazily, by the first call that needs it. On error
 * *out is still set (unless MNEMO_NOMEM) so that mnemo_errmsg() can explain;
 * close it with mnemo_close(). */
MNEMO_API int mnemo_open(const mnemo_config *cfg, mnemo **out);

/* Closes the handle and its database. Accepts NULL. */
MNEMO_API void mnemo_close(mnemo *m);

/* A message describing the last error on M, naming files and fixes where it
 * can. Borrowed. Never NULL. */
MNEMO_API const char *mnemo_errmsg(const mnemo *m);

/* What the last sync or memory call on M that succeeded wants said beside
 * its result, or NULL: stored memories it left out because they cannot be
 * read (their ids and how to repair them), a rolling backup that could not
 * be written. Borrowed until the next call on M. */
MNEMO_API const char *mnemo_warning(const mnemo *m);

/* The absolute workspace directory and database path M uses. Borrowed. */
MNEMO_API const char *mnemo_workspace(const mnemo *m);
MNEMO_API const char *mnemo_db_path(const mnemo *m);

/* ------------------------------------------------------------------------
 * Indexing
 * ---------------------------------------------------------------------- */

typedef struct mnemo_progress {
    const char *phase;    /* "scan", "index", or "embed" (chunks embedded, SQLite) */
    size_t done;          /* files processed in this phase ("embed": chunks) */
    size_t total;         /* files to process; 0 while unknown */
    uint64_t bytes;       /* bytes read so far */
} mnemo_progress;

typedef struct mnemo_sync_opts {
    int force;                                              /* rebuild from scratch */
    void (*progress)(void *ud, const mnemo_progress *p);   /* may be NULL */
    void *progress_ud;
} mnemo_sync_opts;

typedef struct mnemo_sync_stats {
    size_t files_seen;      /* indexable files found in the roots */
    size_t files_added;     /* new files indexed */
    size_t files_changed;   /* files whose content changed and were re-chunked */
    size_t files_touched;   /* files read because size/mtime changed, content same */
    size_t files_unchanged; /* files not read at all */
    size_t files_removed;   /* files gone from the roots and the index */
    size_t files_renamed;   /* files moved without changing content */
    size_t files_skipped;   /* binary, too large, unreadable, symlinks ... */
    size_t chunks_added;
    size_t chunks_removed;
    uint64_t bytes_read;
    double seconds;
    int rebuilt;            /* 1 when a fresh database was built and swapped in */
    const char *rebuild_reason; /* why (static text), or NULL */
    size_t chunks_embedded;   /* vectors computed by the provider (a chunk has one for
                               * each of its parts, vectorChars) */
    size_t embed_cache_hits;  /* vectors taken from the embedding cache */
    size_t vectors_total;     /* chunks with a vector after the sync */
    const char *embed_warning; /* auto provider: why vectors are missing; borrowed, or NULL */
} mnemo_sync_stats;

/* Brings the index up to date with the memory files, in one transaction.
 * Files whose size and mtime are unchanged are not read. With opts->force, or
 * when no index exists yet, or when the index was built with other tokenizer
 * or chunking settings, a fresh database is built beside the old one and
 * renamed over it, so a crash leaves the last good index in place.
 * Then chunks without a vector are embedded with the configured provider
 * (see docs/semantic.md), in batches that are committed as they finish. If
 * embedding fails, the keyword index is still up to date: with provider
 * "auto" the sync succeeds and stats->embed_warning says why; with a named
 * provider it returns the error (MNEMO_HTTP, MNEMO_UNAVAILABLE, ...).
 * OPTS and STATS may be NULL. Holds a lock file (<db>.lock) while writing:
 * MNEMO_BUSY if another writer keeps it longer than the busy timeout. */
MNEMO_API int mnemo_sync(mnemo *m, const mnemo_sync_opts *opts, mnemo_sync_stats *stats);

/* Watches the memory roots with inotify and syncs after changes settle
 * (config watchDebounceMs, default 1500 ms). Runs until *STOP becomes
 * non-zero (checked at least every 250 ms, e.g. set from a signal handler).
 * ON_SYNC, if not NULL, is called after each sync with its status and stats. */
MNEMO_API int mnemo_watch(mnemo *m, const volatile int *stop,
                          void (*on_sync)(void *ud, int rc, const mnemo_sync_stats *stats),
                          void *ud);

/* Brings the index up to date when the memory files changed since the last
 * call, for a caller that serves requests one at a time without a thread
 * of its own for mnemo_watch (mnemo mcp calls it before each search). The
 * first call starts watching the memory roots (inotify, kept on the handle
 * until mnemo_close) and syncs; later calls sync only when a change arrived
 * (a non-blocking read, microseconds, when none did), as mnemo_sync does
 * (only what changed is read; new chunks are embedded). *SYNCED (may be
 * NULL): 1 when a sync ran, with STATS (may be NULL) filled. A sync that
 * failed is tried again at the next call. */
MNEMO_API int mnemo_refresh(mnemo *m, int *synced, mnemo_sync_stats *stats);

/* ------------------------------------------------------------------------
 * Search
 * ---------------------------------------------------------------------- */

typedef struct mnemo_search_opts {
    int max_results;    /* <= 0: config maxResults (default 6) */
    double min_score;   /* < 0: config minScore; a bar on relevance (the score before the
                           recency and importance factors) */
    int strict;         /* < 0: config strictMinScore; 1: nothing when nothing clears minScore */
    int explain;        /* fill the explain fields of each result */
    const char *corpus; /* "memory" (NULL), "sessions" or "all" */
    int media;          /* images and audio (multimodal): 0 with the notes, 1 only them,
                           -1 none */
} mnemo_search_opts;

/* Fills OPTS with "use the configuration" values. */
MNEMO_API void mnemo_search_opts_init(mnemo_search_opts *opts);

/* One result, in the shape of OpenClaw's memory_search. Strings are owned by
 * the mnemo_results that holds it. */
typedef struct mnemo_result {
    const char *path;     /* relative to the workspace, or absolute for extra paths */
    int start_line;       /* 1-based, first line of the snippet */
    int end_line;         /* 1-based, last line of the snippet */
    double score;         /* 0..1, see docs/search.md */
    const char *snippet;  /* a passage: whole lines, at most 700 characters */
    const char *source;   /* "memory" */
    const char *citation; /* path#L5-L9 */
    double text_score;    /* 0..1, the keyword leg's score (0 without a keyword match) */
    double vector_score;  /* 0..1, the vector leg's score; -1 when no vector leg ran */
    /* Explain (filled always; printed with opts->explain): */
    int tier;             /* file-name match: 3 path, 2 base name, 1 stem, 0 none */
    double recency;       /* recency factor applied */
    double importance;    /* importance factor applied */
    int rank_before;      /* 1-based position before the diversity pass */
    int rank_after;       /* 1-based position in the results */
    const char *date;     /* YYYY-MM-DD a dated note is about (from its path), else NULL */
    const char *kind;     /* "note", or "media" for an image or audio file */
    const char *mime;     /* media: the MIME type its content sniffed as, else NULL */
} mnemo_result;

typedef struct mnemo_results mnemo_results;

/* Searches the index for QUERY (keywords, "quoted phrases", -excluded terms,
 * or a file name), and by meaning when an embedding provider is configured.
 * Results are ordered best first. OPTS may be NULL. MNEMO_NOTFOUND when no
 * index exists yet (run mnemo_sync first); MNEMO_INVALID for an empty
 * query; with a named provider that fails, MNEMO_UNAVAILABLE (or the
 * provider's error) and "memory search unavailable: ..." in mnemo_errmsg().
 * With config sourceTable, an existing PostgreSQL table is searched
 * instead, read-only, falling back to the index (docs/postgres.md).
 * *out is NULL on error. */
MNEMO_API int mnemo_search(mnemo *m, const char *query, const mnemo_search_opts *opts,
                           mnemo_results **out);

/* One search over all of the agent's memory: the notes (as mnemo_search)
 * and the stored facts (as mnemo_memory_search), ranked on one scale, as
 * JSON: {"results":[...],"mode","kinds",...}, each result with "kind":
 * "note" (path, startLine, endLine, score, snippet, source, citation) or
 * "fact" (id, the same fields with path and citation "memory://ID", and
 * category, importance, type, subject, scope, user_id, created_at,
 * updated_at). OPTIONS (JSON object text, may be NULL): "kinds" ("note",
 * "fact", "all", or an array; default both), "limit"/"maxResults",
 * "minScore"/"min_score", "corpus", "strict", "explain" for notes;
 * "user_id"/"userId", "agent_id"/"agentId", "run_id"/"runId", "scope",
 * "categories", "type", "subject", "filters" for facts. A fact scores
 * its relevance times its importance factor; among hits within 0.1 of
 * each other the newer ranks first (docs/search.md). MNEMO_NOTFOUND when
 * notes are searched and no index exists yet; MNEMO_INVALID for an
 * unknown option. Caller frees *out. Typed: mnemo_search_all_typed. */
/* "hybrid" when searches of M would run the vector leg (an embedding
 * provider is configured or found), else "keyword". Static text. */
MNEMO_API const char *mnemo_search_mode(mnemo *m);

MNEMO_API int mnemo_search_all(mnemo *m, const char *query, const char *options, char **out);

MNEMO_API size_t mnemo_results_count(const mnemo_results *r);
MNEMO_API const mnemo_result *mnemo_results_get(const mnemo_results *r, size_t i);

/* "hybrid" when the vector leg ran, else "keyword"; "vector" when an
 * existing PostgreSQL table answered (config sourceTable, docs/postgres.md).
 * Borrowed from R. */
MNEMO_API const char *mnemo_results_mode(const mnemo_results *r);

/* The embedding provider used ("static", "openai", ...), or NULL. */
MNEMO_API const char *mnemo_results_provider(const mnemo_results *r);

/* When provider "auto" could not embed the query, the provider it tried
 * (and in *REASON why); the search then ran keyword-only. When "auto"
 * found no provider but the index holds vectors (built with a provider
 * named at index time), the provider of those vectors, and *REASON says
 * they are unused and which settings use them. "postgres" when
 * the configured sourceTable could not answer and the local index did
 * (*REASON: why, credentials removed). NULL otherwise. */
MNEMO_API const char *mnemo_results_fallback(const mnemo_results *r, const char **reason);

/* Where the search that produced R spent its time, in milliseconds: the
 * keyword legs (content and file names), the vector leg (embedding the
 * query and scanning vectors), merging (fusion, file-name boosts), ranking
 * (recency, importance, sorting, threshold), diversity (MMR), results
 * (snippets, citations) and the total. */
typedef struct mnemo_search_timing {
    double keyword_ms, vector_ms, merge_ms, rank_ms, diversity_ms, results_ms, total_ms;
} mnemo_search_timing;
MNEMO_API void mnemo_results_timing(const mnemo_results *r, mnemo_search_timing *out);

/* The results as the JSON object {"results":[...],"mode":...}; with the
 * explain option also "timing":{"keywordMs":...,"totalMs":...}. Caller frees. */
MNEMO_API char *mnemo_results_json(const mnemo_results *r);

MNEMO_API void mnemo_results_free(mnemo_results *r);

/* Trigger recall: the curated entries (MEMORY.md, USER.md; never daily
 * notes or transcripts) whose <!-- trigger: ... --> phrases occur in
 * MESSAGE (every word of a phrase, in any order, stemmed). At most 3
 * entries, strongest first, as lines "- text (Source: path#Lx)", 1,800
 * characters in all. *out is "" when nothing matches. Caller frees. */
MNEMO_API int mnemo_recall_triggers(mnemo *m, const char *message, char **out);

/* ------------------------------------------------------------------------
 * Reading memory files
 * ---------------------------------------------------------------------- */

typedef struct mnemo_excerpt {
    char *path;       /* the path as resolved, relative to the workspace when inside it */
    char *text;       /* the lines, each ending in '\n' */
    int from;         /* first line returned, 1-based */
    int to;           /* last line returned (from - 1 when none) */
    int total_lines;  /* lines in the file */
    int truncated;    /* 1 when the file continues after TO */
    int next_from;    /* line to continue from, 0 when at the end */
} mnemo_excerpt;

/* Reads up to LINES lines (<= 0: 120) starting at line FROM (<= 0: 1) of a
 * memory file, stopping early at 12,000 characters. PATH is relative to the
 * workspace or absolute; it must name a regular file inside the memory roots
 * (MEMORY.md, USER.md, memory/, extra paths) after resolving symlinks:
 * otherwise MNEMO_DENIED. MNEMO_NOTFOUND when missing. PATH may also be a
 * citation as results give it, naming its lines: "path#Lx-Ly", "path#Lx"
 * (that line), "path:FROM:COUNT" or "path:FROM" (a file of that very name
 * is read whole instead); FROM and LINES, when > 0, take precedence. On
 * success fill OUT, released with mnemo_excerpt_cleanup(). */
MNEMO_API int mnemo_get(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out);
MNEMO_API void mnemo_excerpt_cleanup(mnemo_excerpt *e);

/* ------------------------------------------------------------------------
 * Structured memories
 *
 * Facts an agent stores ("User prefers dark mode", category preference),
 * kept in the index database, which is their only copy: rebuilding the
 * index carries them over. A memory is a JSON object:
 *
 *   {"id":"<uuid>","text":"...","category":"preference","importance":0.85,
 *    "type":"fact","subject":"user","user_id":"alice","agent_id":"",
 *    "run_id":"","metadata":{},"triggers":[],"created_at":"<ISO 8601>",
 *    "updated_at":"...","expires_at":null,"confirmations":0,
 *    "last_confirmed_at":null,"deleted_at":null}
 *
 * Search results add "score" (0..1). Options are JSON objects too; every
 * key is optional. See docs/memories.md. The same records, options and
 * results as C types: "Structured memories, typed" below.
 * ---------------------------------------------------------------------- */

/* Stores a memory. RECORD needs "text"; defaults: category "other" with its
 * category's importance, type "fact", subject "user", user_id the config's
 * userId, agent_id the config's agentId, run_id "" (long-term). An exact
 * duplicate (same text in the same scope) is not stored again: *out is the
 * existing memory with "duplicate":true. Text that looks like a credential
 * is refused (MNEMO_INVALID), and so is a value beyond the limits of
 * docs/memories.md (16 KiB of text; metadata 32 levels deep and 64 KiB;
 * ids of 256 bytes), the message naming the limit. *out: the stored
 * memory (caller frees). */
MNEMO_API int mnemo_memory_add(mnemo *m, const char *record, char **out);

/* Changes fields of memory ID (CHANGES: a JSON object of fields to set;
 * id and times cannot be set; the limits of mnemo_memory_add). Recorded in
 * its history. A memory that cannot be read (mnemo_memory_get) is changed
 * only with new metadata, which repairs it. */
MNEMO_API int mnemo_memory_update(mnemo *m, const char *id, const char *changes, char **out);

/* Soft-deletes memory ID (MNEMO_NOTFOUND if there is none or it is already
 * deleted): it leaves searches and lists but stays until purged. */
MNEMO_API int mnemo_memory_delete(mnemo *m, const char *id);

/* Brings deleted memory ID back into searches and lists, until it is
 * purged (MNEMO_NOTFOUND after), recorded in its history as RESTORE.
 * MNEMO_INVALID when it is not deleted, or when a memory of its scope
 * that is not deleted says the same (that one is named). *out: the
 * memory (caller frees). */
MNEMO_API int mnemo_memory_restore(mnemo *m, const char *id, char **out);

/* Removes deleted memories for good, with their history: ID, or all of
 * them when ID is NULL. *purged gets the count. */
MNEMO_API int mnemo_memory_purge(mnemo *m, const char *id, size_t *purged);

/* The memory ID (deleted ones too). MNEMO_NOTFOUND when unknown;
 * MNEMO_CORRUPT when its stored metadata cannot be read (an older mnemo or
 * another tool wrote it beyond the limits), the message saying how to
 * repair it. */
MNEMO_API int mnemo_memory_get(mnemo *m, const char *id, char **out);

/* The user confirmed memory ID: counted, and it fades more slowly. */
MNEMO_API int mnemo_memory_confirm(mnemo *m, const char *id, char **out);

/* The history of memory ID as a JSON array of {"event":"ADD"|"UPDATE"|
 * "DELETE"|"CONFIRM"|"RESTORE","old_text","new_text","at","detail"}, oldest first. */
MNEMO_API int mnemo_memory_history(mnemo *m, const char *id, char **out);

/* Memories matching OPTIONS, newest first: {"user_id","agent_id","run_id",
 * "scope":"all|session|long-term","categories":[...],"type","subject",
 * "filters":{...},"limit","offset","deleted":bool}. *out: {"memories":[...],
 * "total":N}: "total" counts at most memoryCountLimit memories past the
 * page, and when more match the reply adds "totalCapped":true (N is then
 * a lower bound). Memories that cannot be read are left out, never the
 * others: the reply then adds "unreadable":[{"id","why"}] and
 * "warnings":[text] (also mnemo_warning), and "total" counts them. */
MNEMO_API int mnemo_memory_list(mnemo *m, const char *options, char **out);

/* How many memories were stored per week (or day), counted by the store
 * without reading the memories: OPTIONS takes mnemo_memory_list's scope
 * and filters ("user_id", "agent_id", "run_id", "scope", "categories",
 * "type", "subject", "filters", "deleted"; as in a list, deleted and
 * expired memories are left out, and "deleted":true counts the deleted
 * ones instead) plus
 * "bucket":"week" (the default: weeks from Monday 00:00 UTC) or "day"
 * (from 00:00 UTC), and "weeks":N, only the memories created in the N
 * weeks up to now (this week included). *out: {"buckets":[{"start":
 * "2026-11-30T00:00:00Z","total":N,"byCategory":{"preference":n,...}}],
 * "total":N}, oldest first, each bucket's categories by name, no empty
 * buckets. A memory is counted by its created_at. MNEMO_INVALID for a bad
 * option, with the message in mnemo_errmsg. */
MNEMO_API int mnemo_memory_counts(mnemo *m, const char *options, char **out);

/* Searches memories: the list options (type defaults to "fact", limit to
 * 10, at most 50) plus "min_score". *out: {"results":[memory + "score"],
 * "total":N,"mode":"keyword"|"hybrid"}, with "unreadable" and "warnings"
 * as mnemo_memory_list's. */
MNEMO_API int mnemo_memory_search(mnemo *m, const char *query, const char *options, char **out);

/* Formats search results (*out of mnemo_memory_search) for people and
 * tools. STYLE "tool": "Found N memories:\n\n1. text (score: 87%, id: ...)";
 * "skill": "--- Result 1 (score: 0.870) ---\nContent: ..." blocks. */
MNEMO_API int mnemo_memory_format(const char *results, const char *style, char **out);

/* Writes every memory (deleted ones too) with its history as JSON lines
 * through WRITE (return non-zero to stop). *count gets the number. A
 * memory that cannot be read is left out (mnemo_warning says which), so
 * mnemo_memory_import reads back everything written. */
typedef int (*mnemo_write_fn)(void *ud, const char *data, size_t len);
MNEMO_API int mnemo_memory_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count);

/* Imports JSON lines as written by mnemo_memory_export, all or nothing:
 * a bad line fails the import naming its number. Memories whose id (or
 * text in the same scope) is already stored are skipped. */
MNEMO_API int mnemo_memory_import(mnemo *m, const char *jsonl, size_t len, size_t *imported,
                                  size_t *skipped);

/* What kind of credential TEXT (LEN bytes) seems to hold ("an API key
 * (sk-...)", "a private key block", ...), or NULL: the check memories get
 * before they are stored, for callers that must not echo a secret. Text
 * that is not ASCII is also read NFKC-normalised without format characters
 * (zero-width spaces, soft hyphens), and a key split by one space is read
 * whole; the text itself is not changed. */
MNEMO_API const char *mnemo_secret_kind(const char *text, size_t len);

/* TEXT as it may be printed: the credentials it quotes replaced by ***,
 * the same way the library's own messages and mnemo_config_json mask
 * them (the password of a URL, scheme://user:***@host; query parameters
 * such as ?api_key=***, &token=***, &sig=***; password=*** pairs).
 * Caller frees with mnemo_free; NULL when TEXT is NULL or out of memory. */
MNEMO_API char *mnemo_redact(const char *text);

/* Salvages the memories that can still be read from PATH (a damaged
 * memory store or index, or an index written before memories had a store
 * of their own) into the memory store, row by row: memories not stored yet
 * are added with their history, those already there are left alone, text
 * that is not UTF-8 is repaired. *out: a JSON report {"file", "recovered",
 * "present", "repaired", "damagedPlaces", "history", "historyIncomplete"}.
 * PATH is only read. SQLite backend. */
MNEMO_API int mnemo_memory_recover(mnemo *m, const char *path, char **out);

/* The <recalled-memories> block to put before a prompt. OPTIONS:
 * {"user_id","agent_id","run_id","message","strategy":"smart|always|manual"}.
 * *out is "" for strategy manual. Memories that cannot be read are left
 * out of the block and named by mnemo_warning. */
MNEMO_API int mnemo_memory_recall(mnemo *m, const char *options, char **out);

/* ------------------------------------------------------------------------
 * Structured memories, typed
 *
 * The same memories as structs, without JSON between the caller and the
 * store: the JSON functions above decode their text into these types and
 * run the same operations. Only metadata stays JSON text (it is
 * free-form), and so does the filter language of the options (a language,
 * compiled once by the library). Times are Unix seconds, 0 for none.
 * ---------------------------------------------------------------------- */

/* A memory. In a record the library returns, every string is set ("" when
 * empty) and owned by the record or the set that holds it. */
typedef struct mnemo_memory {
    const char *id;
    const char *text;
    const char *category;     /* lowercase: preference, decision, ... */
    double importance;        /* 0..1 */
    const char *type;         /* fact, preference, summary, context or raw */
    const char *subject;      /* "user" or a name */
    const char *user_id;
    const char *agent_id;
    const char *run_id;       /* "" for a long-term memory, else its session */
    const char *metadata;     /* a JSON object as compact text, keys sorted ("{}") */
    const char *const *triggers; /* NTRIGGERS phrases */
    size_t ntriggers;
    int64_t created_at, updated_at, expires_at, last_confirmed_at, deleted_at;
    long long confirmations;
    double score;             /* search: 0..1 (relevance times its factors), else -1 */
    double relevance;         /* search: the relevance before the factors, else -1 */
    int duplicate;            /* add: 1 when the text was stored already (this is it) */
} mnemo_memory;

/* Fills REC for an add: everything unset (NULL, 0), importance, score and
 * relevance -1. */
MNEMO_API void mnemo_memory_init(mnemo_memory *rec);

/* Frees a record returned by mnemo_memory_add_typed or
 * mnemo_memory_get_typed. Accepts NULL. */
MNEMO_API void mnemo_memory_free(mnemo_memory *rec);

/* Stores REC as mnemo_memory_add does. Read from REC: text (needed, valid
 * UTF-8), category, type, subject, user_id, agent_id, run_id (NULL: the
 * defaults of mnemo_memory_add), importance (< 0: the category's),
 * metadata (JSON object text, NULL: none), triggers and expires_at (0:
 * never); the rest is set by mnemo and ignored. The same checks, limits and
 * messages as mnemo_memory_add (MNEMO_INVALID). *out: the stored memory,
 * with duplicate 1 when the same text was stored already (caller frees
 * with mnemo_memory_free). */
MNEMO_API int mnemo_memory_add_typed(mnemo *m, const mnemo_memory *rec, mnemo_memory **out);

/* The memory ID, as mnemo_memory_get (the same errors). Caller frees *out
 * with mnemo_memory_free. */
MNEMO_API int mnemo_memory_get_typed(mnemo *m, const char *id, mnemo_memory **out);

/* The options of list and search: the keys of mnemo_memory_list's and
 * mnemo_memory_search's JSON options. */
typedef struct mnemo_memory_opts {
    const char *user_id;      /* NULL: config userId */
    const char *agent_id;     /* NULL: any agent */
    const char *run_id;       /* NULL or "": no session */
    const char *scope;        /* "all", "session", "long-term"; NULL: all with a run_id,
                                 else long-term */
    const char *const *categories; /* NCATEGORIES names, any of them; none: every category */
    size_t ncategories;
    const char *type;         /* NULL: "fact" for search, any for list; "all": any */
    const char *subject;      /* NULL: any */
    const char *filters;      /* the filter language as JSON text (docs/memories.md), or NULL */
    int limit;                /* <= 0: 100 for list, 10 for search; search at most 50 */
    int offset;               /* list: memories to skip; negative is MNEMO_INVALID */
    int deleted;              /* list: deleted memories too */
    int no_count;             /* list: do not count the memories past the page */
    double min_score;         /* search: < 0 config memoryMinScore; at most 1 */
} mnemo_memory_opts;

/* Fills OPTS with the defaults (the values above that mean "default"). */
MNEMO_API void mnemo_memory_opts_init(mnemo_memory_opts *opts);

/* A set of memories: a list's page or a search's results. */
typedef struct mnemo_memories mnemo_memories;

/* Memories matching OPTS (NULL: the defaults), as mnemo_memory_list: newest
 * first, the unreadable left out and named (mnemo_memories_unreadable,
 * mnemo_memories_warning, mnemo_warning). *out is NULL on error; caller
 * frees with mnemo_memories_free. */
MNEMO_API int mnemo_memory_list_typed(mnemo *m, const mnemo_memory_opts *opts,
                                      mnemo_memories **out);

/* Searches memories for QUERY as mnemo_memory_search: best first, each
 * with its score and relevance. *out is NULL on error; caller frees. */
MNEMO_API int mnemo_memory_search_typed(mnemo *m, const char *query,
                                        const mnemo_memory_opts *opts, mnemo_memories **out);

MNEMO_API size_t mnemo_memories_count(const mnemo_memories *s);
/* Memory I of S (NULL past the end), owned by S. */
MNEMO_API const mnemo_memory *mnemo_memories_get(const mnemo_memories *s, size_t i);
/* A list: the memories its options select, past the page too ("total");
 * a search: the results returned. A list counts at most memoryCountLimit
 * memories past its page: */
MNEMO_API long long mnemo_memories_total(const mnemo_memories *s);
/* 1 when more memories than mnemo_memories_total match (the count stopped
 * at memoryCountLimit past the page; "totalCapped":true in JSON), else 0. */
MNEMO_API int mnemo_memories_total_capped(const mnemo_memories *s);
/* A search: "keyword" or "hybrid"; a list: NULL. Borrowed from S. */
MNEMO_API const char *mnemo_memories_mode(const mnemo_memories *s);
/* The memories left out because they cannot be read: the id of the I-th
 * (NULL past the end) and in *WHY (if not NULL) why. Borrowed from S. */
MNEMO_API const char *mnemo_memories_unreadable(const mnemo_memories *s, size_t i,
                                                const char **why);
/* When some were left out, the warning that says so (as mnemo_warning),
 * else NULL. Borrowed from S. */
MNEMO_API const char *mnemo_memories_warning(const mnemo_memories *s);
MNEMO_API void mnemo_memories_free(mnemo_memories *s);

/* ------------------------------------------------------------------------
 * Notes and facts together, typed
 * ---------------------------------------------------------------------- */

/* What mnemo_search_all_typed searches (a bit set; 0: all). MEDIA: the
 * images and audio of the extra paths (multimodal), which NOTE alone
 * leaves out; their results are notes whose kind is "media". */
enum { MNEMO_KIND_NOTE = 1, MNEMO_KIND_FACT = 2, MNEMO_KIND_MEDIA = 4 };

typedef struct mnemo_search_all_opts {
    int kinds;                /* MNEMO_KIND_* bits; 0: all */
    mnemo_search_opts notes;  /* max_results is the list's length, min_score a bar on the
                                 facts' scores too */
    mnemo_memory_opts facts;  /* which facts; its limit and min_score are the notes' */
} mnemo_search_all_opts;

/* The kinds TEXT names ("note", "fact", "media", "all", "notes", "facts" or a comma
 * list of them, as mnemo_search_all's "kinds") into *KINDS. MNEMO_INVALID
 * with mnemo_errmsg naming the word that is not one. */
MNEMO_API int mnemo_search_kinds(mnemo *m, const char *text, int *kinds);

/* Fills OPTS with the defaults: both kinds, the configuration's. */
MNEMO_API void mnemo_search_all_opts_init(mnemo_search_all_opts *opts);

/* The hits of mnemo_search_all_typed: notes and facts on one scale. */
typedef struct mnemo_hits mnemo_hits;

/* mnemo_search_all with typed options (NULL: the defaults) and a typed
 * answer: the same search, ranking, errors and warnings. *out is NULL on
 * error; caller frees with mnemo_hits_free. */
MNEMO_API int mnemo_search_all_typed(mnemo *m, const char *query,
                                     const mnemo_search_all_opts *opts, mnemo_hits **out);

MNEMO_API size_t mnemo_hits_count(const mnemo_hits *h);
/* Hit I's score on the one scale (a fact's relevance times its importance
 * factor, at most 1); -1 past the end. */
MNEMO_API double mnemo_hits_score(const mnemo_hits *h, size_t i);
/* Hit I when it is a note, else NULL. Owned by H. */
MNEMO_API const mnemo_result *mnemo_hits_note(const mnemo_hits *h, size_t i);
/* Hit I when it is a fact, else NULL: its score is the hit's, its
 * relevance the memory search's. Owned by H. */
MNEMO_API const mnemo_memory *mnemo_hits_fact(const mnemo_hits *h, size_t i);
/* The notes' search (its mode, provider, fallback, timing), NULL when
 * notes were not searched. Owned by H. */
MNEMO_API const mnemo_results *mnemo_hits_notes(const mnemo_hits *h);
/* "keyword" or "hybrid" (as mnemo_results_mode when notes were searched). */
MNEMO_API const char *mnemo_hits_mode(const mnemo_hits *h);
/* Why facts are missing or incomplete (the memory store failed while the
 * notes answered; facts that cannot be read), or NULL. Borrowed from H. */
MNEMO_API const char *mnemo_hits_warning(const mnemo_hits *h);
/* H as the JSON of mnemo_search_all, byte for byte. Caller frees; NULL on
 * out-of-memory. */
MNEMO_API char *mnemo_hits_json(const mnemo_hits *h);
MNEMO_API void mnemo_hits_free(mnemo_hits *h);

/* ------------------------------------------------------------------------
 * Status and tools
 * ---------------------------------------------------------------------- */

/* A JSON object describing the workspace, database (path, size, schema),
 * file and chunk counts, last sync time and duration, tokenizer settings,
 * the files skipped with their reasons, and the embedding setup (provider,
 * model, vectors, staleness, last error, and "credentials": where the
 * provider's credentials come from, found without a request, as
 * {"status":"ok"|"missing"|"none","detail","fix"}, never a secret). With
 * DEEP, the index is checked page by page and the provider is probed with
 * a test query: dimensions and latency, or the error; DEEP |
 * MNEMO_STATUS_NO_PROBE leaves the probe (a paid request) out. Works
 * without an index ("indexed": false). Caller frees *out. */
#define MNEMO_STATUS_NO_PROBE 2
MNEMO_API int mnemo_status_json(mnemo *m, int deep, char **out);

/* The files the index holds, into *FILES: what mnemo_status_json calls
 * "files". MNEMO_NOTFOUND when there is no index yet. */
MNEMO_API int mnemo_index_count(mnemo *m, long long *files);

/* The files the index holds, by path (bytes), as JSON into *OUT (caller
 * frees with mnemo_free):
 *   {"indexed":true,"files":[{"path","kind","size","mtime","chunks"}],
 *    "count":N,"truncated":false}
 * PATH is the path search results cite (mnemo_get reads it); KIND is
 * "memory" (MEMORY.md, USER.md, memory/), "extra" (under extraPaths),
 * "session" (a transcript, when sessions are indexed) or "media" (an image
 * or audio file); SIZE in bytes and MTIME in Unix seconds as last indexed;
 * CHUNKS the pieces it was split into. Files the index skipped are not
 * listed (mnemo_status_json names them). OPTIONS: NULL, "" or a JSON
 * object {"limit":N}, at most N files (1 to 100000, the default); with
 * more, "truncated" is true. Without an index yet, as mnemo_status_json:
 * MNEMO_OK with "indexed": false and no files. An index that cannot be
 * read (damaged, locked, a server that does not answer) is an error with
 * its message (mnemo_errmsg), never an empty list; MNEMO_INVALID for bad
 * options. */
MNEMO_API int mnemo_files(mnemo *m, const char *options, char **out);

/* Imports an embedding model into the models folder (config modelsDir).
 * A transformer model folder (config.json with model_type "bert",
 * model.safetensors, tokenizer.json or vocab.txt) is checked, copied into
 * NAME/ with a prepared file that is mapped when used, for provider
 * "local". A static table for provider "static" (a GloVe or word2vec text
 * file, optionally .gz, a word2vec .bin file, or a model2vec folder) is
 * converted once into NAME.mnv; MAX_WORDS > 0 keeps only its most frequent
 * words. On success *out receives {"name","path","provider","dims"} (and
 * "words" for a table) as JSON (caller frees). */
MNEMO_API int mnemo_model_import(mnemo *m, const char *src, const char *name, size_t max_words,
                                 char **out);

/* Downloads the model folder REPO ("owner/name") at REVISION (a branch,
 * tag or commit; "main" when NULL) from the model hub (config
 * hubEndpoint, env HF_ENDPOINT; a token from env HF_TOKEN is sent when
 * set, and never stored) and imports it as NAME, as mnemo_model_import
 * does a folder. Only the files the encoder reads are fetched, each
 * checked against the hub's size and SHA-256 (git SHA-1 for small files);
 * a download cut short resumes on the next call. PROGRESS, when not NULL,
 * is called as bytes arrive. On success *out receives
 * {"name","path","provider","dims","repo","commit"} (caller frees). */
typedef void (*mnemo_pull_progress)(void *ud, const char *file, uint64_t done, uint64_t total);
MNEMO_API int mnemo_model_pull(mnemo *m, const char *repo, const char *revision,
                               const char *name, mnemo_pull_progress progress, void *ud,
                               char **out);

/* Tokenizes TEXT as the index would (QUERY != 0: as a query) and returns a
 * JSON array of {"token","start","end","flags"} objects. For debugging. */
MNEMO_API int mnemo_tokenize_json(mnemo *m, const char *text, int query, char **out);

/* Embeds TEXTS[0..N) with the configured provider (as queries when QUERY
 * != 0, else as documents: the prefixes and input types of each apply) and
 * returns {"provider","model","dims","vectors":[[...],...]} as JSON, one
 * vector per text in order (caller frees with mnemo_free). For checking a
 * model against another implementation. MNEMO_UNAVAILABLE when no provider
 * is configured, else the provider's error. */
MNEMO_API int mnemo_embed_json(mnemo *m, const char *const *texts, size_t n, int query,
                               char **out);

/* 1 when code point CP belongs to a script written without spaces (Han,
 * Kana, Hangul) and is tokenized by bigrams, 0 otherwise: the tokenizer's
 * own rule, for integrations that look at text the same way. */
MNEMO_API int mnemo_is_cjk(int32_t cp);

#ifdef __cplusplus
}
#endif
#endif /* MNEMO_H */
