/*
 * vectors.c - the SQLite index's vectors: embedding the chunks that have
 * none during sync (a vector for each part of a chunk, one row of
 * chunk_vectors a chunk), the matrix file and the vector leg of search (see
 * vectors.h). Which provider embeds is provider.c's.
 *
 * Matrix file (<db>.vec), little-endian, sections 64-byte aligned:
 *   header   magic "MNEMOVF1", dims, count, stamp, flags, offsets
 *   ids      i64 chunk ids, ascending: a row a part (chunk_parts), a chunk's
 *            parts in order under its id
 *   vectors  f32 count x dims, unit length
 *   int8     i8 count x dims and f32 scales (flag 1)
 * `stamp` equals meta vec_stamp of the database it was built from; any
 * change to the vectors writes a new stamp in the same transaction, so a
 * stale file is detected and rebuilt (atomically, by whoever notices).
 */
#include "store/sqlite/vectors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/calib.h"
#include "engine/core.h"
#include "engine/provider.h"
#include "engine/walk.h"
#include "util/errcode.h"
#include "text/chunk.h"
#include "util/hash.h"
#include "util/io.h"
#include "util/time.h"

#define VF_MAGIC "MNEMOVF1"
#define VF_INT8 1
#define EMBED_BATCH 4096 /* chunks per embedding call and commit */
#define MEDIA_BATCH 4    /* media files per embedding call: each is held in memory */
#define MEDIA_REF 64     /* media measured against the fixed texts for their baseline */

/* ----------------------------------------------------------------------
 * Embedding missing chunks
 * -------------------------------------------------------------------- */

static void cache_key(embedder *e, int dims, const char *prefix, const char *chunk_hash,
                      char out[HASH_HEX_LEN + 1])
{
    buf b;
    buf_init(&b, 0);
    /* A local model's weights fingerprint joins its name: another model
     * under the same name never reads this one's vectors. */
    const char *ver = embed_model_version(e);
    buf_printf(&b, "%s%c%s%s%s%c%d%cdocument%c%s%c%s", embed_provider(e), 0, embed_model(e),
               *ver ? "#" : "", ver, 0, dims, 0, 0, prefix, 0, chunk_hash);
    hash_hex(b.data ? b.data : "", b.len, out);
    buf_cleanup(&b);
}

static int exec_sql(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

static void new_stamp(store *st)
{
    char stamp[32];
    uint64_t r = (uint64_t)(time_wall() * 1e6) ^ ((uint64_t)getpid() << 40) ^
                 (uint64_t)(uintptr_t)&stamp;
    r *= 0x9e3779b97f4a7c15ull;
    snprintf(stamp, sizeof stamp, "%016" PRIx64, r);
    store_meta_set(st, "vec_stamp", stamp);
}

typedef struct pending {
    int64_t id;
    char *text;
    size_t len;
    /* Media: the file beside its label (data NULL for text), and the
     * chunk's hash (of the label and the content) that keys its vector. */
    embed_media media;
    char hash[HASH_HEX_LEN + 1];
    char mime[32];
} pending;

/* The statements embedding uses: a part's vector by its key among the
 * index's own (live), then in the cache (get, then taken out: del), a
 * chunk's row (put) and its parts' keys (key). */
typedef struct vstmts {
    sqlite3_stmt *live, *get, *del, *put, *key;
    int use_cache;
    const char *prefix;
} vstmts;

/* One part of a chunk being embedded. */
typedef struct vpart {
    size_t chunk;               /* in the batch */
    const char *text;
    size_t len;
    char key[HASH_HEX_LEN + 1]; /* in the embedding cache */
    float *vec;                 /* from the cache, or NULL */
    size_t miss;                /* its row in the provider's answer */
} vpart;

/* Embeds the chunks BATCH[0..N), each as its parts (chunk_parts): the
 * vectors the cache holds, then the rest from the provider, then one row
 * a chunk. *FAILED when the provider failed (ERR says why; the chunks whose
 * parts were all cached are written). */
static int embed_batch(mnemo *m, embedder *e, const vstmts *vs, const pending *batch, size_t n,
                       mnemo_sync_stats *stats, int *failed, buf *err)
{
    int vc = (int)cfg_int(m->cfg, CFG_VECTOR_CHARS), cfg_dims = (int)cfg_int(m->cfg, CFG_DIMENSIONS);
    size_t np = 0, cap = n * 2 + 16, nmiss = 0;
    vpart *ps = malloc(cap * sizeof *ps);
    size_t *first = malloc((n + 1) * sizeof *first); /* each chunk's first part */
    const char **texts = NULL;
    size_t *lens = NULL;
    float *vecs = NULL, *row = NULL;
    int rc = ps && first ? MNEMO_OK : MNEMO_NOMEM, dims = 0;
    *failed = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        chunk_part cp[CHUNK_MAX_PARTS];
        int media = batch[i].media.data != NULL;
        int k = media ? 0 : chunk_parts(batch[i].text, batch[i].len, vc, cp);
        if (k == 0) { /* blank, or media: one vector of the whole text */
            cp[0] = (chunk_part){0, 0, 0, batch[i].len};
            k = 1;
        }
        first[i] = np;
        if (np + (size_t)k > cap) {
            cap = (np + (size_t)k) * 2;
            vpart *nv = realloc(ps, cap * sizeof *nv);
            if (!nv) {
                rc = MNEMO_NOMEM;
                break;
            }
            ps = nv;
        }
        for (int j = 0; j < k; j++) {
            vpart *p = &ps[np++];
            p->chunk = i;
            p->text = batch[i].text + cp[j].off;
            p->len = cp[j].len;
            p->vec = NULL;
            char h[HASH_HEX_LEN + 1];
            if (media) { /* the label with the file: never a text's key */
                char mk[8 + HASH_HEX_LEN + 1];
                snprintf(mk, sizeof mk, "media:%s", batch[i].hash);
                hash_hex(mk, strlen(mk), h);
            } else {
                hash_hex(p->text, p->len, h);
            }
            cache_key(e, cfg_dims, vs->prefix, h, p->key);
        }
    }
    if (first)
        first[n] = np;
    /* Vectors already paid for: the same text in another chunk of the
     * index, else in the cache (which then gives it up: it is the index's
     * now, one copy of each vector). */
    for (size_t i = 0; !rc && i < np; i++) {
        vpart *p = &ps[i];
        int want = embed_dims(e);
        if (!vs->use_cache)
            continue;
        for (int from = 0; from < 2 && !p->vec && !rc; from++) {
            sqlite3_stmt *q = from ? vs->get : vs->live;
            int bytes = 0;
            sqlite3_reset(q);
            sqlite3_bind_text(q, 1, p->key, -1, SQLITE_STATIC);
            if (sqlite3_step(q) == SQLITE_ROW)
                bytes = sqlite3_column_bytes(q, 0);
            if (bytes > 0 && bytes % (int)sizeof(float) == 0 &&
                (!want || bytes == want * (int)sizeof(float)) &&
                (!dims || bytes == dims * (int)sizeof(float))) {
                dims = bytes / (int)sizeof(float);
                if (!(p->vec = malloc((size_t)bytes)))
                    rc = MNEMO_NOMEM;
                else
                    memcpy(p->vec, sqlite3_column_blob(q, 0), (size_t)bytes);
                stats->embed_cache_hits++;
            }
            sqlite3_reset(q);
        }
    }
    /* The provider. */
    embed_media *media = NULL; /* a batch is all media or all text */
    if (!rc && np) {
        texts = malloc(np * sizeof *texts);
        lens = malloc(np * sizeof *lens);
        if (!texts || !lens || (batch[0].media.data && !(media = malloc(np * sizeof *media))))
            rc = MNEMO_NOMEM;
    }
    for (size_t i = 0; !rc && i < np; i++) {
        if (ps[i].vec)
            continue;
        ps[i].miss = nmiss;
        if (media)
            media[nmiss] = batch[ps[i].chunk].media;
        texts[nmiss] = ps[i].text;
        lens[nmiss++] = ps[i].len;
    }
    if (!rc && nmiss) {
        int erc = media ? embed_media_docs(e, texts, lens, media, nmiss, &vecs, err)
                        : embed_texts(e, EMBED_DOCUMENT, texts, lens, nmiss, &vecs, err);
        if (erc) {
            *failed = erc; /* write only the chunks the cache covered */
        } else if (dims && embed_dims(e) != dims) {
            buf_printf(err, "cached vectors have %d dimensions, the provider gives %d", dims,
                       embed_dims(e));
            *failed = MNEMO_INVALID;
        } else {
            dims = embed_dims(e);
            stats->chunks_embedded += nmiss;
        }
    }
    if (!rc && dims && !(row = malloc((size_t)CHUNK_MAX_PARTS * (size_t)dims * sizeof *row)))
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && dims && i < n; i++) {
        size_t k = first[i + 1] - first[i], j;
        for (j = 0; j < k; j++) {
            const vpart *p = &ps[first[i] + j];
            const float *v = p->vec ? p->vec : *failed ? NULL : vecs + p->miss * (size_t)dims;
            if (!v)
                break;
            memcpy(row + j * (size_t)dims, v, (size_t)dims * sizeof *row);
        }
        if (j < k)
            continue; /* a part is missing: the chunk waits for the next sync */
        sqlite3_reset(vs->put);
        sqlite3_bind_int64(vs->put, 1, batch[i].id);
        sqlite3_bind_blob(vs->put, 2, row, (int)(k * (size_t)dims * sizeof(float)), SQLITE_STATIC);
        sqlite3_bind_int(vs->put, 3, (int)k);
        if (sqlite3_step(vs->put) != SQLITE_DONE) {
            buf_printf(err, "cannot write vectors: %s", sqlite3_errmsg(sqlite3_db_handle(vs->put)));
            rc = MNEMO_DB;
        }
        for (j = 0; !rc && vs->use_cache && j < k; j++) {
            const vpart *p = &ps[first[i] + j];
            if (p->vec) { /* from the cache: the index's now */
                sqlite3_reset(vs->del);
                sqlite3_bind_text(vs->del, 1, p->key, -1, SQLITE_STATIC);
                sqlite3_step(vs->del);
            }
            sqlite3_reset(vs->key);
            sqlite3_bind_text(vs->key, 1, p->key, -1, SQLITE_STATIC);
            sqlite3_bind_int64(vs->key, 2, batch[i].id);
            sqlite3_bind_int(vs->key, 3, (int)j);
            if (sqlite3_step(vs->key) != SQLITE_DONE) {
                buf_printf(err, "cannot write vectors: %s",
                           sqlite3_errmsg(sqlite3_db_handle(vs->key)));
                rc = MNEMO_DB;
            }
        }
    }
    for (size_t i = 0; ps && i < np; i++)
        free(ps[i].vec);
    free(ps);
    free(first);
    free(texts);
    free(lens);
    free(media);
    free(vecs);
    free(row);
    return rc;
}

/* The fixed texts' vectors (engine/calib.h) for E, embedded when the index
 * has none for its setup: once, then copied by rebuilds
 * (vectors_carry_cache). */
static int calib_sync(mnemo *m, store *st, embedder *e, buf *err)
{
    sqlite3 *db = store_db(st);
    char ident[1200];
    provider_calib_identity(m, e, ident, sizeof ident);
    sqlite3_stmt *get = NULL, *put = NULL;
    int have = 0, rc = MNEMO_OK;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM vec_calib WHERE identity = ?1", -1, &get, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(get, 1, ident, -1, SQLITE_STATIC);
        have = sqlite3_step(get) == SQLITE_ROW;
    }
    sqlite3_finalize(get);
    if (have)
        return MNEMO_OK;
    size_t lens[CALIB_NTEXTS];
    for (size_t i = 0; i < CALIB_NTEXTS; i++)
        lens[i] = strlen(calib_texts[i]);
    float *vecs = NULL;
    buf why;
    buf_init(&why, 4096);
    rc = embed_texts(e, EMBED_DOCUMENT, (const char **)calib_texts, lens, CALIB_NTEXTS, &vecs,
                     &why);
    if (rc) {
        buf_printf(err, "cannot embed the calibration texts: %s",
                   why.len ? why.data : errcode_text(rc));
        buf_cleanup(&why);
        return rc;
    }
    buf_cleanup(&why);
    int bytes = CALIB_NTEXTS * embed_dims(e) * (int)sizeof(float);
    if (store_begin(st) || exec_sql(db, "DELETE FROM vec_calib") ||
        sqlite3_prepare_v2(db, "INSERT INTO vec_calib(identity, vecs) VALUES(?1, ?2)", -1, &put,
                           NULL) != SQLITE_OK) {
        rc = MNEMO_DB;
    } else {
        sqlite3_bind_text(put, 1, ident, -1, SQLITE_STATIC);
        sqlite3_bind_blob(put, 2, vecs, bytes, SQLITE_STATIC);
        rc = sqlite3_step(put) == SQLITE_DONE && !store_commit(st) ? MNEMO_OK : MNEMO_DB;
    }
    if (rc) {
        buf_printf(err, "cannot write the calibration vectors: %s", sqlite3_errmsg(db));
        store_rollback(st);
    }
    sqlite3_finalize(put);
    free(vecs);
    return rc;
}

struct vec_calib {
    char *ident;
    float *vecs; /* n x dims, calib_distinct's; NULL when the index has none */
    size_t n;
    int dims;
    /* The media's baseline (vectors_media_calib) for the matrix of STAMP. */
    uint64_t mstamp;
    calib_null mref;
};

void vectors_calib_free(vec_calib *c)
{
    if (c) {
        free(c->ident);
        free(c->vecs);
        free(c);
    }
}

int vectors_calib(mnemo *m, store *st, vec_calib **cache, embedder *e, const float *q,
                  calib_null *nl)
{
    char ident[1200];
    provider_calib_identity(m, e, ident, sizeof ident);
    int dims = embed_dims(e);
    vec_calib *c = *cache;
    if (!c && !(c = *cache = calloc(1, sizeof *c)))
        return MNEMO_NOMEM;
    if (!c->ident || strcmp(c->ident, ident) != 0 || c->dims != dims) {
        free(c->ident);
        free(c->vecs);
        c->vecs = NULL;
        c->n = 0;
        c->dims = dims;
        if (!(c->ident = strdup(ident)))
            return MNEMO_NOMEM;
        sqlite3_stmt *sel = NULL;
        if (sqlite3_prepare_v2(store_db(st), "SELECT vecs FROM vec_calib WHERE identity = ?1", -1,
                               &sel, NULL) == SQLITE_OK) {
            sqlite3_bind_text(sel, 1, ident, -1, SQLITE_STATIC);
            size_t want = (size_t)CALIB_NTEXTS * (size_t)(dims > 0 ? dims : 0) * sizeof(float);
            if (sqlite3_step(sel) == SQLITE_ROW && want &&
                (size_t)sqlite3_column_bytes(sel, 0) == want && (c->vecs = malloc(want))) {
                memcpy(c->vecs, sqlite3_column_blob(sel, 0), want);
                c->n = calib_distinct(c->vecs, CALIB_NTEXTS, dims);
            }
        }
        sqlite3_finalize(sel);
    }
    return calib_ref(nl, c->vecs, c->vecs ? c->n : 0, q, dims);
}

/* Part k.part of chunk row v (its parts' vectors one after the other). */
#define PART_VEC "substr(v.vec, k.part * (length(v.vec) / v.parts) + 1, length(v.vec) / v.parts)"

/* Moves the vectors of the chunks the condition that follows names into
 * the cache, under their keys. */
#define RETIRE                                                                                    \
    "INSERT OR REPLACE INTO embed_cache(key, vec, used_at) SELECT k.key, " PART_VEC               \
    ", unixepoch() FROM vec_keys k JOIN chunk_vectors v ON v.chunk_id = k.chunk_id WHERE "

/* Reads the media file of chunk row SEL (columns: id, text, chunk hash,
 * path, file hash, MIME type) into P, as the sync found it: MNEMO_OK,
 * MNEMO_NOTFOUND when it is gone, changed or too large now (the next sync
 * looks at it again), MNEMO_NOMEM. */
static int read_media(mnemo *m, sqlite3_stmt *sel, pending *p)
{
    const char *path = (const char *)sqlite3_column_text(sel, 3);
    const char *fhash = (const char *)sqlite3_column_text(sel, 4);
    const char *mime = (const char *)sqlite3_column_text(sel, 5);
    const char *chash = (const char *)sqlite3_column_text(sel, 2);
    if (!path || !fhash || !mime || !chash)
        return MNEMO_NOTFOUND;
    cfg_media mm;
    cfg_multimodal(m->cfg, &mm);
    buf b;
    int rc = walk_media_read(m->workspace, path, mm.max_bytes, fhash, &b);
    if (rc) {
        buf_cleanup(&b);
        return rc;
    }
    snprintf(p->hash, sizeof p->hash, "%s", chash);
    snprintf(p->mime, sizeof p->mime, "%s", mime);
    p->media.mime = p->mime;
    p->media.data = b.data; /* the pending's now */
    p->media.len = b.len;
    return MNEMO_OK;
}

static void free_pending(pending *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].text);
        free((void *)p[i].media.data);
        p[i].media.data = NULL;
    }
}

static int write_file(store *st, const char *db_path, int quantize, buf *err);

int vectors_sync(mnemo *m, store *st, const char *db_path, embedder *e,
                 const mnemo_sync_opts *opts, mnemo_sync_stats *stats, buf *err)
{
    sqlite3 *db = store_db(st);
    char ident[1024], *old = NULL;
    int rc = MNEMO_OK, changed = 0;
    pending *batch = NULL;
    sqlite3_stmt *sel = NULL, *live = NULL, *get = NULL, *del = NULL, *put = NULL, *key = NULL;
    const char *prefix = cfg_str(m->cfg, CFG_DOCUMENT_PREFIX);
    long cache_max = cfg_int(m->cfg, CFG_EMBED_CACHE_MAX);
    /* A static table computes a vector in microseconds: caching it would
     * only double what is written. */
    int use_cache = strcmp(embed_provider(e), "static") != 0;

    /* A new identity makes every stored vector stale: into the cache with
     * them (their keys name the setup they were made with), for the day it
     * comes back. */
    provider_chunk_identity(m, e, ident, sizeof ident);
    store_meta_get(st, "vec_identity", &old);
    if (!old || strcmp(old, ident) != 0) {
        if (store_begin(st) || (use_cache && exec_sql(db, RETIRE "1")) ||
            exec_sql(db, "DELETE FROM vec_keys") || exec_sql(db, "DELETE FROM chunk_vectors") ||
            store_meta_set(st, "vec_identity", ident) || (new_stamp(st), store_commit(st))) {
            store_rollback(st);
            buf_printf(err, "cannot reset vectors: %s", sqlite3_errmsg(db));
            rc = MNEMO_DB;
            goto done;
        }
        changed = 1;
    }
    /* The memory store keeps its own identity: a rebuilt index starts
     * without one, and the memories' vectors stay good if it is the same. */
    free(old);
    old = NULL;
    provider_identity(m, e, ident, sizeof ident); /* memories have no parts */
    if (store_mem_meta_get(st, "vec_identity", &old) == MNEMO_OK &&
        (!old || strcmp(old, ident) != 0)) {
        if (store_begin_mem(st) || exec_sql(db, "DELETE FROM memory_vectors") ||
            store_mem_meta_set(st, "vec_identity", ident) || store_commit(st)) {
            store_rollback(st);
            buf_printf(err, "cannot reset memory vectors: %s", sqlite3_errmsg(db));
            rc = MNEMO_DB;
            goto done;
        }
    }
    /* Vectors of chunks that are gone (a changed chunk is a new one): into
     * the cache, where the new chunks find the entries that did not change. */
    if (store_begin(st) ||
        (use_cache && exec_sql(db, RETIRE "v.chunk_id NOT IN (SELECT id FROM chunks)")) ||
        exec_sql(db, "DELETE FROM vec_keys WHERE chunk_id NOT IN (SELECT id FROM chunks)") ||
        exec_sql(db, "DELETE FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)")) {
        store_rollback(st);
        buf_printf(err, "cannot remove old vectors: %s", sqlite3_errmsg(db));
        rc = MNEMO_DB;
        goto done;
    }
    if (sqlite3_changes(db) > 0)
        changed = 1;
    if (store_commit(st)) {
        store_rollback(st);
        buf_printf(err, "cannot remove old vectors: %s", sqlite3_errmsg(db));
        rc = MNEMO_DB;
        goto done;
    }

    if (sqlite3_prepare_v2(db,
                           "SELECT c.id, c.text, c.hash, f.path, f.hash, f.mime FROM chunks c "
                           "JOIN files f ON f.id = c.file_id WHERE c.id > ?2 AND "
                           "NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id) "
                           "ORDER BY c.id LIMIT ?1",
                           -1, &sel, NULL) ||
        sqlite3_prepare_v2(db, "SELECT " PART_VEC " FROM vec_keys k JOIN chunk_vectors v ON "
                               "v.chunk_id = k.chunk_id WHERE k.key = ?1",
                           -1, &live, NULL) ||
        sqlite3_prepare_v2(db, "SELECT vec FROM embed_cache WHERE key = ?1", -1, &get, NULL) ||
        sqlite3_prepare_v2(db, "DELETE FROM embed_cache WHERE key = ?1", -1, &del, NULL) ||
        sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO chunk_vectors(chunk_id, vec, parts) "
                           "VALUES(?1, ?2, ?3)",
                           -1, &put, NULL) ||
        sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO vec_keys(key, chunk_id, part) VALUES(?1, ?2, ?3)",
                           -1, &key, NULL)) {
        buf_printf(err, "cannot prepare embedding statements: %s", sqlite3_errmsg(db));
        rc = MNEMO_DB;
        goto done;
    }
    sqlite3_stmt *cnt = NULL;
    size_t missing = 0, done_n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM "
                           "chunk_vectors v WHERE v.chunk_id = c.id)",
                           -1, &cnt, NULL) == SQLITE_OK &&
        sqlite3_step(cnt) == SQLITE_ROW)
        missing = (size_t)sqlite3_column_int64(cnt, 0);
    sqlite3_finalize(cnt);

    int64_t after = 0; /* walk the chunks once, in id order */
    batch = calloc(EMBED_BATCH, sizeof *batch);
    if (!batch) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    for (;;) {
        if (opts && opts->progress) {
            mnemo_progress p = {"embed", done_n, missing, stats->bytes_read};
            opts->progress(opts->progress_ud, &p);
        }
        /* Next batch of chunks without vectors. */
        size_t n = 0;
        sqlite3_reset(sel);
        sqlite3_bind_int(sel, 1, EMBED_BATCH);
        sqlite3_bind_int64(sel, 2, after);
        while (sqlite3_step(sel) == SQLITE_ROW && n < EMBED_BATCH) {
            pending *p = &batch[n];
            memset(p, 0, sizeof *p);
            p->id = sqlite3_column_int64(sel, 0);
            /* Media come last (their ids are the highest), a few at a
             * time: each holds its file. */
            int media = p->id >= STORE_MEDIA_ID_BASE;
            if (media && n && (!batch[0].media.data || n == MEDIA_BATCH))
                break;
            after = p->id;
            if (media) {
                int mrc = read_media(m, sel, p);
                if (mrc == MNEMO_NOMEM) {
                    rc = mrc;
                    break;
                }
                if (mrc) /* changed or gone since the sync read it: the next one */
                    continue;
            }
            p->len = (size_t)sqlite3_column_bytes(sel, 1);
            p->text = malloc(p->len + 1);
            if (!p->text) {
                rc = MNEMO_NOMEM;
                break;
            }
            memcpy(p->text, sqlite3_column_text(sel, 1), p->len);
            p->text[p->len] = 0;
            n++;
        }
        sqlite3_reset(sel);
        if (rc || n == 0) {
            free_pending(batch, n);
            break;
        }
        if (store_begin(st)) {
            free_pending(batch, n);
            buf_printf(err, "cannot write vectors: %s", sqlite3_errmsg(db));
            rc = MNEMO_DB;
            break;
        }
        /* Each chunk's parts (chunk_parts): the cache first, the rest goes
         * to the provider, then one row a chunk with its parts' vectors. */
        int failed = 0;
        vstmts stm = {live, get, del, put, key, use_cache, prefix};
        rc = embed_batch(m, e, &stm, batch, n, stats, &failed, err);
        if (failed && !rc) {
            /* Keep what the cache gave; the rest is retried next time. */
            rc = failed;
            new_stamp(st);
            store_commit(st);
            free_pending(batch, n);
            changed = 1;
            break;
        }
        if (rc) {
            store_rollback(st);
            free_pending(batch, n);
            break;
        }
        new_stamp(st);
        if (store_commit(st)) {
            store_rollback(st);
            free_pending(batch, n);
            buf_printf(err, "cannot write vectors: %s", sqlite3_errmsg(db));
            rc = MNEMO_DB;
            break;
        }
        changed = 1;
        done_n += n;
        free_pending(batch, n);
    }
    if (!rc && cache_max > 0) {
        /* Oldest-first pruning down to the cap. */
        sqlite3_stmt *prune = NULL;
        if (sqlite3_prepare_v2(db,
                               "DELETE FROM embed_cache WHERE key IN (SELECT key FROM embed_cache "
                               "ORDER BY used_at, key LIMIT max(0, (SELECT count(*) FROM "
                               "embed_cache) - ?1))",
                               -1, &prune, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(prune, 1, cache_max);
            sqlite3_step(prune);
        }
        sqlite3_finalize(prune);
    }
    if (!rc)
        rc = calib_sync(m, st, e, err);
    sqlite3_stmt *tot = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM chunk_vectors", -1, &tot, NULL) == SQLITE_OK &&
        sqlite3_step(tot) == SQLITE_ROW)
        stats->vectors_total = (size_t)sqlite3_column_int64(tot, 0);
    sqlite3_finalize(tot);
    if (changed) {
        buf werr;
        buf_init(&werr, 4096);
        int wrc = write_file(st, db_path, strcmp(cfg_str(m->cfg, CFG_VECTOR_QUANTIZATION), "int8") == 0,
                             &werr);
        if (wrc && !rc) {
            buf_printf(err, "%s", werr.data ? werr.data : "cannot write the vector file");
            rc = wrc;
        }
        buf_cleanup(&werr);
    }
done:
    free(old);
    free(batch);
    sqlite3_finalize(sel);
    sqlite3_finalize(live);
    sqlite3_finalize(get);
    sqlite3_finalize(del);
    sqlite3_finalize(put);
    sqlite3_finalize(key);
    return rc;
}

void vectors_carry_cache(store *st, const char *old_path)
{
    struct stat s;
    if (stat(old_path, &s) != 0)
        return;
    sqlite3 *db = store_db(st);
    sqlite3_stmt *a = NULL;
    exec_sql(db, "PRAGMA locking_mode = NORMAL"); /* see mem_carry() */
    if (sqlite3_prepare_v2(db, "ATTACH ?1 AS old", -1, &a, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(a, 1, old_path, -1, SQLITE_STATIC);
    int rc = sqlite3_step(a);
    sqlite3_finalize(a);
    if (rc != SQLITE_DONE)
        return;
    /* The old index's own vectors and its cache: the new one's cache. */
    exec_sql(db, "INSERT OR IGNORE INTO main.embed_cache(key, vec, used_at) SELECT k.key, "
                 PART_VEC ", unixepoch() FROM old.vec_keys k JOIN old.chunk_vectors v ON "
                 "v.chunk_id = k.chunk_id");
    exec_sql(db, "INSERT OR IGNORE INTO main.embed_cache(key, vec, used_at) SELECT key, vec, "
                 "used_at FROM old.embed_cache");
    exec_sql(db, "INSERT OR IGNORE INTO main.vec_calib SELECT identity, vecs FROM old.vec_calib");
    exec_sql(db, "DETACH old");
    exec_sql(db, "PRAGMA main.locking_mode = EXCLUSIVE");
}

/* ----------------------------------------------------------------------
 * The matrix file
 * -------------------------------------------------------------------- */

typedef struct vf_header {
    char magic[8];
    uint32_t dims, flags;
    uint64_t count, stamp;
    uint64_t ids_off, vecs_off, q_off, scales_off;
} vf_header;

struct vec_file {
    void *map;
    size_t size;
    const vf_header *h;
    const int64_t *ids;
    const float *vecs;
    const int8_t *q;
    const float *scales;
};

static uint64_t align64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

static int by_score(const void *a, const void *b)
{
    const vec_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static uint64_t stamp_of(store *st)
{
    char *s = NULL;
    store_meta_get(st, "vec_stamp", &s);
    uint64_t v = s ? strtoull(s, NULL, 16) : 0;
    free(s);
    return v;
}

static int write_file(store *st, const char *db_path, int quantize, buf *err)
{
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q = NULL;
    int64_t *ids = NULL;
    float *vecs = NULL;
    int rc = MNEMO_OK, fd = -1;
    size_t n = 0, cap = 0;
    uint32_t dims = 0;
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s.vec", db_path);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    /* Read the stamp and the rows in one read transaction. */
    exec_sql(db, "BEGIN");
    uint64_t stamp = stamp_of(st);
    if (sqlite3_prepare_v2(db, "SELECT chunk_id, vec, parts FROM chunk_vectors ORDER BY chunk_id",
                           -1, &q, NULL) != SQLITE_OK) {
        rc = MNEMO_DB;
        goto done;
    }
    /* A chunk's parts are rows of their own, in order, under its id. */
    while (sqlite3_step(q) == SQLITE_ROW) {
        int bytes = sqlite3_column_bytes(q, 1);
        int parts = sqlite3_column_int(q, 2);
        if (parts < 1 || parts > CHUNK_MAX_PARTS || bytes <= 0 ||
            bytes % (parts * (int)sizeof(float)))
            continue; /* damaged: skip */
        if (!dims)
            dims = (uint32_t)bytes / (uint32_t)parts / sizeof(float);
        if ((uint32_t)bytes != (uint32_t)parts * dims * sizeof(float))
            continue; /* vectors of another size: stale, skip */
        if (n + (size_t)parts > cap) {
            cap = cap ? cap * 2 : 1024;
            int64_t *ni = realloc(ids, cap * sizeof *ni);
            float *nv = ni ? realloc(vecs, cap * dims * sizeof *nv) : NULL;
            if (ni)
                ids = ni;
            if (!ni || !nv) {
                rc = MNEMO_NOMEM;
                goto done;
            }
            vecs = nv;
        }
        int64_t id = sqlite3_column_int64(q, 0);
        memcpy(vecs + n * dims, sqlite3_column_blob(q, 1), (size_t)bytes);
        for (int k = 0; k < parts; k++)
            ids[n++] = id;
    }
    sqlite3_finalize(q);
    q = NULL;
    exec_sql(db, "COMMIT");
    vf_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VF_MAGIC, 8);
    h.dims = dims;
    h.count = n;
    h.stamp = stamp;
    h.flags = quantize ? VF_INT8 : 0;
    h.ids_off = align64(sizeof h);
    h.vecs_off = align64(h.ids_off + n * 8);
    h.q_off = align64(h.vecs_off + n * dims * 4);
    h.scales_off = align64(h.q_off + (quantize ? n * dims : 0));
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        buf_printf(err, "cannot write %s: %s", tmp, strerror(errno));
        rc = MNEMO_IO;
        goto done;
    }
    static const char zeros[64];
    uint64_t pos = 0;
#define PAD(to)                                                                                \
    do {                                                                                       \
        while (pos < (to)) {                                                                   \
            size_t k_ = (size_t)((to)-pos > 64 ? 64 : (to)-pos);                               \
            if (io_write_all(fd, zeros, k_))                                                      \
                goto ioerr;                                                                    \
            pos += k_;                                                                         \
        }                                                                                      \
    } while (0)
    if (io_write_all(fd, &h, sizeof h))
        goto ioerr;
    pos = sizeof h;
    PAD(h.ids_off);
    if (n && io_write_all(fd, ids, n * 8))
        goto ioerr;
    pos += n * 8;
    PAD(h.vecs_off);
    if (n && io_write_all(fd, vecs, n * dims * 4))
        goto ioerr;
    pos += n * dims * 4;
    PAD(h.q_off);
    if (quantize && n) {
        int8_t *qv = malloc(dims);
        float *scales = malloc(n * sizeof *scales);
        int bad = !qv || !scales;
        for (size_t i = 0; i < n && !bad; i++) {
            vec_quantize(vecs + i * dims, dims, qv, &scales[i]);
            bad = io_write_all(fd, qv, dims) != 0;
        }
        pos += n * dims;
        if (!bad) {
            uint64_t to = h.scales_off;
            while (pos < to && !bad) {
                size_t k = (size_t)(to - pos > 64 ? 64 : to - pos);
                bad = io_write_all(fd, zeros, k) != 0;
                pos += k;
            }
            bad = bad || io_write_all(fd, scales, n * sizeof *scales) != 0;
        }
        free(qv);
        free(scales);
        if (bad)
            goto ioerr;
    }
#undef PAD
    close(fd);
    fd = -1;
    if (rename(tmp, path) != 0)
        goto ioerr;
    goto done;
ioerr:
    buf_printf(err, "cannot write %s: %s", tmp, strerror(errno));
    rc = MNEMO_IO;
    unlink(tmp);
done:
    if (fd >= 0) {
        close(fd);
        unlink(tmp);
    }
    if (q) {
        sqlite3_finalize(q);
        exec_sql(db, "COMMIT");
    }
    free(ids);
    free(vecs);
    return rc;
}

static int map_file(const char *path, vec_file **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return MNEMO_NOTFOUND;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(vf_header)) {
        close(fd);
        return MNEMO_CORRUPT;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return MNEMO_IO;
    const vf_header *h = map;
    uint64_t size = (uint64_t)st.st_size;
    int ok = memcmp(h->magic, VF_MAGIC, 8) == 0 && h->dims <= 65536 &&
             h->ids_off + h->count * 8 <= size && h->vecs_off + h->count * h->dims * 4 <= size &&
             (!(h->flags & VF_INT8) || (h->q_off + h->count * h->dims <= size &&
                                        h->scales_off + h->count * 4 <= size));
    if (!ok) {
        munmap(map, (size_t)st.st_size);
        return MNEMO_CORRUPT;
    }
    vec_file *f = calloc(1, sizeof *f);
    if (!f) {
        munmap(map, (size_t)st.st_size);
        return MNEMO_NOMEM;
    }
    f->map = map;
    f->size = (size_t)st.st_size;
    f->h = h;
    f->ids = (const int64_t *)(const void *)((const char *)map + h->ids_off);
    f->vecs = (const float *)(const void *)((const char *)map + h->vecs_off);
    if (h->flags & VF_INT8) {
        f->q = (const int8_t *)map + h->q_off;
        f->scales = (const float *)(const void *)((const char *)map + h->scales_off);
    }
    *out = f;
    return MNEMO_OK;
}

void vecfile_close(vec_file *f)
{
    if (!f)
        return;
    munmap(f->map, f->size);
    free(f);
}

int vecfile_open(store *st, const char *db_path, int quantize, vec_file **out, buf *err)
{
    *out = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s.vec", db_path);
    uint64_t stamp = stamp_of(st);
    vec_file *f = NULL;
    int rc = map_file(path, &f);
    int want_q = quantize != 0;
    if (rc == MNEMO_OK && f->h->stamp == stamp && ((f->h->flags & VF_INT8) != 0) == want_q) {
        *out = f;
        return f->h->count ? MNEMO_OK : MNEMO_NOTFOUND;
    }
    vecfile_close(f);
    /* Missing or stale: rebuild from the database. */
    if ((rc = write_file(st, db_path, quantize, err)))
        return rc;
    if ((rc = map_file(path, &f))) {
        buf_printf(err, "cannot read %s", path);
        return rc;
    }
    *out = f;
    return f->h->count ? MNEMO_OK : MNEMO_NOTFOUND;
}

int vecfile_get(store *st, const char *db_path, int quantize, vec_file **cache, buf *err)
{
    vec_file *f = *cache;
    if (f && f->h->stamp == stamp_of(st) && ((f->h->flags & VF_INT8) != 0) == (quantize != 0))
        return f->h->count ? MNEMO_OK : MNEMO_NOTFOUND;
    vecfile_close(f);
    *cache = NULL;
    int rc = vecfile_open(st, db_path, quantize, cache, err);
    return rc;
}

size_t vecfile_count(const vec_file *f) { return f ? (size_t)f->h->count : 0; }
int vecfile_dims(const vec_file *f) { return f ? (int)f->h->dims : 0; }

static size_t lower_bound(const vec_file *f, int64_t id)
{
    size_t lo = 0, hi = (size_t)f->h->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Rows are parts: a chunk's best part stands for it, so the scan asks for
 * more rows than chunks and keeps each chunk's first (best) row. */
#define VF_ROWS_PER_CHUNK 4

size_t vecfile_search(const vec_file *f, const float *q, int64_t lo, int64_t hi, size_t k,
                      int quantize, vec_match *out, double *mean, double *sd)
{
    size_t first = lower_bound(f, lo), last = lower_bound(f, hi);
    size_t n = last - first, d = f->h->dims;
    const float *vecs = f->vecs + first * d;
    const int8_t *q8s = f->q ? f->q + first * d : NULL;
    const float *scales = f->scales ? f->scales + first : NULL;
    size_t rows = (k ? k : 1) * VF_ROWS_PER_CHUNK;
    vec_hit *hits = malloc(rows * 4 * sizeof *hits);
    if (!hits)
        return 0;
    size_t got;
    vec_stats st = {0, 0, 0};
    if (quantize && q8s) {
        /* int8 scan for 4x the rows, exact float rescoring of those. */
        int8_t *q8 = malloc(d);
        float qs = 1;
        if (!q8) {
            free(hits);
            return 0;
        }
        vec_quantize(q, d, q8, &qs);
        size_t cand = vec_topk_i8(q8s, scales, n, d, q8, qs, rows * 4, hits, 0);
        free(q8);
        for (size_t i = 0; i < cand; i++)
            hits[i].score = vec_dot_f32(vecs + (size_t)hits[i].row * d, q, d);
        qsort(hits, cand, sizeof *hits, by_score);
        got = cand < rows ? cand : rows;
        /* mean from a sample: the int8 scan does not compute it */
        double s = 0, s2 = 0;
        size_t step = n > 4096 ? n / 4096 : 1, m = 0;
        for (size_t r = 0; r < n; r += step, m++) {
            double x = vec_dot_f32(vecs + r * d, q, d);
            s += x;
            s2 += x * x;
        }
        st.sum = s;
        st.sumsq = s2;
        st.n = m;
    } else {
        got = vec_topk_f32(vecs, n, d, q, rows, hits, &st, 0);
    }
    /* One match a chunk, its best part's (hits come best first; k is a
     * few hundred, so a repeat is looked for among the matches kept). */
    size_t kept = 0;
    for (size_t i = 0; i < got && kept < k; i++) {
        int64_t id = f->ids[first + hits[i].row];
        size_t j = 0;
        while (j < kept && out[j].chunk_id != id)
            j++;
        if (j < kept)
            continue;
        out[kept].chunk_id = id;
        out[kept++].cosine = hits[i].score;
    }
    double mu = st.n ? st.sum / (double)st.n : 0;
    double var = st.n ? st.sumsq / (double)st.n - mu * mu : 0;
    if (mean)
        *mean = mu;
    if (sd)
        *sd = var > 0 ? sqrt(var) : 0;
    free(hits);
    return kept;
}

int vecfile_cosines(const vec_file *f, int64_t chunk_id, const float *q, float *cs, int max)
{
    size_t i = lower_bound(f, chunk_id), d = f->h->dims;
    int k = 0;
    for (; i < f->h->count && f->ids[i] == chunk_id && k < max; i++)
        cs[k++] = vec_dot_f32(f->vecs + i * d, q, d);
    return k;
}

int vectors_media_calib(mnemo *m, store *st, vec_calib **cache, embedder *e, const float *q,
                        const vec_file *f, calib_null *nl)
{
    calib_null text;
    int rc = vectors_calib(m, st, cache, e, q, &text); /* loads the fixed texts */
    if (rc)
        return rc;
    vec_calib *c = *cache;
    if (c->mstamp != f->h->stamp || !c->mstamp) {
        /* Unrelated text against media: every fixed text with the first
         * MEDIA_REF media, robustly (calib_ref_cosines). */
        int dims = (int)f->h->dims;
        size_t lo = lower_bound(f, STORE_MEDIA_ID_BASE), nm = f->h->count - lo;
        if (nm > MEDIA_REF)
            nm = MEDIA_REF;
        double *cs = malloc((nm * c->n + 1) * sizeof *cs);
        if (!cs)
            return MNEMO_NOMEM;
        size_t k = 0;
        for (size_t r = 0; c->vecs && dims == c->dims && r < nm; r++) {
            const float *mv = f->vecs + (lo + r) * (size_t)dims;
            for (size_t t = 0; t < c->n; t++) {
                const float *tv = c->vecs + t * (size_t)dims;
                double dot = 0, tt = 0;
                for (int j = 0; j < dims; j++) {
                    dot += (double)mv[j] * tv[j];
                    tt += (double)tv[j] * tv[j];
                }
                if (tt > 0)
                    cs[k++] = dot / sqrt(tt); /* the matrix's vectors are unit length */
            }
        }
        memset(&c->mref, 0, sizeof c->mref);
        calib_ref_cosines(&c->mref, cs, k);
        free(cs);
        c->mstamp = f->h->stamp;
    }
    nl->ref_mean = c->mref.ref_mean;
    nl->ref_sd = c->mref.ref_sd;
    nl->ref_n = c->mref.ref_n;
    return MNEMO_OK;
}

size_t vecfile_media_count(const vec_file *f)
{
    return f->h->count - lower_bound(f, STORE_MEDIA_ID_BASE);
}
