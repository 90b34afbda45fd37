/*
 * backend.h - the storage backend interface.
 *
 * Everything the public API does with stored data goes through one table
 * of operations: sync, search, get, status, the recall triggers of the
 * entry files, and the structured-memory operations. Two implementations:
 *
 *   backend_sqlite    the embedded index file (store/sqlite/, lite.h), the
 *                     default;
 *   backend_postgres  mnemo's own schema on a PostgreSQL server through
 *                     libpq (pgstore.c for files and chunks, pgmem.c for
 *                     memories), selected by config store
 *                     {"backend":"postgres",...} without sourceTable.
 *
 * What does not depend on where rows live is shared by both: the file walk
 * and chunking (walk.c, prep.c), the tokenizer (tok.c), the embedding
 * providers (embed.c), the ranking arithmetic (rank.c), the memory record
 * codec and options and the memory operations themselves, which a backend
 * runs through its table of storage steps (memory.h: mem_store,
 * mem_searcher), the filter language (mfilter.c) and the result shapes
 * (results.h). Each operation has the contract of the public function of
 * the same name in mnemo.h.
 */
#ifndef MNEMO_BACKEND_H
#define MNEMO_BACKEND_H

#include "mnemo.h"
#include "text/tok.h"

typedef struct backend_ops {
    const char *name; /* "sqlite", "postgres" */
    int (*open)(mnemo *m); /* makes the backend's state on the handle */
    int (*qtok)(mnemo *m, tok **out); /* the tokenizer queries are read with */
    int (*sync)(mnemo *m, const mnemo_sync_opts *opts, mnemo_sync_stats *stats);
    int (*search)(mnemo *m, const char *query, const mnemo_search_opts *opts,
                  mnemo_results **out);
    int (*get)(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out);
    int (*status_json)(mnemo *m, int deep, char **out);
    int (*recall_triggers)(mnemo *m, const char *message, char **out);
    int (*memory_add)(mnemo *m, const char *record, char **out);
    int (*memory_update)(mnemo *m, const char *id, const char *changes, char **out);
    int (*memory_delete)(mnemo *m, const char *id);
    int (*memory_purge)(mnemo *m, const char *id, size_t *purged);
    int (*memory_get)(mnemo *m, const char *id, char **out);
    int (*memory_confirm)(mnemo *m, const char *id, char **out);
    int (*memory_history)(mnemo *m, const char *id, char **out);
    int (*memory_list)(mnemo *m, const char *options, char **out);
    int (*memory_search)(mnemo *m, const char *query, const char *options, char **out);
    int (*memory_recall)(mnemo *m, const char *options, char **out);
    int (*memory_export)(mnemo *m, mnemo_write_fn write, void *ud, size_t *count);
    int (*memory_import)(mnemo *m, const char *jsonl, size_t len, size_t *imported,
                         size_t *skipped);
    int (*memory_recover)(mnemo *m, const char *path, char **out); /* NULL: not here */
    void (*close)(mnemo *m); /* frees what the backend keeps on the handle */
} backend_ops;

#endif
