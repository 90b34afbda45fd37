/*
 * backend.h - the storage backend interface.
 *
 * Everything the public API does with stored data goes through one table
 * of operations: sync, search, get, status, the recall triggers of the
 * entry files, and the steps of note search and of the memory operations.
 * Each backend owns its table and its state (m->store), as a protocol owns
 * its handler in curl; src/mnemo.c picks one and calls through it, knowing
 * no store:
 *
 *   backend_sqlite    the embedded index file (store/sqlite/, lite.h), the
 *                     default;
 *   backend_postgres  mnemo's own schema on a PostgreSQL server through
 *                     libpq (pgstore.c for files and chunks, pgmem.c for
 *                     memories), selected by config store
 *                     {"backend":"postgres",...} without sourceTable; it
 *                     routes reads to replicas (route, routed);
 *   source wrapper    with sourceTable, backend_sqlite wrapped so that an
 *                     existing pgvector table answers searches (its own
 *                     search entry, the wrapped one when it cannot).
 *
 * What does not depend on where rows live is shared by both: the file walk
 * and chunking (walk.c, prep.c), the tokenizer (tok.c), the embedding
 * providers (embed.c), the ranking arithmetic (rank.c), note search itself
 * (search_notes, search.c: cleaning, parsing, the keyword pool, the union,
 * ranking), which the engine runs over the legs the table points to
 * (notes: search.h's search_store), the memory record codec and options
 * and the memory operations themselves, which the engine runs over the
 * storage steps the table points to (mem, msearch: memory.h's mem_store
 * and mem_searcher), the kinds and JSON of the file list (files.h), the filter language (mfilter.c) and the result shapes
 * (results.h). Each operation has the contract of the public function of
 * the same name in mnemo.h.
 */
#ifndef MNEMO_BACKEND_H
#define MNEMO_BACKEND_H

#include <stddef.h>

#include "mnemo.h"
#include "text/tok.h"

struct file_list;

typedef struct backend_ops {
    const char *name; /* "sqlite", "postgres" */
    int (*open)(mnemo *m); /* makes the backend's state on the handle */
    int (*qtok)(mnemo *m, tok **out); /* the tokenizer queries are read with */
    const struct sync_store *sync;      /* the steps of a sync, run by sync_run (sync.h) */
    /* Note search: search_notes, the engine's, over the steps of notes;
     * a wrapper that answers searches its own way replaces it. */
    int (*search)(mnemo *m, const char *query, const mnemo_search_opts *opts,
                  mnemo_results **out);
    const struct search_store *notes; /* note search's legs (search.h) */
    int (*get)(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out);
    int (*status_json)(mnemo *m, int deep, char **out);
    int (*index_count)(mnemo *m, long long *files);
    /* The indexed files by path, at most LIMIT + 1 (files.h's files_fn),
     * which the engine's files_json writes as mnemo_files' answer. */
    int (*files)(mnemo *m, size_t limit, struct file_list *out);
    int (*recall_triggers)(mnemo *m, const char *message, char **out);
    const struct mem_store *mem;        /* the memory operations' storage steps (memory.h) */
    const struct mem_searcher *msearch; /* memory search's and recall's legs (memory.h) */
    int (*memory_recover)(mnemo *m, const char *path, char **out); /* NULL: not here */
    void (*close)(mnemo *m); /* frees what the backend keeps on the handle */
    /* Routing, NULL on a backend of one server: route(m, write) before
     * each read or write (the public functions say which they are);
     * routed(m, write, &rc) after it, 1 when the call is to run again (a
     * read whose server failed under it, the route moved on), else 0, RC
     * possibly amended (a write's unreachable primary named). */
    void (*route)(mnemo *m, int write);
    int (*routed)(mnemo *m, int write, int *rc);
} backend_ops;

/* Runs CALL, an operation of M's backend that reads (BACKEND_READ) or
 * writes (BACKEND_WRITE) stored rows, where the backend's routing says,
 * again while it says so; its status in RC. Every call of an operation
 * that reads or writes rows goes through it (mnemo.c and the engine's
 * operations built of others: allsearch.c, mrecall.c, watch.c). */
#define BACKEND_READ 0
#define BACKEND_WRITE 1
#define BACKEND_CALL(m, write, rc, call)                                                       \
    do {                                                                                       \
        if ((m)->be->route)                                                                    \
            (m)->be->route((m), (write));                                                      \
        do                                                                                     \
            (rc) = (call);                                                                     \
        while ((m)->be->route && (m)->be->routed((m), (write), &(rc)));                        \
    } while (0)

/* The backends a handle is opened on, each defined in its store's folder:
 * SQLite (store/sqlite/lite.c) and PostgreSQL (store/postgres/pgback.c).
 * Each operation finds the backend's state in m->store, made by its open
 * and freed by its close. */
extern const backend_ops backend_sqlite;
extern const backend_ops backend_postgres;

/* Wraps the backend of M (m->be, opened) in the search of an existing
 * PostgreSQL table (config sourceTable, store/postgres/pgsource.c): a
 * table of the same operations in the wrapper's state (m->wrap), whose
 * search asks the table first and the wrapped backend when it cannot
 * answer, and whose close frees the wrapper and then closes the wrapped. */
int pgsource_wrap(mnemo *m);

#endif
