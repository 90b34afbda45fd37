/*
 * sync.h - a sync, run once for every storage backend (sync_run): the scan
 * of the memory roots compared with the stored files, unchanged files left
 * unread, changed ones hashed and re-chunked only when their content
 * changed, renames by content hash, vanished files removed; the sync's
 * record; the embedding policy (which provider, and whether its failure is
 * the sync's error or a warning). A backend supplies the storage steps
 * (sync_store): where the sync writes, the sink the walk writes to,
 * commit, the vectors, and publishing: the SQLite index (lite_sync.c) or
 * PostgreSQL (pgsync.c).
 */
#ifndef MNEMO_SYNC_H
#define MNEMO_SYNC_H

#include <stdint.h>

#include "mnemo.h"
#include "embed/embed_types.h"
#include "engine/prep.h"
#include "util/buf.h"
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
     * only during the call), taken a run at a time with prep_item_next (a
     * large note's runs are read as they are written); the row's hash is
     * it->hash after the last run. *REMOVED and *ADDED count the chunks. */
    int (*write)(void *ud, const sync_file *known, const char *path, int64_t size,
                 int64_t mtime_ns, prep_item *it, int sessions, int64_t *removed,
                 size_t *added);
    /* F left the roots. */
    int (*remove)(void *ud, const sync_file *f);
    /* Images and audio (multimodal) can be kept: write stores their MIME
     * type (it->mime) and embeds their content. 0: they are skipped, for
     * the reason NO_MEDIA gives (NULL: the store keeps none yet). */
    int media;
    const char *no_media;
} sync_sink;

/* What a sync records for status: when it started (ISO 8601), how long the
 * keyword part took (milliseconds, "%.1f") and the counts as JSON
 * (sync_stats_json; NULL when out of memory). */
typedef struct sync_record {
    char when[32];
    char ms[32];
    const char *json;
} sync_record;

/* A backend's steps of a sync, which sync_run takes in this order: begin,
 * the walk into the sink, commit, the vectors (no_vectors, vectors,
 * vectors_done), end. Each returns MNEMO_OK or an error with its message on
 * the handle, unless said otherwise. UD is what begin made. */
typedef struct sync_store {
    /* Where this sync writes: takes the backend's sync lock and opens the
     * live index, or a new one to replace it (the backend says why in
     * stats->rebuilt and stats->rebuild_reason). AGAIN: the last try found
     * the live index damaged, build a new one. The walk's sink in *SINK,
     * its state in *UD. On error nothing is left to end. */
    int (*begin)(mnemo *m, const mnemo_sync_opts *opts, int again, mnemo_sync_stats *stats,
                 const sync_sink **sink, void **ud);
    /* Makes what the walk wrote durable, with REC. */
    int (*commit)(void *ud, const sync_record *rec);
    /* Optional: why vectors cannot be kept here (static text), else NULL. */
    const char *(*no_vectors)(void *ud);
    /* Embeds what has no vector yet with E; a failure's message in ERR
     * (or on the handle). */
    int (*vectors)(void *ud, embedder *e, const mnemo_sync_opts *opts, mnemo_sync_stats *stats,
                   buf *err);
    /* Keeps the vectors' outcome for status: RAN 0 when none were made (no
     * provider, or WHY they cannot be kept here), else RC and, on failure,
     * its message WHY. */
    int (*vectors_done)(void *ud, int ran, int rc, const char *why);
    /* Publishes what was committed (COMMITTED) and lets go of UD. RC: the
     * sync's status so far (the walk's or commit's error; after a commit,
     * the vectors' error). Returns the sync's status, or SYNC_AGAIN to run
     * it once more with AGAIN (the live index was found damaged). */
    int (*end)(void *ud, int rc, int committed);
} sync_store;

#define SYNC_AGAIN (-1)

/* The sync of M's memory roots into the backend whose steps are S, counted
 * in STATS (may be NULL). The contract of mnemo_sync. */
int sync_run(mnemo *m, const sync_store *s, const mnemo_sync_opts *opts,
             mnemo_sync_stats *stats);

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
