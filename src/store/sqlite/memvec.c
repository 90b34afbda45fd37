/*
 * memvec.c - the vectors of stored memories in the SQLite memory store:
 * embedding a memory as it is stored, and those left without a vector
 * (see memvec.h).
 */
#include "store/sqlite/memvec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "store/sqlite/lite.h"
#include "store/sqlite/vectors.h"

/* The embedder of the configured provider, if its vectors are current in
 * the memory store (memory_meta vec_identity), else NULL. */
embedder *memvec_embedder(mnemo *m, buf *err)
{
    char name[32];
    int explicit_;
    provider_resolve(m, name, &explicit_);
    if (strcmp(name, "none") == 0)
        return NULL;
    embedder *e = NULL;
    if (provider_embedder(m, name, &e, err))
        return NULL;
    char ident[1024], *stored = NULL;
    provider_identity(m, e, ident, sizeof ident);
    store_mem_meta_get(LITE(m)->st, "vec_identity", &stored);
    int same = stored && strcmp(stored, ident) == 0;
    free(stored);
    if (!same)
        buf_puts(err, "no vectors for this embedding setup yet; run: mnemo index");
    return same ? e : NULL;
}

static int put_vector(sqlite3 *db, int64_t mid, const float *v, int dims)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO memory_vectors(mid, vec) VALUES(?1, ?2)",
                           -1, &st, NULL) != SQLITE_OK)
        return MNEMO_DB;
    sqlite3_bind_int64(st, 1, mid);
    sqlite3_bind_blob(st, 2, v, dims * (int)sizeof(float), SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? MNEMO_OK : MNEMO_DB;
    sqlite3_finalize(st);
    return rc;
}

void mem_embed(mnemo *m, int64_t mid, const char *text)
{
    buf err;
    buf_init(&err, 4096);
    embedder *e = memvec_embedder(m, &err);
    float *v = NULL;
    size_t len = strlen(text);
    if (e && embed_texts(e, EMBED_DOCUMENT, &text, &len, 1, &v, &err) == MNEMO_OK)
        put_vector(store_db(LITE(m)->st), mid, v, embed_dims(e)); /* autocommit */
    free(v);
    buf_cleanup(&err);
}

int mem_embed_missing(mnemo *m, store *st, embedder *e, buf *err)
{
    sqlite3 *db = store_db(st);
    sqlite3_stmt *sel = NULL;
    int rc = MNEMO_OK;
    for (;;) {
        /* In batches of 256, committed one by one. */
        if (sqlite3_prepare_v2(db,
                               "SELECT m.mid, m.text FROM memories m WHERE m.deleted_at IS NULL "
                               "AND m.mid NOT IN (SELECT mid FROM memory_vectors) "
                               "ORDER BY m.mid LIMIT 256",
                               -1, &sel, NULL) != SQLITE_OK) {
            buf_printf(err, "memory vectors: %s", sqlite3_errmsg(db));
            return MNEMO_DB;
        }
        int64_t mids[256];
        char *texts[256];
        size_t lens[256], n = 0;
        while (n < 256 && sqlite3_step(sel) == SQLITE_ROW) {
            mids[n] = sqlite3_column_int64(sel, 0);
            texts[n] = store_col_dup(sel, 1);
            if (!texts[n])
                break;
            lens[n] = strlen(texts[n]);
            n++;
        }
        sqlite3_finalize(sel);
        if (n == 0)
            break;
        float *v = NULL;
        rc = embed_texts(e, EMBED_DOCUMENT, (const char *const *)texts, lens, n, &v, err);
        if (!rc) {
            int dims = embed_dims(e);
            sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
            for (size_t i = 0; i < n && !rc; i++)
                rc = put_vector(db, mids[i], v + i * (size_t)dims, dims);
            if (rc || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
                sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
                buf_printf(err, "memory vectors: %s", sqlite3_errmsg(db));
                rc = MNEMO_DB;
            }
        }
        free(v);
        for (size_t i = 0; i < n; i++)
            free(texts[i]);
        if (rc || n < 256)
            break;
    }
    (void)m;
    return rc;
}

void mem_embed_pending(mnemo *m)
{
    buf err;
    buf_init(&err, 4096);
    embedder *e = memvec_embedder(m, &err);
    if (e)
        mem_embed_missing(m, LITE(m)->st, e, &err);
    buf_cleanup(&err);
}
