/*
 * sync.h - the walk of a sync shared by both storage backends: the scan of
 * the memory roots compared with the stored files, unchanged files left
 * unread, changed ones hashed and re-chunked only when their content
 * changed, renames by content hash, vanished files removed. What is
 * written goes to a sink: the SQLite index (lite_sync.c) or PostgreSQL
 * (pgsync.c).
 */
#ifndef MNEMO_SYNC_H
#define MNEMO_SYNC_H

#include <stdint.h>

#include "mnemo.h"
#include "engine/prep.h"
#include "util/hash.h"

/* Where a sync writes. Each operation returns MNEMO_OK or an error with
 * its message already on the handle. KNOWN is the stored row of the file
 * (from load), or NULL for a file not stored yet. */
/* One stored file (a row of the files table), as a backend loads it, as loaded for a sync. */
typedef struct sync_file {
    int64_t id;
    char *path;
    int64_t size, mtime_ns;
    char hash[HASH_HEX_LEN + 1];
    int ok;       /* indexed (1) or skipped (0) */
    char *reason; /* why it was skipped (NULL when indexed) */
    int sessions; /* a transcript */
    int seen;
} sync_file;

enum { SYNC_FILE_OK = 0, SYNC_FILE_SKIPPED = 1 };

/* Frees what a sink's load returned. */
void sync_files_free(sync_file *f, size_t n);

typedef struct sync_sink {
    /* Every stored file; *FILES freed with sync_files_free. */
    int (*load)(void *ud, sync_file **files, size_t *n);
    /* A file not indexed, with REASON (its chunks, if any, go). */
    int (*skip)(void *ud, const sync_file *known, const char *path, int64_t size,
                int64_t mtime_ns, const char *reason, int sessions);
    /* Same content as stored: only size and mtime change. */
    int (*touch)(void *ud, const sync_file *f, int64_t size, int64_t mtime_ns,
                 const char *hash);
    /* F moved to PATH with the same content: its chunks stay. */
    int (*rename)(void *ud, const sync_file *f, const char *path, int64_t size,
                  int64_t mtime_ns, const char *hash);
    /* New or changed content: the file row and its chunks from IT (valid
     * only during the call). *REMOVED and *ADDED count the chunks. */
    int (*write)(void *ud, const sync_file *known, const char *path, int64_t size,
                 int64_t mtime_ns, const prep_item *it, int sessions, int64_t *removed,
                 size_t *added);
    /* F left the roots. */
    int (*remove)(void *ud, const sync_file *f);
} sync_sink;

/* Runs the walk of a sync for M into SINK (with UD), counting in STATS
 * (files and chunks; the caller sets the rest). */
int sync_walk(mnemo *m, const sync_sink *sink, void *ud, const mnemo_sync_opts *opts,
              mnemo_sync_stats *stats);

/* The chunking, size limit and language of M's configuration. */
void sync_prep_opts(mnemo *m, prep_opts *o);

/* 1 for MEMORY.md, USER.md (and lowercase): entry-mode files. */
int sync_is_entries_path(const char *path);

/* STATS as the JSON object status shows as lastSync. Caller frees. */
char *sync_stats_json(const mnemo_sync_stats *stats);

#endif
