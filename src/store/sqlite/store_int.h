/*
 * store_int.h - what store.c (opening, schema, migrations, meta, the memory
 * store) and store_write.c (the files and chunks a sync writes) share.
 * Not for use outside them.
 */
#ifndef MNEMO_STORE_INT_H
#define MNEMO_STORE_INT_H

#include <sqlite3.h>

#include "store/sqlite/fts.h"

enum {
    S_FILE_INSERT,
    S_FILE_UPDATE,
    S_FILE_MIME,
    S_FILE_RENAME,
    S_FILE_DELETE,
    S_CHUNKS_DELETE,
    S_CHUNK_INSERT,
    S_FILE_NCHUNKS,
    S_META_GET,
    S_META_SET,
    S_FTS_CHUNK_INSERT,
    S_FTS_CHUNK_DELETE,
    S_CHUNKS_OF_FILE,
    S_FTS_FILE_INSERT,
    S_FTS_FILE_DELETE,
    S_FILE_PATH,
    S_FILE_TIME,
    S__COUNT
};

struct store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *st[S__COUNT];
    fts_rank rank;
    fts_rank mrank; /* for memories_fts */
    fts_feed feed;
    int fresh;
    int64_t next_id[3]; /* next chunk id for memory / sessions / media, 0 until read */
    struct kwpost *kw;  /* the sync's postings writer, opened at its first chunk */
    int kw_none;        /* the index has no postings tables */
};

/* The prepared statement ID of S, reset and unbound; NULL on error. */
sqlite3_stmt *store_stmt(struct store *s, int id);

/* Steps a bound statement to completion. */
int store_run(struct store *s, sqlite3_stmt *st);

/* Runs SQL (no parameters) on S's connection. */
int store_exec(struct store *s, const char *sql);

#endif
