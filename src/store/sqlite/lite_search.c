/*
 * lite_search.c - the SQLite index's steps of note search (lite_notes, a
 * search_store: search.c runs the search): the BM25 leg over chunks_fts
 * (topk.h keeps the best rows), the file-name legs over files_fts and the
 * vector leg over the mapped vectors file, in one read transaction, and
 * the rows the ranking reads through search_io.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/errcode.h"
#include "store/sqlite/lite.h"
#include "text/query.h"
#include "engine/rank.h"
#include "engine/search.h"
#include "engine/topk.h"
#include "store/sqlite/kwpost.h"
#include "store/sqlite/vectors.h"

#define PATH_ROWS_MAX 2000

typedef search_cand cand;
typedef search_file_hits file_hits;

/* ----------------------------------------------------------------------
 * Legs
 * -------------------------------------------------------------------- */

static int sql_fail(mnemo *m, const char *what)
{
    sqlite3 *db = store_db(LITE(m)->st);
    int code = store_code(sqlite3_errcode(db));
    return core_error(m, code ? code : MNEMO_DB, "search failed (%s): %s", what,
                      sqlite3_errmsg(db));
}

/* The chunk id range of a corpus (see STORE_SESSION_ID_BASE). */
typedef struct corpus {
    int64_t lo, hi; /* ids in [lo, hi) */
    const char *source; /* files.source, or NULL for all */
} corpus;

/* The text of corpus NAME; MEDIA 1: its images and audio instead (they
 * belong to the memory files), which a search of the sessions has none of. */
static corpus corpus_of(const char *name, int media)
{
    int sessions = name && strcmp(name, "sessions") == 0, all = name && strcmp(name, "all") == 0;
    if (media > 0)
        return sessions ? (corpus){0, 0, "sessions"}
                        : (corpus){STORE_MEDIA_ID_BASE, INT64_MAX, all ? NULL : "memory"};
    if (sessions)
        return (corpus){STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE, "sessions"};
    if (all)
        return (corpus){0, STORE_MEDIA_ID_BASE, NULL};
    return (corpus){0, STORE_SESSION_ID_BASE, "memory"};
}

/* BM25 over chunks: mnemo_phrases() gathers the matching rows' term
 * frequencies and lengths, the scores are computed here. */
static int content_leg(mnemo *m, const query *q, const corpus *cp, topk *p, search_bm25 *bm)
{
    fts_rank *r = store_rank(LITE(m)->st);
    fts_rank_reset(r, q->nphrase);
    /* One row starts mnemo_phrases(), which reads every phrase's rows. */
    sqlite3_stmt *st = fts_stmt(r, "SELECT mnemo_phrases(chunks_fts, ?4, ?2, ?3) FROM chunks_fts "
                                   "WHERE chunks_fts MATCH ?1 AND rowid >= ?2 AND rowid < ?3 "
                                   "LIMIT 1");
    if (!st)
        return sql_fail(m, "prepare");
    sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, cp->lo);
    sqlite3_bind_int64(st, 3, cp->hi);
    sqlite3_bind_int(st, 4, q->npositive);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return r->hits.nomem ? core_error(m, MNEMO_NOMEM, "out of memory")
                             : lite_index_fail(m, rc, "keyword query");
    double w[BM25_MAX_PHRASES];
    query_weights(q, w);
    bm25_idfs(&r->hits, bm->idf);
    bm->k1 = cfg_num(m->cfg, CFG_BM25_K1);
    bm->b = cfg_num(m->cfg, CFG_BM25_B);
    const bm25_hits *h = &r->hits;
    bm->avgdl = h->avgdl;
    for (size_t i = 0; i < h->n; i++) {
        if ((h->mask[i] & q->required) != q->required)
            continue;
        topk_offer(p, bm25_score(&r->hits, i, w, bm->idf, bm->k1, bm->b), h->id[i]);
    }
    double s = 0;
    for (int i = 0; i < q->npositive && i < h->np; i++)
        s += bm->idf[i];
    bm->sum_idf = s > 0 ? s : 1.0;
    return MNEMO_OK;
}



/* ----------------------------------------------------------------------
 * The BM25 leg over the postings (kwpost.h): top-k with block bounds
 * -------------------------------------------------------------------- */

/* A search's reading of the postings: the query's terms, their blocks and
 * the walk over them, kept for the BM25 of the other legs' candidates. */
typedef struct post_leg {
    int on;
    int64_t mark[KWPOST_RANGES];
    kwread kr;
    blockmax_term t[BM25_MAX_PHRASES];
    blockmax_query bq;
    double w[BM25_MAX_PHRASES], idf[BM25_MAX_PHRASES];
} post_leg;

/* Counts the tokens FTS5 would look up for a quoted phrase (identifier
 * parts are not), keeping the first. */
typedef struct one_tok {
    char *term;
    int n;
} one_tok;

static int one_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    one_tok *o = ud;
    if (flags & TOKF_PART)
        return 0;
    if (o->n++ == 0) {
        int n = len > TOK_MAX_BYTES ? TOK_MAX_BYTES : len;
        memcpy(o->term, token, (size_t)n);
        o->term[n] = 0;
    }
    return 0;
}

/* The term of each of Q's phrases into TERMS, when every phrase is one
 * token FTS5 matches whole (no prefix, no phrase of several words, no
 * exclusion): 1, else 0 (the query takes FTS5's path). */
int lite_single_terms(mnemo *m, const query *q, char (*terms)[TOK_MAX_BYTES + 1])
{
    if (!q->match || q->nphrase <= 0 || q->npositive != q->nphrase ||
        q->nphrase > BM25_MAX_PHRASES)
        return 0;
    tok *t = NULL;
    if (lite_qtok(m, &t))
        return 0;
    buf ph;
    buf_init(&ph, 1 << 16);
    const char *p = q->match;
    int ok = 1;
    for (int i = 0; ok && i < q->nphrase; i++) {
        int prefix = 0;
        p = query_phrase_next(p, &ph, &prefix);
        one_tok one = {terms[i], 0};
        ok = p && !prefix && !buf_err(&ph) &&
             tok_run(t, ph.data ? ph.data : "", ph.len, 0, one_fn, &one) == 0 && one.n == 1;
    }
    buf_cleanup(&ph);
    return ok;
}

/* Runs the FTS5 side of the postings leg: mnemo_collect() over the chunks
 * of [LO, HI), appended to the hits. */
static int tail_rows(mnemo *m, const query *q, int64_t lo, int64_t hi)
{
    fts_rank *r = store_rank(LITE(m)->st);
    sqlite3_stmt *st = fts_stmt(r, "SELECT mnemo_collect(chunks_fts) FROM chunks_fts "
                                   "WHERE chunks_fts MATCH ?1 AND rowid >= ?2 AND rowid < ?3");
    if (!st)
        return sql_fail(m, "prepare");
    sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, lo);
    sqlite3_bind_int64(st, 3, hi);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return r->hits.nomem ? core_error(m, MNEMO_NOMEM, "out of memory")
                             : lite_index_fail(m, rc, "keyword query");
    return MNEMO_OK;
}

/* The chunk ids of corpus CP above range R's mark: [*LO, *HI), 0 when
 * none (FTS5 would still read the whole lists of an OR query to find no
 * row there). */
static int tail_of(mnemo *m, const post_leg *pl, const corpus *cp, int r, int64_t *lo,
                   int64_t *hi)
{
    static const int64_t rlo[KWPOST_RANGES] = {0, STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE};
    static const int64_t rhi[KWPOST_RANGES] = {STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE,
                                               INT64_MAX};
    int64_t a = pl->mark[r] + 1, b = rhi[r];
    if (a < rlo[r])
        a = rlo[r];
    if (a < cp->lo)
        a = cp->lo;
    if (b > cp->hi)
        b = cp->hi;
    *lo = a;
    *hi = b;
    if (a >= b)
        return 0;
    sqlite3_stmt *st = fts_stmt(store_rank(LITE(m)->st),
                                "SELECT 1 FROM chunks WHERE id >= ?1 AND id < ?2 LIMIT 1");
    if (!st)
        return 1;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    int any = sqlite3_step(st) != SQLITE_DONE;
    sqlite3_reset(st);
    return any;
}

/* BM25 over the postings: the chunks above the marks through FTS5 (their
 * rows and counts in the hits), the rest by blockmax_run over the blocks;
 * the pool is the one content_leg() makes. MNEMO_NOTFOUND: the query or
 * the index is not for it (content_leg runs). */
static int postings_leg(mnemo *m, const query *q, const corpus *cp, topk *p, search_bm25 *bm,
                        post_leg *pl)
{
    char terms[BM25_MAX_PHRASES][TOK_MAX_BYTES + 1];
    sqlite3 *db = store_db(LITE(m)->st);
    if (!lite_single_terms(m, q, terms) || kwpost_marks(db, "main", pl->mark) != MNEMO_OK)
        return MNEMO_NOTFOUND;
    const char *tv[BM25_MAX_PHRASES];
    int64_t df[BM25_MAX_PHRASES];
    for (int i = 0; i < q->nphrase; i++)
        tv[i] = terms[i];
    int rc = kwread_load(&pl->kr, db, "main", tv, q->nphrase, cp->lo, cp->hi, df);
    pl->on = 1;
    if (rc == MNEMO_CORRUPT)
        return core_error(m, MNEMO_CORRUPT, "the keyword index is damaged (its postings); run "
                                            "`mnemo index --force` to rebuild it");
    if (rc)
        return rc == MNEMO_NOMEM ? rc : sql_fail(m, "reading the postings");
    fts_rank *r = store_rank(LITE(m)->st);
    fts_rank_reset(r, q->nphrase);
    for (int k = 0; k < KWPOST_RANGES; k++) {
        int64_t lo, hi;
        if (tail_of(m, pl, cp, k, &lo, &hi) && (rc = tail_rows(m, q, lo, hi)))
            return rc;
    }
    bm25_hits *h = &r->hits;
    int s = fts_totals(db, "main.chunks_fts_data", &h->ndocs, &h->avgdl);
    if (s != SQLITE_OK)
        return lite_index_fail(m, s, "reading the keyword statistics");
    h->stats = 1;
    for (int k = 0; k < q->nphrase; k++)
        h->df[k] += df[k];
    query_weights(q, pl->w);
    bm25_idfs(h, pl->idf);
    memcpy(bm->idf, pl->idf, sizeof pl->idf);
    bm->k1 = cfg_num(m->cfg, CFG_BM25_K1);
    bm->b = cfg_num(m->cfg, CFG_BM25_B);
    bm->avgdl = h->avgdl;
    for (size_t i = 0; i < h->n; i++)
        if ((h->mask[i] & q->required) == q->required)
            topk_offer(p, bm25_score(h, i, pl->w, pl->idf, bm->k1, bm->b), h->id[i]);
    int nt = 0;
    for (int k = 0; k < q->nphrase; k++) {
        kwread_term *kt = &pl->kr.t[k];
        if (!kt->nblocks)
            continue;
        if (!(kt->ub = malloc(kt->nblocks * sizeof *kt->ub)))
            return MNEMO_NOMEM;
        for (size_t b = 0; b < kt->nblocks; b++)
            kt->ub[b] = blockmax_bound_share(&kt->bound[b], pl->w[k], pl->idf[k], bm->k1, bm->b,
                                             h->avgdl);
        pl->t[nt++] = (blockmax_term){.phrase = k, .list = k, .nblocks = kt->nblocks, .first = kt->first,
                                      .last = kt->last, .ub = kt->ub};
    }
    pl->bq = (blockmax_query){.t = pl->t,
                              .nt = nt,
                              .np = q->nphrase,
                              .w = pl->w,
                              .idf = pl->idf,
                              .k1 = bm->k1,
                              .b = bm->b,
                              .avgdl = h->avgdl,
                              .required = q->required,
                              .read = kwread_block,
                              .ud = &pl->kr};
    if (pl->kr.ngone)
        pl->bq.gone = kwread_gone;
    if ((rc = blockmax_run(&pl->bq, p)) == MNEMO_CORRUPT)
        return core_error(m, MNEMO_CORRUPT, "the keyword index is damaged (its postings); run "
                                            "`mnemo index --force` to rebuild it");
    if (rc)
        return rc == MNEMO_NOMEM ? rc : sql_fail(m, "reading the postings");
    double sum = 0;
    for (int i = 0; i < q->npositive && i < h->np; i++)
        sum += bm->idf[i];
    bm->sum_idf = sum > 0 ? sum : 1.0;
    return MNEMO_OK;
}

/* Adds the file of row ST (columns: file id, its first chunk, NULL without
 * chunks, its number of chunks) with FRAC and TIER, counting its chunks
 * (1 at least) in *NCHUNKS. */
static int add_hit(file_hits *f, sqlite3_stmt *st, double frac, int tier, int64_t *nchunks)
{
    int64_t n = sqlite3_column_int64(st, 3);
    *nchunks += n > 1 ? n : 1;
    return search_file_hit_first(f, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                 frac, tier);
}

/* The file-name queries. Of each file only its first chunk: the candidates
 * among its chunks are added once the other legs ran (cand_files). */
static int file_queries(mnemo *m, const query *q, const corpus *cp, file_hits *f,
                        int64_t *nchunks)
{
    fts_rank *r = store_rank(LITE(m)->st);
    sqlite3_stmt *st = NULL;
    /* Exact: the query names a file by path, base name or stem. */
    if (q->filename[0]) {
        st = fts_stmt(r, "SELECT x.id, (SELECT id FROM chunks WHERE file_id = x.id ORDER BY "
                         "seq LIMIT 1), x.tier, x.nchunks FROM (SELECT id, nchunks, CASE WHEN "
                         "path_lc = ?1 THEN 3 WHEN name_lc = ?1 THEN 2 ELSE 1 END AS tier "
                         "FROM files WHERE status = 0 AND "
                         "(path_lc = ?1 OR name_lc = ?1 OR stem_lc = ?1) AND "
                         "(?2 IS NULL OR source = ?2) LIMIT 20) x");
        if (!st)
            return sql_fail(m, "prepare");
        sqlite3_bind_text(st, 1, q->filename, -1, SQLITE_STATIC);
        if (cp->source)
            sqlite3_bind_text(st, 2, cp->source, -1, SQLITE_STATIC);
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW)
            if (add_hit(f, st, 1.0, sqlite3_column_int(st, 2), nchunks)) {
                sqlite3_reset(st);
                return MNEMO_NOMEM;
            }
        sqlite3_reset(st);
        if (s != SQLITE_DONE)
            return lite_index_fail(m, s, "searching file names");
    }
    /* Partial: query terms among the path's words, in the first
     * PATH_ROWS_MAX files by id (FTS5's own order: no sort). */
    int nterms = q->npositive;
    if (!q->match || nterms == 0)
        return MNEMO_OK;
    /* The files' state from their small index (files_state) where the
     * index has it: thousands of matched paths then read a few hundred
     * pages, not each file's row. */
#define FILE_LEG(files)                                                                        \
    "SELECT files.id, (SELECT id FROM chunks WHERE file_id = files.id "                        \
    "ORDER BY seq LIMIT 1), mnemo_mask(files_fts), files.nchunks FROM files_fts "              \
    "JOIN " files " ON files.id = files_fts.rowid "                                           \
    "WHERE files_fts MATCH ?1 AND files.status = 0 AND "                                       \
    "(?2 IS NULL OR files.source = ?2) ORDER BY files_fts.rowid LIMIT ?3"
    st = fts_stmt(r, FILE_LEG("files INDEXED BY files_state"));
    if (!st)
        st = fts_stmt(r, FILE_LEG("files"));
#undef FILE_LEG
    if (!st)
        return sql_fail(m, "prepare");
    sqlite3_bind_text(st, 1, q->match, -1, SQLITE_STATIC);
    if (cp->source)
        sqlite3_bind_text(st, 2, cp->source, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, PATH_ROWS_MAX);
    uint64_t positive = nterms >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << nterms) - 1);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t mask = (uint64_t)sqlite3_column_int64(st, 2);
        double frac = (double)__builtin_popcountll(mask & positive) / nterms;
        if (add_hit(f, st, frac, 0, nchunks)) {
            sqlite3_reset(st);
            return MNEMO_NOMEM;
        }
    }
    sqlite3_reset(st);
    return s == SQLITE_DONE ? MNEMO_OK : lite_index_fail(m, s, "searching file names");
}

/* The files the query names or whose paths hold query terms, with their
 * first chunks, sorted by file; *NCHUNKS: about how many chunks they have. */
static int file_legs(mnemo *m, const query *q, const corpus *cp, file_hits *f, int64_t *nchunks)
{
    int rc = file_queries(m, q, cp, f, nchunks);
    if (!rc)
        search_file_hits_finish(f);
    return rc;
}

/* ----------------------------------------------------------------------
 * The vector leg
 * -------------------------------------------------------------------- */

typedef struct vleg {
    int ran, started, explicit_;
    char name[32];
    embed_job job; /* the query's vector, made while the keyword leg runs */
    embedder *e;
    vec_file *vf;
    float *qv;
    vec_match *matches;
    size_t nmatches;
    calib_null null; /* the query's cosines: every vector's, the fixed texts' */
    int mran;        /* the media leg ran: its matches follow the text's */
    calib_null mnull; /* the query's cosines with the media, the media's baseline */
} vleg;

static void vleg_cleanup(vleg *v)
{
    if (v->started)
        embed_drop(&v->job);
    v->started = 0;
    free(v->qv); /* v->vf is the handle's, kept across searches */
    free(v->matches);
}

/* Provider "auto" found nothing, yet the index holds vectors (of a setup
 * given with --set at index time, say): a keyword search says so in
 * res->fallback, with the settings that would use them. Provider "none"
 * is keyword on purpose and says nothing. */
static int unused_vectors(mnemo *m, mnemo_results *res)
{
    if (strcmp(cfg_str(m->cfg, CFG_PROVIDER), "auto") != 0)
        return MNEMO_OK;
    char *stored = NULL;
    if (store_meta_get(LITE(m)->st, "vec_identity", &stored) || !stored || !*stored) {
        free(stored);
        return MNEMO_OK;
    }
    sqlite3_stmt *st = NULL;
    int any = sqlite3_prepare_v2(store_db(LITE(m)->st), "SELECT 1 FROM chunk_vectors LIMIT 1",
                                 -1, &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    int rc = MNEMO_OK;
    if (any) {
        char from[32];
        buf why;
        buf_init(&why, 4096);
        provider_unused_hint(stored, from, &why);
        rc = buf_err(&why) ? MNEMO_NOMEM : results_set_fallback(res, from, why.data);
        buf_cleanup(&why);
    }
    free(stored);
    return rc;
}

/* Starts embedding the query (QTEXT stays alive until vector_leg) so that
 * a model or a provider's round trip works while the keyword leg runs. A
 * provider that cannot open is reported by vector_leg. */
static void vector_start(mnemo *m, const char *qtext, vleg *v)
{
    provider_resolve(m, v->name, &v->explicit_);
    if (strcmp(v->name, "none") == 0)
        return;
    buf err;
    buf_init(&err, 8192);
    if (provider_embedder(m, v->name, &v->e, &err) == MNEMO_OK) {
        embed_start(&v->job, v->e, EMBED_QUERY, qtext, strlen(qtext));
        v->started = 1;
    }
    buf_cleanup(&err);
}

/* Runs the vector leg. Returns an error only for a named provider that
 * fails; otherwise a failure becomes res->fallback and v->ran stays 0. */
static int vector_leg(mnemo *m, const char *qtext, const corpus *cp, int media, size_t k,
                      mnemo_results *res, vleg *v)
{
    const char *name = v->name;
    int explicit_ = v->explicit_;
    if (strcmp(name, "none") == 0)
        return unused_vectors(m, res);
    buf err;
    buf_init(&err, 8192);
    int rc;
    if (v->started) {
        v->started = 0;
        rc = embed_finish(&v->job, &v->qv, &err);
    } else {
        rc = provider_embedder(m, name, &v->e, &err); /* fails again, saying why */
        size_t qlen = strlen(qtext);
        if (!rc)
            rc = embed_texts(v->e, EMBED_QUERY, &qtext, &qlen, 1, &v->qv, &err);
    }
    if (rc) {
        rc = search_vector_failed(m, res, name, explicit_, rc, &err);
        buf_cleanup(&err);
        return rc;
    }
    /* Vectors of another provider, model or chunking are stale. */
    char ident[1024], *stored = NULL;
    provider_chunk_identity(m, v->e, ident, sizeof ident);
    store_meta_get(LITE(m)->st, "vec_identity", &stored);
    if (!stored || strcmp(stored, ident) != 0) {
        char reason[1200];
        snprintf(reason, sizeof reason,
                 stored && *stored ? "the vectors were built with another embedding setup "
                                     "(%s); run: mnemo index"
                                   : "no vectors yet%s; run: mnemo index",
                 stored ? stored : "");
        free(stored);
        buf_cleanup(&err);
        return results_set_fallback(res, name, reason);
    }
    free(stored);
    int quant = strcmp(cfg_str(m->cfg, CFG_VECTOR_QUANTIZATION), "int8") == 0;
    rc = vecfile_get(LITE(m)->st, m->db_path, quant, &LITE(m)->vf, &err);
    v->vf = LITE(m)->vf;
    if (rc || vecfile_dims(v->vf) != embed_dims(v->e)) {
        const char *why = rc == MNEMO_NOTFOUND ? "no vectors yet; run: mnemo index"
                          : rc ? (err.len ? err.data : errcode_text(rc))
                               : "vector dimensions differ; run: mnemo index";
        rc = results_set_fallback(res, name, why);
        buf_cleanup(&err);
        return rc;
    }
    buf_cleanup(&err);
    v->matches = malloc(2 * k * sizeof *v->matches);
    if (!v->matches)
        return MNEMO_NOMEM;
    if (media <= 0) {
        v->nmatches = vecfile_search(v->vf, v->qv, cp->lo, cp->hi, k, quant, v->matches,
                                     &v->null.mean, &v->null.sd);
        v->null.n = vecfile_count(v->vf) - vecfile_media_count(v->vf);
        if ((rc = vectors_calib(m, LITE(m)->st, &LITE(m)->calib, v->e, v->qv, &v->null)))
            return rc;
    }
    /* Images and audio: a leg of their own, measured against themselves
     * and the fixed texts' cosines with them. */
    size_t nm = 0;
    if (media >= 0 && cp->hi != 0 && (cp->source == NULL || !strcmp(cp->source, "memory")))
        nm = vecfile_search(v->vf, v->qv, STORE_MEDIA_ID_BASE, INT64_MAX, k, quant,
                            v->matches + v->nmatches, &v->mnull.mean, &v->mnull.sd);
    if (nm) {
        if ((rc = vectors_media_calib(m, LITE(m)->st, &LITE(m)->calib, v->e, v->qv, v->vf,
                                      &v->mnull)))
            return rc;
        v->mnull.n = vecfile_media_count(v->vf);
        v->nmatches += nm;
        v->mran = 1;
    }
    v->ran = 1;
    free(res->mode);
    res->mode = strdup("hybrid");
    res->provider = strdup(embed_provider(v->e));
    res->model = strdup(embed_model(v->e));
    return res->mode && res->provider && res->model ? MNEMO_OK : MNEMO_NOMEM;
}

/* BM25 of CHUNK_ID from the rows the keyword leg collected (they arrive in
 * rowid order), or from the postings, 0 when it did not match. */
static double bm25_of(mnemo *m, const query *q, post_leg *pl, int64_t chunk_id)
{
    fts_rank *r = store_rank(LITE(m)->st);
    if (pl->on && chunk_id <= pl->mark[kwpost_range(chunk_id)]) {
        double score = 0;
        return blockmax_score_of(&pl->bq, chunk_id, &score) ? 0 : score;
    }
    const bm25_hits *h = &r->hits;
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->id[mid] < chunk_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= h->n || h->id[lo] != chunk_id || (h->mask[lo] & q->required) != q->required)
        return 0;
    double w[BM25_MAX_PHRASES], idf[BM25_MAX_PHRASES];
    query_weights(q, w);
    bm25_idfs(&r->hits, idf);
    return bm25_score(&r->hits, lo, w, idf, cfg_num(m->cfg, CFG_BM25_K1), cfg_num(m->cfg, CFG_BM25_B));
}


/* ----------------------------------------------------------------------
 * A search's state (search_legs.ud), and the SQLite index behind search_io
 * -------------------------------------------------------------------- */

typedef struct lite_io {
    mnemo *m;
    const query *q;
    int txn;            /* the search's read transaction was begun */
    topk pool;          /* the BM25 leg's best rows */
    post_leg pl;        /* the BM25 leg over the postings */
    cand *kw;           /* them, for the engine */
    int64_t *vids;      /* the vector leg's candidates */
    int64_t fchunks;    /* the chunks of the file-name legs' files, about */
    vleg vl;
    sqlite3_stmt *factors, *row;
} lite_io;

/* Adds the file of candidate CHUNK_ID to F's chunks when it is one of F's
 * files (ST: the statement reading a chunk's file). */
static int cand_file(mnemo *m, sqlite3_stmt *st, file_hits *f, int64_t chunk_id)
{
    sqlite3_bind_int64(st, 1, chunk_id);
    int s = sqlite3_step(st);
    int64_t file_id = s == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        return lite_index_fail(m, s, "reading a chunk's file");
    return file_id ? search_file_hits_chunk(f, chunk_id, file_id) : MNEMO_OK;
}

/* Adds every chunk of FILE_ID, one of F's files, to F's chunks (ST: the
 * statement reading a file's chunks). */
static int file_chunks(mnemo *m, sqlite3_stmt *st, file_hits *f, int64_t file_id)
{
    sqlite3_bind_int64(st, 1, file_id);
    int s = SQLITE_DONE, rc = MNEMO_OK;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW)
        rc = search_file_hits_chunk(f, sqlite3_column_int64(st, 0), file_id);
    sqlite3_reset(st);
    if (!rc && s != SQLITE_DONE)
        return lite_index_fail(m, s, "reading a file's chunks");
    return rc;
}

/* The last step of the file-name legs, once the other legs ran: the
 * candidates (X's keyword pool and vector matches) in F's files join F's
 * chunks, so that the ranking finds the files of all of them. Each
 * candidate's file is looked up, or when the files have fewer chunks than
 * there are candidates (a few files matched), all their chunks are read. */
static int cand_files(mnemo *m, lite_io *x, file_hits *f)
{
    if (!f->n)
        return MNEMO_OK;
    int whole = x->fchunks <= (int64_t)(x->pool.n + x->vl.nmatches);
    sqlite3_stmt *st = fts_stmt(store_rank(LITE(m)->st),
                                whole ? "SELECT id FROM chunks WHERE file_id = ?1"
                                      : "SELECT file_id FROM chunks WHERE id = ?1");
    if (!st)
        return sql_fail(m, "prepare");
    int rc = MNEMO_OK;
    for (size_t i = 0; whole && !rc && i < f->n; i++)
        rc = file_chunks(m, st, f, f->v[i].file_id);
    for (size_t i = 0; !whole && !rc && i < x->pool.n; i++)
        rc = cand_file(m, st, f, x->pool.v[i].id);
    for (size_t i = 0; !whole && !rc && i < x->vl.nmatches; i++)
        rc = cand_file(m, st, f, x->vl.matches[i].chunk_id);
    if (!rc)
        search_file_hits_finish(f);
    return rc;
}

static double lite_bm25(void *ud, int64_t chunk_id)
{
    lite_io *x = ud;
    return bm25_of(x->m, x->q, &x->pl, chunk_id);
}

static int lite_cosines(void *ud, int64_t chunk_id, float *cs, int max)
{
    lite_io *x = ud;
    return vecfile_cosines(x->vl.vf, chunk_id, x->vl.qv, cs, max);
}

/* The date and importance of CHUNK_ID, kept in the handle across searches
 * until the index changes; returns 0 when the chunk is gone. */
static int lite_factors(void *ud, int64_t chunk_id, double *when, int *importance)
{
    lite_io *x = ud;
    fts_rank *r = store_rank(LITE(x->m)->st);
    const fts_factor *f = fts_factor_get(r, chunk_id);
    if (f) {
        *when = f->when;
        *importance = f->importance;
        return 1;
    }
    sqlite3_stmt *st = x->factors;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, chunk_id);
    int s = sqlite3_step(st);
    if (s != SQLITE_ROW)
        return s == SQLITE_DONE ? 0 : -lite_index_fail(x->m, s, "reading a chunk");
    const char *path = (const char *)sqlite3_column_text(st, 1);
    const char *source = (const char *)sqlite3_column_text(st, 2);
    if (source && strcmp(source, "sessions") == 0) {
        /* A transcript's time is its newest message, else its mtime. */
        *when = sqlite3_column_double(st, 4);
        if (*when <= 0)
            *when = (double)sqlite3_column_int64(st, 3) / 1e9;
    } else {
        *when = rank_path_date(path ? path : "");
    }
    *importance = sqlite3_column_int(st, 0);
    fts_factor_put(r, chunk_id, *when, *importance);
    return 1;
}

static int lite_row(void *ud, int64_t chunk_id, search_row *out)
{
    lite_io *x = ud;
    sqlite3_stmt *row = x->row;
    sqlite3_reset(row);
    sqlite3_bind_int64(row, 1, chunk_id);
    int s = sqlite3_step(row);
    if (s != SQLITE_ROW)
        return s == SQLITE_DONE ? MNEMO_NOTFOUND : lite_index_fail(x->m, s, "reading a chunk");
    out->text = (const char *)sqlite3_column_text(row, 0);
    out->len = (size_t)sqlite3_column_bytes(row, 0);
    out->first_line = sqlite3_column_int(row, 1);
    out->path = (const char *)sqlite3_column_text(row, 2);
    out->map = sqlite3_column_blob(row, 3);
    out->nmap = (size_t)sqlite3_column_bytes(row, 3) / sizeof(uint32_t);
    out->source = (const char *)sqlite3_column_text(row, 4);
    out->next = (const char *)sqlite3_column_text(row, 5);
    out->next_len = (size_t)sqlite3_column_bytes(row, 5);
    out->next_first_line = sqlite3_column_int(row, 6);
    out->mime = (const char *)sqlite3_column_text(row, 7);
    return MNEMO_OK;
}

/* The legs step (search_store): BM25 and the file names while the query
 * is embedded, then the vectors and the candidates' files, in one read
 * transaction. */
static int lite_legs(mnemo *m, search_legs *l)
{
    lite_io *x = calloc(1, sizeof *x);
    if (!x)
        return MNEMO_NOMEM;
    l->ud = x;
    x->m = m;
    x->q = l->q;
    /* One read transaction for the whole search: one snapshot for every
     * leg, and one set of locks instead of one per statement. */
    sqlite3_stmt *begin = fts_stmt(store_rank(LITE(m)->st), "BEGIN");
    if (sqlite3_get_autocommit(store_db(LITE(m)->st)) && begin && sqlite3_step(begin) == SQLITE_DONE)
        x->txn = 1;
    /* What the handle keeps across searches goes if the index changed. */
    fts_rank_check(store_rank(LITE(m)->st));
    int rc = topk_init(&x->pool, l->pool);
    if (rc)
        return rc;
    corpus cp = corpus_of(l->corpus, l->media);
    l->media_lo = STORE_MEDIA_ID_BASE;
    vector_start(m, l->text, &x->vl);
    if (l->q->match) {
        rc = postings_leg(m, l->q, &cp, &x->pool, &l->bm, &x->pl);
        if (rc == MNEMO_NOTFOUND) {
            kwread_cleanup(&x->pl.kr);
            x->pl.on = 0;
            rc = content_leg(m, l->q, &cp, &x->pool, &l->bm);
        }
        if (rc)
            return rc;
    }
    if ((rc = file_legs(m, l->q, &cp, &l->fh, &x->fchunks)))
        return rc;
    l->res->timing.keyword_ms = search_lap(l->lap);
    corpus tc = corpus_of(l->corpus, 0);
    if ((rc = vector_leg(m, l->text, &tc, l->media, l->pool, l->res, &x->vl)))
        return rc;
    l->res->timing.vector_ms = search_lap(l->lap);
    x->kw = malloc((x->pool.n + 1) * sizeof *x->kw);
    x->vids = malloc((x->vl.nmatches + 1) * sizeof *x->vids);
    if (!x->kw || !x->vids)
        return MNEMO_NOMEM;
    for (size_t i = 0; i < x->pool.n; i++)
        x->kw[i] = (cand){.chunk_id = x->pool.v[i].id, .raw = x->pool.v[i].score, .vec = -1};
    for (size_t i = 0; i < x->vl.nmatches; i++)
        x->vids[i] = x->vl.matches[i].chunk_id;
    /* The file-name legs' last step, counted with them. */
    if ((rc = cand_files(m, x, &l->fh)))
        return rc;
    l->res->timing.keyword_ms += search_lap(l->lap);
    l->kw = x->kw;
    l->nkw = x->pool.n;
    l->vids = x->vids;
    l->nvids = x->vl.nmatches;
    l->vs = (search_vstats){x->vl.ran, x->vl.null};
    l->mvs = (search_vstats){x->vl.mran, x->vl.mnull};
    return MNEMO_OK;
}

/* The io step: the candidates' rows and factors are read one by one, with
 * statements the handle keeps. */
static int lite_io_of(mnemo *m, search_legs *l)
{
    lite_io *x = l->ud;
    fts_rank *fr = store_rank(LITE(m)->st);
    /* With the next chunk of the file when it shares lines with this one. */
    x->row = fts_stmt(fr, "SELECT c.text, c.start_line, f.path, c.line_map, f.source, n.text, "
                          "n.start_line, f.mime FROM chunks c JOIN files f ON f.id = c.file_id "
                          "LEFT JOIN chunks n ON n.file_id = c.file_id AND n.seq = c.seq + 1 "
                          "AND n.start_line <= c.end_line WHERE c.id = ?1");
    x->factors = fts_stmt(fr, "SELECT c.importance, f.path, f.source, f.mtime_ns, f.time "
                              "FROM chunks c JOIN files f ON f.id = c.file_id "
                              "WHERE c.id = ?1");
    if (!x->row || !x->factors)
        return sql_fail(m, "prepare");
    l->io = (search_io){x, lite_bm25, lite_cosines, lite_factors, NULL, lite_row};
    return MNEMO_OK;
}

/* The end step: the statements reset and the read transaction committed. */
static void lite_end(mnemo *m, search_legs *l)
{
    lite_io *x = l->ud;
    if (LITE(m)->st) {
        fts_stmt_reset_all(store_rank(LITE(m)->st));
        sqlite3_stmt *commit = x && x->txn ? fts_stmt(store_rank(LITE(m)->st), "COMMIT") : NULL;
        if (commit)
            sqlite3_step(commit);
        if (commit)
            sqlite3_reset(commit);
    }
    if (x) {
        vleg_cleanup(&x->vl);
        topk_cleanup(&x->pool);
        kwread_cleanup(&x->pl.kr);
        free(x->kw);
        free(x->vids);
        free(x);
    }
    l->ud = NULL;
}

const search_store lite_notes = {lite_legs, lite_io_of, lite_end};
