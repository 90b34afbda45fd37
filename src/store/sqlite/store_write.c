/*
 * store_write.c - what a sync writes into the index: file rows (with their
 * path words in files_fts), chunks (with their pre-tokenized FTS5 rows,
 * line maps and triggers), renames and deletions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sync.h"
#include "store/sqlite/kwpost.h"
#include "store/sqlite/store.h"
#include "store/sqlite/store_int.h"

int store_files_load(store *s, sync_file **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, path, size, mtime_ns, hash, status, source, reason "
                                "FROM files",
                                -1,
                                &st, NULL);
    if (rc != SQLITE_OK)
        return store_code(rc);
    size_t cap = 0, count = 0;
    sync_file *v = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (count == cap) {
            cap = cap ? cap * 2 : 256;
            sync_file *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                rc = SQLITE_NOMEM;
                break;
            }
            v = nv;
        }
        sync_file *f = &v[count];
        memset(f, 0, sizeof *f);
        f->id = sqlite3_column_int64(st, 0);
        f->path = store_col_dup(st, 1);
        f->size = sqlite3_column_int64(st, 2);
        f->mtime_ns = sqlite3_column_int64(st, 3);
        const char *h = (const char *)sqlite3_column_text(st, 4);
        snprintf(f->hash, sizeof f->hash, "%s", h ? h : "");
        f->ok = sqlite3_column_int(st, 5) == SYNC_FILE_OK;
        const char *src = (const char *)sqlite3_column_text(st, 6);
        f->sessions = src && strcmp(src, "sessions") == 0;
        if (!f->ok && sqlite3_column_type(st, 7) != SQLITE_NULL)
            f->reason = store_col_dup(st, 7); /* sync_walk: does a limit still hold? */
        if (!f->path || (!f->ok && sqlite3_column_type(st, 7) != SQLITE_NULL && !f->reason)) {
            free(f->path);
            free(f->reason);
            rc = SQLITE_NOMEM;
            break;
        }
        count++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        sync_files_free(v, count);
        return store_code(rc);
    }
    *out = v;
    *n = count;
    return MNEMO_OK;
}

/* The words of a path as files_fts indexes them: without the memory/
 * prefix every daily note shares. */
static const char *path_words(const char *path)
{
    return strncmp(path, "memory/", 7) == 0 ? path + 7 : path;
}

/* Removes file ID's path from files_fts (before its row changes or goes). */
static int fts_file_delete(store *s, int64_t id)
{
    sqlite3_stmt *q = store_stmt(s, S_FILE_PATH);
    if (!q)
        return store_code(sqlite3_errcode(s->db));
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(q);
        return rc == SQLITE_DONE ? MNEMO_OK : store_code(rc);
    }
    char *path = store_col_dup(q, 0);
    sqlite3_reset(q);
    if (!path)
        return MNEMO_NOMEM;
    sqlite3_stmt *st = store_stmt(s, S_FTS_FILE_DELETE);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, path_words(path), -1, SQLITE_TRANSIENT);
    }
    free(path);
    return store_run(s, st);
}

static int fts_file_insert(store *s, int64_t id, const char *path)
{
    sqlite3_stmt *st = store_stmt(s, S_FTS_FILE_INSERT);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, path_words(path), -1, SQLITE_STATIC);
    }
    return store_run(s, st);
}

/* Base name and stem (base name without its last extension) of PATH. */
static void name_parts(const char *path, const char **base, int *stem_len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    *base = b;
    *stem_len = dot && dot != b ? (int)(dot - b) : (int)strlen(b);
}

int store_file_insert(store *s, const char *path, int64_t size, int64_t mtime_ns,
                      const char *hash, int status, const char *reason, int sessions, int64_t *id)
{
    sqlite3_stmt *st = store_stmt(s, S_FILE_INSERT);
    if (st) {
        const char *base;
        int stem_len;
        name_parts(path, &base, &stem_len);
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, base, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, base, stem_len, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, size);
        sqlite3_bind_int64(st, 5, mtime_ns);
        sqlite3_bind_text(st, 6, hash ? hash : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 7, status);
        if (reason)
            sqlite3_bind_text(st, 8, reason, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, sessions ? "sessions" : "memory", -1, SQLITE_STATIC);
    }
    int rc = store_run(s, st);
    if (rc)
        return rc;
    int64_t rowid = sqlite3_last_insert_rowid(s->db);
    if (id)
        *id = rowid;
    return fts_file_insert(s, rowid, path);
}

int store_file_update(store *s, int64_t id, int64_t size, int64_t mtime_ns, const char *hash,
                      int status, const char *reason)
{
    sqlite3_stmt *st = store_stmt(s, S_FILE_UPDATE);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, size);
        sqlite3_bind_int64(st, 3, mtime_ns);
        sqlite3_bind_text(st, 4, hash ? hash : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 5, status);
        if (reason)
            sqlite3_bind_text(st, 6, reason, -1, SQLITE_STATIC);
    }
    return store_run(s, st);
}

int store_file_set_time(store *s, int64_t id, double when)
{
    sqlite3_stmt *st = store_stmt(s, S_FILE_TIME);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_double(st, 2, when);
    }
    return store_run(s, st);
}

int store_file_set_mime(store *s, int64_t id, const char *mime)
{
    sqlite3_stmt *st = store_stmt(s, S_FILE_MIME);
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        if (mime)
            sqlite3_bind_text(st, 2, mime, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 2);
    }
    return store_run(s, st);
}

int store_file_rename(store *s, int64_t id, const char *path)
{
    int rc = fts_file_delete(s, id);
    if (rc)
        return rc;
    sqlite3_stmt *st = store_stmt(s, S_FILE_RENAME);
    if (st) {
        const char *base;
        int stem_len;
        name_parts(path, &base, &stem_len);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, base, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, base, stem_len, SQLITE_STATIC);
    }
    if ((rc = store_run(s, st)))
        return rc;
    return fts_file_insert(s, id, path);
}

static int chunks_delete_from(store *s, int64_t file_id, int64_t from_seq, int64_t *removed);

/* The sync's postings writer (kwpost.h), opened at its first use; NULL
 * for an index without postings tables. */
static int kw_of(store *s, kwpost **out)
{
    *out = s->kw;
    if (s->kw || s->kw_none)
        return MNEMO_OK;
    char *lang = NULL;
    store_meta_get(s, "language", &lang);
    int rc = kwpost_open(s->db, "main", KWPOST_CHUNKS, lang, &s->kw);
    free(lang);
    if (rc == MNEMO_NOTFOUND) {
        s->kw_none = 1;
        return MNEMO_OK;
    }
    /* A fresh index is read by no one before it is renamed into place. */
    if (!rc && s->fresh)
        kwpost_defer(s->kw, s->path);
    *out = s->kw;
    return rc;
}

int store_kw_flush(store *s)
{
    kwpost *k = NULL;
    int rc = kw_of(s, &k);
    if (!rc && k)
        rc = kwpost_flush(k);
    kwpost_free(s->kw);
    s->kw = NULL;
    s->kw_none = 0;
    return rc;
}

int store_chunks_delete(store *s, int64_t file_id, int64_t *removed)
{
    return chunks_delete_from(s, file_id, 0, removed);
}

static int chunks_delete_from(store *s, int64_t file_id, int64_t from_seq, int64_t *removed)
{
    /* The FTS entries first: 'delete' needs the text that was indexed. */
    sqlite3_stmt *q = store_stmt(s, S_CHUNKS_OF_FILE);
    if (!q)
        return store_code(sqlite3_errcode(s->db));
    sqlite3_bind_int64(q, 1, file_id);
    sqlite3_bind_int64(q, 2, from_seq);
    kwpost *k = NULL;
    int rc = kw_of(s, &k), step;
    if (rc)
        return rc;
    while ((step = sqlite3_step(q)) == SQLITE_ROW) {
        if (k && (rc = kwpost_remove(k, sqlite3_column_int64(q, 0),
                                     (const char *)sqlite3_column_text(q, 1),
                                     (size_t)sqlite3_column_bytes(q, 1), NULL))) {
            sqlite3_reset(q);
            return rc;
        }
        sqlite3_stmt *st = store_stmt(s, S_FTS_CHUNK_DELETE);
        if (st) {
            sqlite3_bind_int64(st, 1, sqlite3_column_int64(q, 0));
            sqlite3_bind_value(st, 2, sqlite3_column_value(q, 1));
        }
        if ((rc = store_run(s, st))) {
            sqlite3_reset(q);
            return rc;
        }
    }
    sqlite3_reset(q);
    if (step != SQLITE_DONE)
        return store_code(step);
    sqlite3_stmt *st = store_stmt(s, S_CHUNKS_DELETE);
    if (st) {
        sqlite3_bind_int64(st, 1, file_id);
        sqlite3_bind_int64(st, 2, from_seq);
    }
    rc = store_run(s, st);
    if (!rc && removed)
        *removed = sqlite3_changes64(s->db);
    return rc;
}

int store_file_delete(store *s, int64_t id)
{
    int rc = store_chunks_delete(s, id, NULL);
    if (rc || (rc = fts_file_delete(s, id)))
        return rc;
    sqlite3_stmt *st = store_stmt(s, S_FILE_DELETE);
    if (st)
        sqlite3_bind_int64(st, 1, id);
    return store_run(s, st);
}

/* Next free chunk id in the range of a source (0 memory, 1 sessions, 2
 * media): memory chunks have ids below STORE_SESSION_ID_BASE, transcript
 * chunks from there to STORE_MEDIA_ID_BASE, media chunks above, so that a
 * search can restrict itself to one corpus with a rowid range. Never the
 * id of a chunk whose vectors are still kept (a chunk removed since the
 * last embedding): a new chunk would take its vectors for its own. */
static int next_chunk_id(store *s, int range, int64_t *id)
{
    static const int64_t lo[3] = {1, STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE};
    static const int64_t hi[3] = {STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE, INT64_MAX};
    if (!s->next_id[range]) {
        sqlite3_stmt *q = NULL;
        const char *sql =
            "SELECT max(coalesce((SELECT max(id) FROM chunks WHERE id >= ?1 AND id < ?2), 0), "
            "coalesce((SELECT max(chunk_id) FROM chunk_vectors WHERE chunk_id >= ?1 AND "
            "chunk_id < ?2), 0))";
        if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
            return store_code(sqlite3_errcode(s->db));
        sqlite3_bind_int64(q, 1, lo[range]);
        sqlite3_bind_int64(q, 2, hi[range]);
        int64_t max = 0;
        if (sqlite3_step(q) == SQLITE_ROW)
            max = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        s->next_id[range] = max ? max + 1 : lo[range];
        /* Never an id the postings may hold, gone or not. */
        kwpost *k = NULL;
        int rc = kw_of(s, &k);
        if (rc)
            return rc;
        if (k && s->next_id[range] < kwpost_floor(k, range))
            s->next_id[range] = kwpost_floor(k, range);
    }
    *id = s->next_id[range]++;
    return MNEMO_OK;
}

int store_chunks_write(store *s, int64_t file_id, store_chunks *w, int64_t *removed,
                       size_t *added)
{
    const chunk_list *l = w->chunks;
    int rc;
    /* Keep the chunks that did not change at the start of the file (a
     * transcript that grew, a note edited at its end): their FTS entries
     * and vectors stay. */
    size_t keep = 0;
    if (w->replace) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(s->db,
                               "SELECT hash, start_line, end_line FROM chunks WHERE file_id = ?1 "
                               "AND seq >= ?2 ORDER BY seq",
                               -1, &q, NULL) != SQLITE_OK)
            return store_code(sqlite3_errcode(s->db));
        sqlite3_bind_int64(q, 1, file_id);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)w->first);
        while (keep < l->n && sqlite3_step(q) == SQLITE_ROW) {
            const chunk *c = &l->items[keep];
            const char *h = (const char *)sqlite3_column_text(q, 0);
            if (!h || strcmp(h, c->hash) != 0 || sqlite3_column_int(q, 1) != c->start_line ||
                sqlite3_column_int(q, 2) != c->end_line)
                break;
            keep++;
        }
        sqlite3_finalize(q);
        if (keep < l->n) {
            int64_t gone = 0;
            if ((rc = chunks_delete_from(s, file_id, (int64_t)(w->first + keep), &gone)))
                return rc;
            *removed += gone;
            w->replace = 0;
        }
    }
    for (size_t i = keep; i < l->n; i++) {
        const chunk *c = &l->items[i];
        int64_t id = 0;
        if ((rc = next_chunk_id(s, w->media ? 2 : w->sessions ? 1 : 0, &id)))
            return rc;
        sqlite3_stmt *st = store_stmt(s, S_CHUNK_INSERT);
        if (st) {
            sqlite3_bind_int64(st, 1, file_id);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)(w->first + i));
            sqlite3_bind_int(st, 3, c->start_line);
            sqlite3_bind_int(st, 4, c->end_line);
            sqlite3_bind_text(st, 5, c->hash, HASH_HEX_LEN, SQLITE_STATIC);
            sqlite3_bind_int(st, 6, c->importance);
            sqlite3_bind_text(st, 7, l->text.data + c->trig_off, (int)c->trig_len,
                              SQLITE_STATIC);
            sqlite3_bind_text(st, 8, chunk_text(l, c), (int)c->text_len, SQLITE_STATIC);
            sqlite3_bind_int64(st, 9, id);
            if (w->maps)
                sqlite3_bind_blob(st, 10, w->maps + w->map_off[i],
                                  (int)((w->map_off[i + 1] - w->map_off[i]) * sizeof(uint32_t)),
                                  SQLITE_STATIC);
        }
        if ((rc = store_run(s, st)))
            return rc;
        st = store_stmt(s, S_FTS_CHUNK_INSERT);
        if (st) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_text(st, 2, chunk_text(l, c), (int)c->text_len, SQLITE_STATIC);
        }
        if (w->toks) {
            s->feed.text = chunk_text(l, c);
            s->feed.len = c->text_len;
            s->feed.toks = w->toks + w->tok_off[i];
            s->feed.toks_len = w->tok_off[i + 1] - w->tok_off[i];
        }
        rc = store_run(s, st);
        s->feed.toks = NULL;
        kwpost *k = NULL;
        if (!rc)
            rc = kw_of(s, &k);
        if (!rc && k)
            rc = kwpost_add(k, id, chunk_text(l, c), c->text_len,
                            w->toks ? w->toks + w->tok_off[i] : NULL,
                            w->toks ? w->tok_off[i + 1] - w->tok_off[i] : 0);
        if (!rc && k && kwpost_full(k))
            rc = kwpost_flush_full(k);
        if (rc)
            return rc;
    }
    *added += l->n - keep;
    return MNEMO_OK;
}

int store_chunks_end(store *s, int64_t file_id, store_chunks *w, size_t total,
                     int64_t *removed)
{
    int rc;
    if (w->replace) {
        int64_t gone = 0;
        if ((rc = chunks_delete_from(s, file_id, (int64_t)total, &gone)))
            return rc;
        *removed += gone;
        w->replace = 0;
    }
    sqlite3_stmt *st = store_stmt(s, S_FILE_NCHUNKS);
    if (st) {
        sqlite3_bind_int64(st, 1, file_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)total);
    }
    return store_run(s, st);
}
