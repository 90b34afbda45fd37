/*
 * fts.c - FTS5 tokenizer and BM25 ranking function (see fts.h).
 */
#include "store/sqlite/fts.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "mnemo.h"
#include "text/tok.h"
#include "util/varint.h"

/* ----------------------------------------------------------------------
 * Tokenizer: tokenize='mnemo <language> [nostop]'
 * -------------------------------------------------------------------- */

typedef struct fts_tok {
    tok *t;
    fts_feed *feed;
} fts_tok;

static int tok_create(void *ud, const char **argv, int argc, Fts5Tokenizer **out)
{
    const char *lang = argc > 0 ? argv[0] : "english";
    fts_tok *ft = calloc(1, sizeof *ft);
    if (!ft)
        return SQLITE_NOMEM;
    ft->feed = ud;
    int rc = tok_new(lang, 0, &ft->t);
    if (rc) {
        free(ft);
        return rc == MNEMO_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    }
    *out = (Fts5Tokenizer *)ft;
    return SQLITE_OK;
}

static void tok_delete(Fts5Tokenizer *p)
{
    fts_tok *ft = (fts_tok *)p;
    if (ft) {
        tok_free(ft->t);
        free(ft);
    }
}

typedef struct emit_ctx {
    void *fts_ctx;
    int (*xToken)(void *, int, const char *, int, int, int);
    int query;
} emit_ctx;

static int emit(void *ud, int flags, const char *token, int len, int start, int end)
{
    emit_ctx *e = ud;
    if (e->query && (flags & TOKF_PART))
        return 0; /* queries name identifiers whole; the parser adds parts */
    int tflags = (flags & TOKF_COLOCATED) ? FTS5_TOKEN_COLOCATED : 0;
    return e->xToken(e->fts_ctx, tflags, token, len, start, end);
}

static int replay(const fts_feed *f, void *ctx,
                  int (*xToken)(void *, int, const char *, int, int, int))
{
    const char *p = f->toks, *end = f->toks + f->toks_len;
    tok_pre t;
    while (tok_pre_next(&p, end, &t)) {
        int rc = xToken(ctx, t.colocated ? FTS5_TOKEN_COLOCATED : 0, t.token, t.len, t.start,
                        t.end);
        if (rc)
            return rc;
    }
    return SQLITE_OK;
}

static int tok_tokenize(Fts5Tokenizer *p, void *ctx, int flags, const char *text, int n,
                        int (*xToken)(void *, int, const char *, int, int, int))
{
    fts_tok *ft = (fts_tok *)p;
    const fts_feed *f = ft->feed;
    if (f && f->toks && flags == FTS5_TOKENIZE_DOCUMENT && n >= 0 && f->len == (size_t)n &&
        (f->text == text || memcmp(f->text, text, (size_t)n) == 0))
        return replay(f, ctx, xToken);
    emit_ctx e = {ctx, xToken, (flags & FTS5_TOKENIZE_QUERY) != 0};
    int rc = tok_run(ft->t, text, (size_t)(n < 0 ? 0 : n), 0, emit, &e);
    if (rc == MNEMO_NOMEM)
        return SQLITE_NOMEM;
    return rc;
}

/* ----------------------------------------------------------------------
 * Ranking support.
 *
 * mnemo_collect(chunks_fts) records each matching row; the caller scores
 * them afterwards. Document frequencies are counted on the fly from the
 * rows an OR query returns, instead of one xQueryPhrase() pass per phrase,
 * which would read every doclist a second time. (With excluded terms, rows
 * removed by NOT do not count; IDF is then very slightly high.)
 *
 * Row lengths: xColumnSize() costs one b-tree seek per row, which was most
 * of the cost of ranking a query that matches thousands of chunks. Lengths
 * are read instead from FTS5's own length table (chunks_fts_docsize: one
 * varint per column) FTS_DL_BLOCK rowids at a time, once a query needs a
 * third row of the same block (isolated rows are still sought with
 * xColumnSize()), and the blocks are kept for later queries until the
 * index changes: another connection committed (PRAGMA data_version) or
 * this one wrote (sqlite3_total_changes64()). A daemon thus reads each
 * length once, not once per query. The search's ranking factors per chunk
 * (fts_factor_get) are kept and dropped the same way.
 * -------------------------------------------------------------------- */

#define DL_LOAD_AFTER 3 /* rows of a block sought before the block is read */

void fts_rank_reset(fts_rank *r, int nphrase)
{
    bm25_hits *h = &r->hits;
    h->n = 0;
    h->np = nphrase < 0 ? 0 : nphrase > BM25_MAX_PHRASES ? BM25_MAX_PHRASES : nphrase;
    memset(h->df, 0, sizeof h->df);
    h->stats = 0;
    h->nomem = 0;
    r->nextra = 0;
    r->checked = 0; /* the index may have changed since the last query */
    r->miss_block = -1;
    r->miss_count = 0;
}

/* Forgets what is kept across queries. */
static void kept_drop(fts_rank *r)
{
    for (size_t i = 0; i < r->nblocks; i++)
        free(r->blocks[i]);
    r->nblocks = r->cur = 0;
    if (r->nfactors)
        memset(r->factors, 0, r->cap_factors * sizeof *r->factors);
    r->nfactors = 0;
}

void fts_rank_cleanup(fts_rank *r)
{
    sqlite3_finalize(r->docsize);
    sqlite3_finalize(r->version);
    r->docsize = r->version = NULL;
    for (int i = 0; i < FTS_STMTS; i++) {
        sqlite3_finalize(r->stmt[i]);
        r->stmt[i] = NULL;
        r->stmt_sql[i] = NULL;
    }
    for (int i = 0; i < BM25_MAX_PHRASES; i++) {
        free(r->plist[i].id);
        free(r->plist[i].dl);
        free(r->plist[i].tf);
    }
    memset(r->plist, 0, sizeof r->plist);
    kept_drop(r);
    free(r->blocks);
    r->blocks = NULL;
    r->cap_blocks = 0;
    free(r->factors);
    r->factors = NULL;
    r->cap_factors = 0;
    free(r->extra);
    r->extra = NULL;
    r->cap_extra = 0;
    bm25_hits_cleanup(&r->hits);
    memset(&r->hits, 0, sizeof r->hits);
}

sqlite3_stmt *fts_stmt(fts_rank *r, const char *sql)
{
    int i = 0;
    for (; i < FTS_STMTS && r->stmt_sql[i]; i++)
        if (r->stmt_sql[i] == sql || strcmp(r->stmt_sql[i], sql) == 0) {
            sqlite3_reset(r->stmt[i]);
            sqlite3_clear_bindings(r->stmt[i]);
            return r->stmt[i];
        }
    if (i == FTS_STMTS) { /* full: give up the last slot */
        i = FTS_STMTS - 1;
        sqlite3_finalize(r->stmt[i]);
        r->stmt[i] = NULL;
        r->stmt_sql[i] = NULL;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        return NULL;
    r->stmt_sql[i] = sql;
    r->stmt[i] = st;
    return st;
}

void fts_stmt_reset_all(fts_rank *r)
{
    for (int i = 0; i < FTS_STMTS && r->stmt[i]; i++)
        sqlite3_reset(r->stmt[i]);
}

void fts_rank_check(fts_rank *r)
{
    int64_t version = -1;
    if (r->version || sqlite3_prepare_v3(r->db, "PRAGMA data_version", -1,
                                         SQLITE_PREPARE_PERSISTENT, &r->version,
                                         NULL) == SQLITE_OK) {
        if (sqlite3_step(r->version) == SQLITE_ROW)
            version = sqlite3_column_int64(r->version, 0);
        sqlite3_reset(r->version);
    }
    int64_t changes = sqlite3_total_changes64(r->db);
    if (version < 0 || version != r->data_version || changes != r->changes)
        kept_drop(r);
    r->data_version = version;
    r->changes = changes;
    r->checked = 1;
}

static int decode_varint(const unsigned char *p, int n, int *out)
{
    uint32_t v = 0;
    for (int i = 0; i < n && i < 5; i++) {
        v = (v << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *out = (int)v;
            return 1;
        }
    }
    return 0;
}

/* Block NO, or NULL with *AT where it would go. */
static fts_dl_block *find_block(fts_rank *r, int64_t no, size_t *at)
{
    if (r->cur < r->nblocks && r->blocks[r->cur]->no == no)
        return r->blocks[r->cur];
    size_t lo = 0, hi = r->nblocks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->blocks[mid]->no < no)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    if (lo < r->nblocks && r->blocks[lo]->no == no) {
        r->cur = lo;
        return r->blocks[lo];
    }
    return NULL;
}

static fts_dl_block *load_block(fts_rank *r, int64_t no, size_t at)
{
    if (!r->docsize) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT id, sz FROM %s WHERE id >= ?1 AND id < ?2",
                 r->docsize_table ? r->docsize_table : "chunks_fts_docsize");
        if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &r->docsize, NULL) !=
            SQLITE_OK)
            return NULL;
    }
    if (r->nblocks == r->cap_blocks) {
        size_t cap = r->cap_blocks ? r->cap_blocks * 2 : 64;
        fts_dl_block **v = realloc(r->blocks, cap * sizeof *v);
        if (!v)
            return NULL;
        r->blocks = v;
        r->cap_blocks = cap;
    }
    fts_dl_block *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->no = no;
    for (int i = 0; i < FTS_DL_BLOCK; i++)
        b->len[i] = -1;
    int64_t first = no * FTS_DL_BLOCK;
    sqlite3_bind_int64(r->docsize, 1, first);
    sqlite3_bind_int64(r->docsize, 2, first + FTS_DL_BLOCK);
    while (sqlite3_step(r->docsize) == SQLITE_ROW) {
        int len;
        int64_t id = sqlite3_column_int64(r->docsize, 0);
        const unsigned char *sz = sqlite3_column_blob(r->docsize, 1);
        if (sz && id >= first && id < first + FTS_DL_BLOCK &&
            decode_varint(sz, sqlite3_column_bytes(r->docsize, 1), &len))
            b->len[id - first] = len;
    }
    sqlite3_reset(r->docsize);
    memmove(r->blocks + at + 1, r->blocks + at, (r->nblocks - at) * sizeof *r->blocks);
    r->blocks[at] = b;
    r->nblocks++;
    r->cur = at;
    return b;
}

/* Length of row ID from the kept blocks; -1 when it must be sought. */
static int row_length(fts_rank *r, int64_t id)
{
    if (id < 0)
        return -1;
    int64_t no = id / FTS_DL_BLOCK;
    size_t at = 0;
    fts_dl_block *b = r->cur < r->nblocks && r->blocks[r->cur]->no == no
                          ? r->blocks[r->cur]
                          : find_block(r, no, &at);
    if (!b) {
        if (no != r->miss_block) {
            r->miss_block = no;
            r->miss_count = 0;
        }
        if (++r->miss_count < DL_LOAD_AFTER || !(b = load_block(r, no, at)))
            return -1;
    }
    return b->len[id - no * FTS_DL_BLOCK];
}

int fts_totals(sqlite3 *db, const char *data_table, int64_t *ndocs, double *avgdl)
{
    sqlite3_stmt *st = NULL;
    *ndocs = 0;
    *avgdl = 1.0;
    char *sql = sqlite3_mprintf("SELECT block FROM %s WHERE id = 1", data_table);
    if (!sql)
        return SQLITE_NOMEM;
    int prc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (prc != SQLITE_OK)
        return sqlite3_errcode(db);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *p = sqlite3_column_blob(st, 0);
        const unsigned char *end = p + sqlite3_column_bytes(st, 0);
        uint64_t rows = 0, tokens = 0;
        int n = p ? varint_sqlite(p, end, &rows) : 0;
        if (p == end) {
            rc = SQLITE_OK; /* nothing written yet: FTS5 reads zeros */
        } else if (n && varint_sqlite(p + n, end, &tokens)) {
            *ndocs = (int64_t)rows;
            if (rows > 0 && tokens > 0)
                *avgdl = (double)(int64_t)tokens / (double)(int64_t)rows;
            rc = SQLITE_OK;
        } else {
            rc = SQLITE_CORRUPT;
        }
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK; /* an empty table */
    }
    sqlite3_finalize(st);
    return rc;
}

/* ----------------------------------------------------------------------
 * Kept ranking factors: a hash table by chunk id, linear probing.
 * -------------------------------------------------------------------- */

static size_t factor_slot(const fts_factor *v, size_t cap, int64_t id)
{
    size_t i = (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
    while (v[i].chunk_id && v[i].chunk_id != id)
        i = (i + 1) & (cap - 1);
    return i;
}

const fts_factor *fts_factor_get(const fts_rank *r, int64_t chunk_id)
{
    if (!r->nfactors || chunk_id <= 0)
        return NULL;
    const fts_factor *f = &r->factors[factor_slot(r->factors, r->cap_factors, chunk_id)];
    return f->chunk_id ? f : NULL;
}

void fts_factor_put(fts_rank *r, int64_t chunk_id, double when, int importance)
{
    if (chunk_id <= 0)
        return;
    if (2 * (r->nfactors + 1) > r->cap_factors) { /* keep it at most half full */
        size_t cap = r->cap_factors ? r->cap_factors * 2 : 1024;
        if (cap > FTS_FACTORS_MAX)
            return;
        fts_factor *v = calloc(cap, sizeof *v);
        if (!v)
            return;
        for (size_t i = 0; i < r->cap_factors; i++)
            if (r->factors[i].chunk_id)
                v[factor_slot(v, cap, r->factors[i].chunk_id)] = r->factors[i];
        free(r->factors);
        r->factors = v;
        r->cap_factors = cap;
    }
    fts_factor *f = &r->factors[factor_slot(r->factors, r->cap_factors, chunk_id)];
    if (!f->chunk_id)
        r->nfactors++;
    *f = (fts_factor){chunk_id, when, importance};
}

/* Term frequencies of the current row, by phrase, into TF; returns the mask. */
static uint64_t row_tf(const Fts5ExtensionApi *api, Fts5Context *fts, int np, int *tf, int *rc)
{
    memset(tf, 0, (size_t)np * sizeof *tf);
    int ninst = 0;
    uint64_t mask = 0;
    if ((*rc = api->xInstCount(fts, &ninst)) != SQLITE_OK)
        return 0;
    for (int i = 0; i < ninst; i++) {
        int phrase, col, off;
        if (api->xInst(fts, i, &phrase, &col, &off) == SQLITE_OK && phrase < np) {
            tf[phrase]++;
            mask |= (uint64_t)1 << phrase;
        }
    }
    return mask;
}

/* ndocs and avgdl, at the first row of a query. */
static int query_stats(const Fts5ExtensionApi *api, Fts5Context *fts, fts_rank *r)
{
    bm25_hits *h = &r->hits;
    if (h->stats)
        return SQLITE_OK;
    sqlite3_int64 ndocs = 0, ntokens = 0;
    int rc;
    if ((rc = api->xRowCount(fts, &ndocs)) != SQLITE_OK ||
        (rc = api->xColumnTotalSize(fts, 0, &ntokens)) != SQLITE_OK)
        return rc;
    h->ndocs = ndocs;
    h->avgdl = ndocs > 0 && ntokens > 0 ? (double)ntokens / (double)ndocs : 1.0;
    h->stats = 1;
    if (!r->checked)
        fts_rank_check(r);
    return SQLITE_OK;
}

/* Appends row ID of length DL with phrase frequencies TF to the hits. */
static int add_hit(bm25_hits *h, int64_t id, int dl, const int *tf)
{
    if (h->n == h->cap && bm25_hits_grow(h) != MNEMO_OK) {
        h->nomem = 1;
        return SQLITE_NOMEM;
    }
    size_t i = h->n++;
    uint64_t mask = 0;
    uint8_t *t = h->tf + i * BM25_MAX_PHRASES;
    for (int k = 0; k < h->np; k++) {
        t[k] = (uint8_t)(tf[k] > 255 ? 255 : tf[k]);
        h->df[k] += tf[k] > 0;
        if (tf[k] > 0)
            mask |= (uint64_t)1 << k;
    }
    h->id[i] = id;
    h->dl[i] = dl;
    h->mask[i] = mask;
    return SQLITE_OK;
}

/* Keeps the NVAL argument values VALS of hit I (fts_rank.extra). */
static int keep_extra(fts_rank *r, size_t i, int nval, sqlite3_value **vals)
{
    if (nval > FTS_EXTRA)
        nval = FTS_EXTRA;
    if (r->nextra == 0)
        r->nextra = nval;
    if ((i + 1) * FTS_EXTRA > r->cap_extra) {
        size_t cap = r->cap_extra ? r->cap_extra * 2 : 1024 * FTS_EXTRA;
        while (cap < (i + 1) * FTS_EXTRA)
            cap *= 2;
        double *v = realloc(r->extra, cap * sizeof *v);
        if (!v) {
            r->hits.nomem = 1;
            return SQLITE_NOMEM;
        }
        r->extra = v;
        r->cap_extra = cap;
    }
    double *e = r->extra + i * FTS_EXTRA;
    for (int k = 0; k < FTS_EXTRA; k++)
        e[k] = k < nval ? sqlite3_value_double(vals[k]) : 0;
    return SQLITE_OK;
}

static void collect_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                       int nval, sqlite3_value **vals)
{
    (void)nval;
    (void)vals;
    fts_rank *r = api->xUserData(fts);
    bm25_hits *h = &r->hits;
    int rc = query_stats(api, fts, r);
    int tf[BM25_MAX_PHRASES];
    if (rc == SQLITE_OK)
        row_tf(api, fts, h->np, tf, &rc);
    int dl = row_length(r, api->xRowid(fts));
    if (rc == SQLITE_OK && dl < 0)
        rc = api->xColumnSize(fts, 0, &dl);
    if (rc == SQLITE_OK)
        rc = add_hit(h, api->xRowid(fts), dl, tf);
    if (rc == SQLITE_OK && nval > 0)
        rc = keep_extra(r, h->n - 1, nval, vals);
    if (rc != SQLITE_OK)
        sqlite3_result_error_code(ctx, rc);
    else
        sqlite3_result_null(ctx);
}

/* mnemo_phrases(tbl, npositive, lo, hi): called for one row of the query,
 * gathers the same hits as mnemo_collect() called for each row of
 * the query with "rowid >= lo AND rowid < hi", where phrases npositive..
 * are the excluded ones (the query is "(positive OR ...) NOT (excluded OR
 * ...)"), but reads each phrase's rows with xQueryPhrase() and merges them
 * here: no SQL row, no instance array, per matching row. */
typedef struct phrase_ctx {
    fts_rank *r;
    fts_plist *l;
} phrase_ctx;

/* Room for one more row in L. */
static int plist_reserve(fts_plist *l)
{
    if (l->n < l->cap)
        return SQLITE_OK;
    size_t cap = l->cap ? l->cap * 2 : 1024;
    int64_t *id = realloc(l->id, cap * sizeof *id);
    if (id)
        l->id = id;
    int *dl = realloc(l->dl, cap * sizeof *dl);
    if (dl)
        l->dl = dl;
    uint8_t *tf = realloc(l->tf, cap);
    if (tf)
        l->tf = tf;
    if (!id || !dl || !tf)
        return SQLITE_NOMEM;
    l->cap = cap;
    return SQLITE_OK;
}

static int phrase_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ud)
{
    phrase_ctx *c = ud;
    fts_plist *l = c->l;
    int64_t id = api->xRowid(fts);
    if (id == INT64_MAX) /* the lists' end mark; chunk ids are far below */
        return SQLITE_RANGE;
    if (plist_reserve(l) != SQLITE_OK)
        return SQLITE_NOMEM;
    int tf = 0, col = -1, off, rc;
    Fts5PhraseIter it;
    for (rc = api->xPhraseFirst(fts, 0, &it, &col, &off); rc == SQLITE_OK && col >= 0;
         api->xPhraseNext(fts, &it, &col, &off))
        tf++;
    int dl = row_length(c->r, id);
    if (rc == SQLITE_OK && dl < 0)
        rc = api->xColumnSize(fts, 0, &dl);
    if (rc != SQLITE_OK)
        return rc;
    l->id[l->n] = id;
    l->dl[l->n] = dl;
    l->tf[l->n++] = (uint8_t)(tf > 255 ? 255 : tf);
    return SQLITE_OK;
}

/* Merges the phrase lists (each ending with rowid INT64_MAX) into the
 * hits, in rowid order: what add_hit() does row by row, with the lists'
 * heads and the counts in locals (stores through the byte array of
 * frequencies would otherwise make the compiler reload them) and no
 * branches on the ids (the heads interleave at random). */
static int merge_phrases(fts_rank *r, int npos, int64_t lo, int64_t hi)
{
    bm25_hits *h = &r->hits;
    int np = h->np;
    const int64_t *ids[BM25_MAX_PHRASES];
    const int *dls[BM25_MAX_PHRASES];
    const uint8_t *tfs[BM25_MAX_PHRASES];
    size_t at[BM25_MAX_PHRASES] = {0}, total = 0;
    int64_t df[BM25_MAX_PHRASES] = {0};
    for (int k = 0; k < np; k++) {
        ids[k] = r->plist[k].id;
        dls[k] = r->plist[k].dl;
        tfs[k] = r->plist[k].tf;
        total += k < npos ? r->plist[k].n : 0;
    }
    while (h->cap < h->n + total + 1)
        if (bm25_hits_grow(h) != MNEMO_OK)
            return SQLITE_NOMEM;
    size_t n = h->n;
    for (;;) {
        int64_t id = INT64_MAX;
        for (int k = 0; k < npos; k++) {
            int64_t head = ids[k][at[k]];
            id = head < id ? head : id;
        }
        if (id == INT64_MAX)
            break;
        int excluded = id < lo || id >= hi;
        for (int k = npos; k < np; k++) {
            while (ids[k][at[k]] < id)
                at[k]++;
            excluded |= ids[k][at[k]] == id;
        }
        uint8_t *t = h->tf + n * BM25_MAX_PHRASES;
        uint64_t mask = 0;
        int dl = 0, keep = !excluded;
        for (int k = 0; k < npos; k++) {
            size_t i = at[k];
            int here = ids[k][i] == id;
            uint8_t f = tfs[k][i] & (uint8_t)-here; /* the end mark has a tf too */
            t[k] = f;
            mask |= (uint64_t)(f > 0) << k;
            df[k] += (f > 0) & keep;
            dl = here ? dls[k][i] : dl;
            at[k] = i + (size_t)here;
        }
        for (int k = npos; k < np; k++)
            t[k] = 0;
        /* Written in any case, kept by counting it. */
        h->id[n] = id;
        h->dl[n] = dl;
        h->mask[n] = mask;
        n += (size_t)keep;
    }
    h->n = n;
    for (int k = 0; k < np; k++)
        h->df[k] += df[k];
    return SQLITE_OK;
}

static void phrases_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                       int nval, sqlite3_value **vals)
{
    fts_rank *r = api->xUserData(fts);
    bm25_hits *h = &r->hits;
    int rc = query_stats(api, fts, r);
    if (nval != 3) {
        sqlite3_result_error(ctx, "mnemo_phrases(tbl, npositive, lo, hi)", -1);
        return;
    }
    int npos = sqlite3_value_int(vals[0]);
    if (npos < 0 || npos > h->np)
        npos = h->np;
    int nfts = api->xPhraseCount(fts); /* the same as np; a phrase past it has no rows */
    for (int k = 0; rc == SQLITE_OK && k < h->np; k++) {
        fts_plist *l = &r->plist[k];
        phrase_ctx c = {r, l};
        l->n = 0;
        if (k < nfts)
            rc = api->xQueryPhrase(fts, k, &c, phrase_row);
        if (rc == SQLITE_OK && (rc = plist_reserve(l)) == SQLITE_OK) {
            l->id[l->n] = INT64_MAX; /* the end mark, not counted */
            l->dl[l->n] = 0;
            l->tf[l->n] = 0;
        }
    }
    if (rc == SQLITE_OK)
        rc = merge_phrases(r, npos, sqlite3_value_int64(vals[1]), sqlite3_value_int64(vals[2]));
    if (rc == SQLITE_NOMEM)
        h->nomem = 1;
    if (rc != SQLITE_OK)
        sqlite3_result_error_code(ctx, rc);
    else
        sqlite3_result_null(ctx);
}

static void mask_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                    int nval, sqlite3_value **vals)
{
    (void)nval;
    (void)vals;
    int tf[BM25_MAX_PHRASES], rc = SQLITE_OK;
    int np = api->xPhraseCount(fts);
    uint64_t mask = row_tf(api, fts, np > BM25_MAX_PHRASES ? BM25_MAX_PHRASES : np, tf, &rc);
    if (rc != SQLITE_OK)
        sqlite3_result_error_code(ctx, rc);
    else
        sqlite3_result_int64(ctx, (sqlite3_int64)mask);
}

/* ----------------------------------------------------------------------
 * Registration
 * -------------------------------------------------------------------- */

static fts5_api *get_api(sqlite3 *db)
{
    fts5_api *api = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
    sqlite3_step(st);
    sqlite3_finalize(st);
    return api;
}

int fts_register_collect(sqlite3 *db, const char *name, fts_rank *rank)
{
    fts5_api *api = get_api(db);
    if (!api)
        return SQLITE_ERROR;
    rank->db = db;
    return api->xCreateFunction(api, name, rank, collect_fn, NULL);
}

int fts_register(sqlite3 *db, fts_rank *rank, fts_feed *feed)
{
    fts5_api *api = get_api(db);
    if (!api)
        return SQLITE_ERROR;
    fts5_tokenizer t = {tok_create, tok_delete, tok_tokenize};
    int rc = api->xCreateTokenizer(api, "mnemo", feed, &t, NULL);
    if (rc == SQLITE_OK && rank)
        rc = api->xCreateFunction(api, "mnemo_collect", rank, collect_fn, NULL);
    if (rc == SQLITE_OK && rank)
        rc = api->xCreateFunction(api, "mnemo_phrases", rank, phrases_fn, NULL);
    if (rc == SQLITE_OK)
        rc = api->xCreateFunction(api, "mnemo_mask", NULL, mask_fn, NULL);
    if (rank)
        rank->db = db;
    return rc;
}
