/*
 * lite.h - the SQLite backend's state on the handle (LITE(m)): the index
 * file, the memory store attached to it and the mapped vectors file, each
 * opened on first use. Made by lite_open when the handle is opened on this
 * backend, freed by lite_close.
 */
#ifndef MNEMO_LITE_H
#define MNEMO_LITE_H

#include <sys/types.h>

#include "engine/backend.h"
#include "engine/core.h"
#include "store/sqlite/store.h"
#include "text/query.h"
#include "text/tok.h"

typedef struct lite {
    store *st;           /* NULL until first needed */
    dev_t st_dev;        /* the index file st was opened on: a rebuild by */
    ino_t st_ino;        /* another process renames a new file into place */
    int mem_rc;          /* the memory store could not be attached: why (mem_err) */
    buf mem_err;
    struct vec_file *vf; /* the mapped vectors file, kept across searches */
    struct vec_calib *calib; /* the fixed texts' vectors, kept across searches */
} lite;

/* The SQLite backend's state of handle M (m->store, made by lite_open). */
#define LITE(m) ((lite *)(m)->store)

/* Makes LITE(m) (backend_ops.open). */
int lite_open(mnemo *m);

/* Frees LITE(m) (backend_ops.close). */
void lite_close(mnemo *m);

/* Opens the index if not open yet, or again when the file at the index path
 * is no longer the one open (another process rebuilt it). MNEMO_NOTFOUND
 * (with a message) when the database does not exist. */
int lite_store(mnemo *m);

/* lite_store, and the memory store attached to it (its error otherwise). */
int lite_mem(mnemo *m);

/* A read that ended with SQLite's result RC (not a row, not done) while
 * WHAT: recorded on the handle and returned. A damaged file is
 * MNEMO_CORRUPT with its path and the way out: the index is rebuilt from
 * the notes, the memory store is salvaged. Never reported as "nothing". */
int lite_index_fail(mnemo *m, int rc, const char *what);
int lite_mem_fail(mnemo *m, int rc, const char *what);

/* Whether a read met damage in the index since it was last built (a mark
 * beside it, which lite_index_fail leaves and a rebuild removes). */
int lite_suspect(mnemo *m);
void lite_unsuspect(mnemo *m);

/* The query tokenizer for the open index's language (backend_ops.qtok). */
int lite_qtok(mnemo *m, tok **out);

/* The term of each of Q's phrases into TERMS, when every phrase is one
 * token FTS5 matches whole (no prefix, no phrase of several words, no
 * exclusion): 1, else 0 (the query takes FTS5's path, not the postings'). */
int lite_single_terms(mnemo *m, const query *q, char (*terms)[TOK_MAX_BYTES + 1]);

/* The SQLite backend's operations (backend.h): lite_sync.c (the steps of
 * a sync), lite_search.c, lite_recall.c, status.c, memlite.c,
 * lite_msearch.c. */
extern const struct sync_store lite_sync_store;
int lite_status_json(mnemo *m, int deep, char **out);
/* The index's files (mnemo_index_count); MNEMO_NOTFOUND without an index. */
int lite_index_count(mnemo *m, long long *files);
/* The index's files by path (backend_ops.files, files.h); an empty list
 * with indexed 0 without an index. */
int lite_files(mnemo *m, size_t limit, struct file_list *out);
int lite_recall_triggers(mnemo *m, const char *message, char **out);
/* Note search's legs (lite_search.c), run by the engine (search.h). */
extern const struct search_store lite_notes;
/* The storage steps of the memory operations (memlite.c) and memory
 * search's legs (lite_msearch.c), run by the engine (memory.h). */
extern const struct mem_store mem_lite_store;
extern const struct mem_searcher mem_lite_searcher;
int lite_memory_recover(mnemo *m, const char *path, char **out);

#endif
