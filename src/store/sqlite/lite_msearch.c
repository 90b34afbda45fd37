/*
 * lite_msearch.c - searching structured memories on SQLite: the keyword
 * leg (BM25 over memories_fts) and the vector leg (a scan of the scope's
 * memory vectors), each restricted by the scope and filters in SQL, the
 * factor inputs and episodes read from the rows; the fusion, factors and
 * episodes themselves are msearch.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "store/sqlite/lite.h"
#include "store/sqlite/lite_filter.h"
#include "store/sqlite/lite_mpost.h"
#include "store/sqlite/memlite.h"
#include "engine/memory.h"
#include "store/sqlite/memvec.h"
#include "store/sqlite/vectors.h"
#include "embed/vec.h"

#define POOL 200


/* Binds the scope arguments and the filter's after FIRST - 1 others. */
static int bind_where(sqlite3_stmt *st, const mfilter *args, const mem_opts *o, int first)
{
    if (lite_filter_bind(args, st, first) != SQLITE_OK)
        return MNEMO_DB;
    return lite_filter_bind(&o->filter, st, first + (int)args->nargs) == SQLITE_OK ? MNEMO_OK
                                                                               : MNEMO_DB;
}

#define FACTOR_COLS MEM_FACTOR_COLS
#define FACTOR_NCOLS MEM_FACTOR_NCOLS


static int keyword_leg(mnemo *m, const query *q, const char *where, const mfilter *args,
                       const mem_opts *o, mset *s)
{
    fts_rank *r = store_mrank(LITE(m)->st);
    fts_rank_reset(r, q->nphrase);
    buf sql;
    buf_init(&sql, 1 << 20);
    buf_printf(&sql,
               /* CROSS JOIN: the full-text query drives, once; the other
                * order runs it for every memory in scope. */
               "SELECT mnemo_collect_mem(memories_fts, " FACTOR_COLS ") FROM memories_fts "
               "CROSS JOIN memories m ON m.mid = memories_fts.rowid "
               "WHERE memories_fts MATCH ? AND %s",
               where);
    sqlite3_stmt *st = NULL;
    int rc = buf_err(&sql) ? MNEMO_NOMEM : MNEMO_OK;
    if (!rc && sqlite3_prepare_v2(store_db(LITE(m)->st), sql.data, -1, &st, NULL) != SQLITE_OK)
        rc = lite_mem_sqlfail(m, "memory search");
    buf_cleanup(&sql);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
    if ((rc = bind_where(st, args, o, 2))) {
        sqlite3_finalize(st);
        return lite_mem_sqlfail(m, "memory search");
    }
    int s2;
    while ((s2 = sqlite3_step(st)) == SQLITE_ROW)
        ;
    sqlite3_finalize(st);
    if (s2 != SQLITE_DONE)
        return r->hits.nomem ? MNEMO_NOMEM : lite_mem_sqlfail(m, "memory search");
    mem_bm25 k;
    mem_bm25_init(m, q, &r->hits, &k);
    const bm25_hits *h = &r->hits;
    for (size_t i = 0; i < h->n; i++) {
        if (!mem_bm25_hit_ok(q, &r->hits, i))
            continue;
        mcand *c = mset_push(s, h->id[i]); /* each row once */
        if (!c)
            return MNEMO_NOMEM;
        c->text = mem_bm25_norm(&k, &r->hits, i);
        if (r->nextra == FACTOR_NCOLS)
            lite_mem_factors_of(c, r->extra + i * FTS_EXTRA);
    }
    return MNEMO_OK;
}

typedef struct vhit {
    int64_t mid;
    float cos;
} vhit;

static int by_cos(const void *a, const void *b)
{
    const vhit *x = a, *y = b;
    return x->cos < y->cos ? 1 : x->cos > y->cos ? -1 : (x->mid > y->mid) - (x->mid < y->mid);
}

/* Scans the scope's memory vectors; the best POOL join the candidates, and
 * every candidate gets its calibrated vector score. */
static int vector_leg(mnemo *m, embedder *e, float *qv, const char *where, const mfilter *args,
                      const mem_opts *o, mset *s, int *ran)
{
    *ran = 0;
    if (!e || !qv)
        return MNEMO_OK; /* keyword results stand on their own */
    int dims = embed_dims(e);
    buf sql;
    buf_init(&sql, 1 << 20);
    buf_printf(&sql,
               "SELECT v.mid, v.vec FROM memory_vectors v JOIN memories m ON m.mid = v.mid "
               "WHERE %s",
               where);
    sqlite3_stmt *st = NULL;
    int rc = buf_err(&sql) ? MNEMO_NOMEM : MNEMO_OK;
    if (!rc && sqlite3_prepare_v2(store_db(LITE(m)->st), sql.data, -1, &st, NULL) != SQLITE_OK)
        rc = lite_mem_sqlfail(m, "memory vectors");
    buf_cleanup(&sql);
    if (!rc && bind_where(st, args, o, 1))
        rc = lite_mem_sqlfail(m, "memory vectors");
    vhit *hits = NULL;
    size_t n = 0, cap = 0;
    double sum = 0, sum2 = 0;
    int step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_bytes(st, 1) != dims * (int)sizeof(float))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            vhit *v = realloc(hits, cap * sizeof *v);
            if (!v) {
                rc = MNEMO_NOMEM;
                break;
            }
            hits = v;
        }
        float c = vec_dot_f32(qv, sqlite3_column_blob(st, 1), (size_t)dims);
        hits[n++] = (vhit){sqlite3_column_int64(st, 0), c};
        sum += c;
        sum2 += (double)c * c;
    }
    if (!rc && step != SQLITE_DONE)
        rc = lite_mem_sqlfail(m, "memory vectors");
    sqlite3_finalize(st);
    calib_null nl = {0};
    if (!rc && n) {
        double var = sum2 / (double)n - (sum / (double)n) * (sum / (double)n);
        nl = (calib_null){sum / (double)n, var > 0 ? sqrt(var) : 0, n, 0, 0, 0};
        rc = vectors_calib(m, LITE(m)->st, &LITE(m)->calib, e, qv, &nl);
    }
    if (!rc && n) {
        qsort(hits, n, sizeof *hits, by_cos);
        size_t nk = s->n; /* keyword candidates, sorted by mid */
        mset_sort_mid(s, nk);
        for (size_t i = 0; i < n && !rc; i++) {
            mcand *c = mset_find(s, nk, hits[i].mid);
            if (!c && i < POOL && !(c = mset_push(s, hits[i].mid)))
                rc = MNEMO_NOMEM;
            if (c)
                mem_vec_set(c, hits[i].cos, &nl);
        }
        *ran = 1;
    }
    free(hits);
    free(qv);
    return rc;
}

/* SQLite: the factor inputs of C from its row. */
#define FACTOR_SQL "SELECT " FACTOR_COLS " FROM memories m WHERE mid = ?1"
static int lite_factors(mnemo *m, void *ud, mcand *c)
{
    (void)m;
    sqlite3_stmt *st = ud;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, c->mid);
    if (sqlite3_step(st) != SQLITE_ROW)
        return MNEMO_NOTFOUND;
    double v[FACTOR_NCOLS];
    for (int i = 0; i < FACTOR_NCOLS; i++)
        v[i] = sqlite3_column_double(st, i);
    lite_mem_factors_of(c, v);
    return MNEMO_OK;
}

/* Loads C's record (MEM_COLS) if not loaded yet. */
static int lite_load(mnemo *m, mcand *c)
{
    if (c->rec)
        return MNEMO_OK;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(store_db(LITE(m)->st), "SELECT " MEM_COLS " FROM memories m WHERE m.mid = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return lite_mem_sqlfail(m, "memory search");
    sqlite3_bind_int64(st, 1, c->mid);
    int rc = MNEMO_NOTFOUND;
    if (sqlite3_step(st) == SQLITE_ROW)
        rc = (c->rec = mem_json(st, 0)) ? MNEMO_OK : MNEMO_NOMEM;
    sqlite3_finalize(st);
    return rc;
}


/* The SQLite search (mem_searcher.run). */
static int lite_run(mnemo *m, const char *text, mem_opts *o, size_t need, mset *s,
                    const char **mode)
{
    *mode = "keyword";
    buf qt;
    buf_init(&qt, 1 << 16);
    int rc = mem_query_text(m, text, &qt);
    if (rc) {
        buf_cleanup(&qt);
        return rc;
    }
    const char *q = qt.data ? qt.data : "";
    tok *t;
    query pq;
    memset(&pq, 0, sizeof pq);
    buf where;
    buf_init(&where, 1 << 20);
    mfilter args;
    mfilter_init(&args);
    double now = core_now();
    if (!(rc = memlite_open(m)) && !(rc = lite_qtok(m, &t)) && !(rc = query_parse(t, q, &pq)))
        rc = mem_where(o, floor(now), &where, &args);
    sqlite3 *db = !rc ? store_db(LITE(m)->st) : NULL;
    int txn = db && sqlite3_get_autocommit(db) &&
              sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    /* The query's vector is made while the keyword leg runs. */
    embedder *e = NULL;
    embed_job job;
    if (!rc && *q) {
        buf err;
        buf_init(&err, 4096);
        if ((e = memvec_embedder(m, &err)))
            embed_start(&job, e, EMBED_QUERY, q, strlen(q));
        buf_cleanup(&err);
    }
    /* Without a vector leg, the best by score come from the postings when
     * the store has them; else every match is ranked. */
    int posted = 0;
    if (!rc && pq.match && !e) {
        rc = lite_mpost_leg(m, &pq, where.data, &args, o, need, now, q, s);
        posted = rc == MNEMO_OK;
        if (rc == MNEMO_NOTFOUND)
            rc = MNEMO_OK;
    }
    if (!rc && pq.match && !posted)
        rc = keyword_leg(m, &pq, where.data, &args, o, s);
    float *qv = NULL;
    if (e && rc)
        embed_drop(&job);
    else if (e) {
        buf err;
        buf_init(&err, 4096);
        if (embed_finish(&job, &qv, &err) != MNEMO_OK) {
            free(qv);
            qv = NULL;
        }
        buf_cleanup(&err);
    }
    int ran = 0;
    if (!rc && *q)
        rc = vector_leg(m, e, qv, where.data, &args, o, s, &ran); /* frees qv */
    else
        free(qv);
    if (!rc && pq.match && s->n && !posted) {
        mem_bm25 k;
        fts_rank *r = store_mrank(LITE(m)->st);
        mem_bm25_init(m, &pq, &r->hits, &k);
        rc = mem_episodes(m, &pq, &k, &r->hits, NULL, need, s, s->n, lite_mem_episodes, NULL);
    }
    if (ran)
        *mode = "hybrid";
    sqlite3_stmt *row = NULL;
    if (!rc && s->n && sqlite3_prepare_v2(db, FACTOR_SQL, -1, &row, NULL) != SQLITE_OK)
        rc = lite_mem_sqlfail(m, "memory search");
    if (!rc)
        rc = mem_rank(m, q, o, ran, need, now, s, lite_factors, row);
    sqlite3_finalize(row);
    if (txn)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    query_cleanup(&pq);
    mfilter_cleanup(&args);
    buf_cleanup(&where);
    buf_cleanup(&qt);
    return rc;
}

const mem_searcher mem_lite_searcher = {lite_run, lite_load};
