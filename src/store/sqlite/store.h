/*
 * store.h - the SQLite index: opening with checks (foreign, corrupt, newer
 * schema), schema creation and forward migrations, metadata, and every SQL
 * statement that reads or writes files and chunks.
 */
#ifndef MNEMO_STORE_H
#define MNEMO_STORE_H

#include <sqlite3.h>
#include <stdint.h>

#include "text/chunk.h"
#include "store/sqlite/fts.h"
#include "util/hash.h"

#define STORE_SCHEMA_VERSION 10


/* SQLite application ids ("mnmo", "mnmm"): only a file that carries one
 * (or, written before they were set, has an index's tables and schema
 * version) is ever rebuilt, moved aside or migrated. */
#define STORE_APP_ID 0x6d6e6d6f
#define STORE_MEM_APP_ID 0x6d6e6d6d
/* A memory store up to this size is checked whole (integrity_check) when a
 * handle opens it. */
#define STORE_MEM_CHECK_BYTES (8 << 20)

typedef struct store store;

typedef struct store_settings {
    const char *language;
    int chunk_tokens, chunk_overlap;
    const char *workspace;
} store_settings;

/* Opens an existing index at PATH. MNEMO_NOTFOUND when there is none (no
 * file, an empty file, or an empty database); MNEMO_CORRUPT when the file is
 * not SQLite, not a mnemo index, damaged, or from a newer mnemo; messages
 * via store_open_error(). */
int store_open(const char *path, int busy_ms, store **out, buf *err);

/* What the file at PATH is, for deciding whether a rebuild may replace it:
 * absent (or empty), a sound index of ours, ours but damaged (with DEEP, a
 * quick_check too), ours from a newer mnemo, foreign or unprovable (never
 * touched), or unknown (busy, unreadable: ERR says why). */
enum {
    STORE_KIND_UNKNOWN,
    STORE_KIND_ABSENT,
    STORE_KIND_OURS,
    STORE_KIND_DAMAGED,
    STORE_KIND_NEWER,
    STORE_KIND_FOREIGN
};
int store_identify(const char *path, int busy_ms, int deep, buf *err);

/* Attaches the memory store at MEM_PATH as schema "mem" (created when
 * absent, in WAL mode with synchronous commits) and moves into it the
 * memories an index of schema 5 kept in its own file. Refuses a file there
 * that is not a memory store. The memory tables are then named without a
 * schema, as before. */
int store_attach_memories(store *s, const char *mem_path, const char *language, buf *err);

/* Creates a fresh index at PATH (replacing any file there) in bulk-load mode:
 * no journal, no fsync. Call store_finish() before renaming it into place. */
int store_create(const char *path, const store_settings *s, store **out, buf *err);

/* Switches a fresh index to WAL mode, closes it and fsyncs it to disk. */
int store_finish(store *s);

void store_close(store *s);

sqlite3 *store_db(store *s);
const char *store_path(const store *s);
/* A copy of text column C of ST read back from storage: "" for NULL, never
 * NULL unless out of memory. Caller frees. */
char *store_col_dup(sqlite3_stmt *st, int c);
fts_rank *store_rank(store *s);
fts_rank *store_mrank(store *s); /* for memories_fts (mnemo_collect_mem) */
const char *store_errmsg(store *s);
/* Maps an SQLite result code to a MNEMO_* status. */
int store_code(int sqlite_rc);

/* A write transaction on the index alone, or on the memory store alone:
 * neither waits for the other's writers. */
/* Adds the index of what the file-name leg reads of each file (id, status,
 * source, chunks: files_state, which lite_search.c names) when it is not
 * there: a common word matching thousands of paths then reads those small
 * entries instead of the files' rows. Not a schema version: an index
 * without it is searched as before until a sync adds it (a mnemo that does
 * not know it keeps it up to date as SQLite keeps any index). */
int store_index_files_state(store *s);
int store_begin(store *s);
int store_begin_mem(store *s);
int store_commit(store *s);
void store_rollback(store *s);

/* Writes the sync's postings that wait (kwpost.h) inside its transaction,
 * before it commits. */
int store_kw_flush(store *s);

/* Whether the index still holds memories of its own (schema 5, not moved:
 * read-only, or the move failed). A rebuild must not replace it then. */
int store_legacy_memories(store *s);

/* The memory store's own metadata (vec_identity of memory vectors,
 * backups, language). */
int store_mem_meta_get(store *s, const char *key, char **val);
int store_mem_meta_set(store *s, const char *key, const char *val);

/* Metadata (key/value). *val is NULL when the key is absent; caller frees. */
int store_meta_get(store *s, const char *key, char **val);
int store_meta_set(store *s, const char *key, const char *val);

/* Loads every file row. Caller frees with sync_files_free(). */
struct sync_file;
int store_files_load(store *s, struct sync_file **out, size_t *n);
int store_file_insert(store *s, const char *path, int64_t size, int64_t mtime_ns,
                      const char *hash, int status, const char *reason, int sessions, int64_t *id);
int store_file_update(store *s, int64_t id, int64_t size, int64_t mtime_ns, const char *hash,
                      int status, const char *reason);

/* Sets the time of a transcript (its newest message, Unix seconds). */
int store_file_set_time(store *s, int64_t id, double when);
int store_file_rename(store *s, int64_t id, const char *path);
/* Deletes a file row and its chunks. */
int store_file_delete(store *s, int64_t id);
/* Deletes a file's chunks (the FTS index follows by trigger). */
int store_chunks_delete(store *s, int64_t file_id, int64_t *removed);
/* The chunk id ranges: STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE. */
#include "store/sqlite/idrange.h"

/* Sets the MIME type of a media file (NULL: not media). */
int store_file_set_mime(store *s, int64_t id, const char *mime);

/* What to write for one file. */
typedef struct store_chunks {
    const chunk_list *chunks;
    const char *toks;        /* pre-tokenized chunks (tok_pretokenize), or NULL */
    const size_t *tok_off;   /* chunk i at toks[tok_off[i] .. tok_off[i + 1]] */
    const uint32_t *maps;    /* transcripts: JSONL line per text line, or NULL */
    const size_t *map_off;
    int sessions;            /* a transcript */
    int media;               /* an image or audio file's one labelled chunk */
    int replace;             /* the file had chunks: keep its unchanged leading ones */
    size_t first;            /* the place in the file of chunks->items[0] */
} store_chunks;

/* Writes a run of the chunks of FILE_ID, from its chunk w->first on (a
 * file's runs in order, then store_chunks_end). With w->replace, the
 * stored chunks from the start of the file that are unchanged (same hash
 * and lines) are kept; at the first that changed the stored ones from
 * there on go, and w->replace is cleared. Adds to *REMOVED and *ADDED what
 * changed. */
int store_chunks_write(store *s, int64_t file_id, store_chunks *w, int64_t *removed,
                       size_t *added);

/* Ends the chunks of FILE_ID at TOTAL: stored chunks past the last kept
 * one go (a file that got shorter), and the count is recorded. */
int store_chunks_end(store *s, int64_t file_id, store_chunks *w, size_t total,
                     int64_t *removed);

#endif
