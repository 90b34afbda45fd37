/*
 * memlite.h - the SQLite memory store as its modules share it (memlite.c
 * for the writes, msearch.c for the search): the row's columns and the
 * store's opening. The operations themselves are the lite_memory_* of
 * backend.h.
 */
#ifndef MNEMO_MEMLITE_H
#define MNEMO_MEMLITE_H

#include <jansson.h>
#include <sqlite3.h>

#include "mnemo.h"

/* The columns of a memory row, table alias m, in the order mem_json reads. */
#define MEM_COLS                                                                               \
    "m.mid, m.id, m.text, m.category, m.importance, m.type, m.subject, m.user_id, "          \
    "m.agent_id, m.run_id, m.metadata, m.triggers, m.created_at, m.updated_at, "              \
    "m.expires_at, m.confirmations, m.last_confirmed_at, m.deleted_at"
#define MEM_NCOLS 18

/* The record at columns FIRST.. of ST (selected with MEM_COLS) as JSON. */
json_t *mem_json(sqlite3_stmt *st, int first);

/* Opens the database for memories, building the index first if there is
 * none yet. */
int memlite_open(mnemo *m);

#endif
