/*
 * lite.h - the SQLite backend's state on the handle (m->lite): the index
 * file, the memory store attached to it and the mapped vectors file, each
 * opened on first use. Made by lite_open when the handle is opened on this
 * backend, freed by lite_close.
 */
#ifndef MNEMO_LITE_H
#define MNEMO_LITE_H

#include <sys/types.h>

#include "core.h"
#include "store.h"
#include "tok.h"

typedef struct lite {
    store *st;           /* NULL until first needed */
    dev_t st_dev;        /* the index file st was opened on: a rebuild by */
    ino_t st_ino;        /* another process renames a new file into place */
    int mem_rc;          /* the memory store could not be attached: why (mem_err) */
    char mem_err[1024];
    struct vec_file *vf; /* the mapped vectors file, kept across searches */
} lite;

/* Makes m->lite (backend_ops.open). */
int lite_open(mnemo *m);

/* Frees m->lite (backend_ops.close). */
void lite_close(mnemo *m);

/* Opens the index if not open yet, or again when the file at the index path
 * is no longer the one open (another process rebuilt it). MNEMO_NOTFOUND
 * (with a message) when the database does not exist. */
int lite_store(mnemo *m);

/* lite_store, and the memory store attached to it (its error otherwise). */
int lite_mem(mnemo *m);

/* The query tokenizer for the open index's language (backend_ops.qtok). */
int lite_qtok(mnemo *m, tok **out);

#endif
