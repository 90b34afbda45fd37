/*
 * core.h - the handle (struct mnemo) shared by the library's modules, and
 * the error helpers every public entry point uses.
 */
#ifndef MNEMO_CORE_H
#define MNEMO_CORE_H

#include <sqlite3.h>
#include <sys/types.h>

#include "config.h"
#include "fts.h"
#include "mnemo.h"
#include "store.h"
#include "tok.h"
#include "embed.h"
#include "util/buf.h"

struct mnemo {
    mnemo_config *cfg;
    char *workspace;   /* absolute, no trailing slash */
    char *db_path;     /* absolute */
    char *mem_path;    /* the memory store, absolute */
    int mem_rc;        /* the memory store could not be attached: why (mem_err) */
    char mem_err[1024];
    store *st;         /* NULL until first needed */
    dev_t st_dev;      /* the index file st was opened on: a rebuild by */
    ino_t st_ino;      /* another process renames a new file into place */
    tok *qtok;         /* query tokenizer, built for the index's language */
    char *qtok_lang;
    embedder *emb;     /* the embedding provider, opened on first use */
    struct vec_file *vf; /* the mapped vectors file, kept across searches */
    struct pgsource *pgs; /* existing-table search (pgsource.c), on first use */
    const struct backend_ops *be; /* where rows live (backend.h), never NULL */
    struct pgstate *pgst; /* PostgreSQL backend connection (pgschema.c) */
    struct pgstore *pgs_state; /* PostgreSQL backend: chunk-side state (pgstore.c) */
    struct pgmem *pgm_state;   /* PostgreSQL backend: memory-side state (pgmem.c) */
    char *tenant;      /* the default tenant (pgconn_tenant), built on first use */
    buf err;           /* last error message */
    buf warn;          /* last warning (auto provider fallback), borrowed by callers */
};

/* Records a formatted error message on M and returns CODE. */
int core_error(mnemo *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clears the last error. */
void core_clear(mnemo *m);

/* The last error message of M ("out of memory" for NULL, "no error"). */
const char *core_errmsg(const mnemo *m);

/* Opens the index if not open yet, or again when the file at the index path
 * is no longer the one open (another process rebuilt it). MNEMO_NOTFOUND
 * (with a message) when the database does not exist. */
int core_store(mnemo *m);

/* core_store, and the memory store attached to it (its error otherwise). */
int core_mem(mnemo *m);

/* The query tokenizer for the open index. */
int core_qtok(mnemo *m, tok **out);

/* The transcripts folder when `sources` includes "sessions", else NULL. */
const char *core_sessions_dir(mnemo *m);

/* Current time as Unix seconds (honours MNEMO_NOW, ISO 8601). */
double core_now(void);

#endif
