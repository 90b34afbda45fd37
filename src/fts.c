/*
 * fts.c - FTS5 tokenizer and BM25 ranking function (see fts.h).
 */
#include "fts.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "mnemo.h"
#include "tok.h"

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

/* Pre-tokenized form: per token a header {u8 fts5 flags, u8 length,
 * i32 start, i32 end} followed by the token bytes. */
#define PRE_HEADER 10

static int pre_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    buf *b = ud;
    unsigned char h[PRE_HEADER];
    int32_t s32 = start, e32 = end;
    h[0] = (flags & TOKF_COLOCATED) ? FTS5_TOKEN_COLOCATED : 0;
    h[1] = (unsigned char)len;
    memcpy(h + 2, &s32, 4);
    memcpy(h + 6, &e32, 4);
    buf_append(b, h, PRE_HEADER);
    return buf_append(b, token, (size_t)len);
}

int fts_pretokenize(tok *t, const char *text, size_t len, buf *out)
{
    int rc = tok_run(t, text, len, 0, pre_fn, out);
    return rc ? rc : buf_err(out);
}

static int replay(const fts_feed *f, void *ctx,
                  int (*xToken)(void *, int, const char *, int, int, int))
{
    const unsigned char *p = (const unsigned char *)f->toks, *end = p + f->toks_len;
    while (p + PRE_HEADER <= end) {
        int32_t s32, e32;
        memcpy(&s32, p + 2, 4);
        memcpy(&e32, p + 6, 4);
        int len = p[1];
        int rc = xToken(ctx, p[0], (const char *)p + PRE_HEADER, len, s32, e32);
        if (rc)
            return rc;
        p += PRE_HEADER + len;
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
 * are instead read from chunks_fts_docsize (FTS5's own length table: one
 * varint per column) in blocks of consecutive rows, as matches arrive in
 * rowid order, with xColumnSize() for isolated rows and anything unexpected.
 * -------------------------------------------------------------------- */

#define DL_GAP 64 /* farther than this past the block: just seek the row */

void fts_rank_reset(fts_rank *r, int nphrase)
{
    fts_hits *h = &r->hits;
    h->n = 0;
    h->np = nphrase < 0 ? 0 : nphrase > FTS_MAX_PHRASES ? FTS_MAX_PHRASES : nphrase;
    memset(h->df, 0, sizeof h->df);
    h->stats = 0;
    h->nomem = 0;
    r->dl_n = r->dl_cur = 0; /* lengths may have changed since the last query */
}

void fts_rank_cleanup(fts_rank *r)
{
    sqlite3_finalize(r->docsize);
    r->docsize = NULL;
    r->dl_n = r->dl_cur = 0;
    free(r->hits.id);
    free(r->hits.dl);
    free(r->hits.tf);
    free(r->hits.mask);
    memset(&r->hits, 0, sizeof r->hits);
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

static int load_block(fts_rank *r, int64_t from)
{
    r->dl_n = r->dl_cur = 0;
    if (!r->docsize) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT id, sz FROM %s WHERE id >= ?1 ORDER BY id LIMIT ?2",
                 r->docsize_table ? r->docsize_table : "chunks_fts_docsize");
        if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &r->docsize, NULL) !=
            SQLITE_OK)
            return 0;
    }
    sqlite3_reset(r->docsize);
    sqlite3_bind_int64(r->docsize, 1, from);
    sqlite3_bind_int(r->docsize, 2, FTS_DL_BLOCK);
    while (sqlite3_step(r->docsize) == SQLITE_ROW) {
        int len;
        const unsigned char *sz = sqlite3_column_blob(r->docsize, 1);
        if (!sz || !decode_varint(sz, sqlite3_column_bytes(r->docsize, 1), &len))
            continue;
        r->dl_id[r->dl_n] = sqlite3_column_int64(r->docsize, 0);
        r->dl_len[r->dl_n++] = len;
    }
    sqlite3_reset(r->docsize);
    return r->dl_n > 0;
}

/* Length of row ID from the block cache; -1 when it must be looked up. */
static int block_length(fts_rank *r, int64_t id)
{
    if (r->dl_n && id >= r->dl_id[0] && id <= r->dl_id[r->dl_n - 1]) {
        if (id < r->dl_id[r->dl_cur])
            r->dl_cur = 0;
        while (r->dl_cur < r->dl_n && r->dl_id[r->dl_cur] < id)
            r->dl_cur++;
        return r->dl_cur < r->dl_n && r->dl_id[r->dl_cur] == id ? r->dl_len[r->dl_cur] : -1;
    }
    if (r->dl_n && (id < r->dl_id[0] || id - r->dl_id[r->dl_n - 1] > DL_GAP)) {
        r->dl_n = 0; /* sparse: start over at the next dense stretch */
        return -1;
    }
    if (!load_block(r, id))
        return -1;
    return r->dl_id[0] == id ? r->dl_len[0] : -1;
}

static int hits_grow(fts_hits *h)
{
    size_t cap = h->cap ? h->cap * 2 : 1024;
    int64_t *id = realloc(h->id, cap * sizeof *id);
    if (id)
        h->id = id;
    int *dl = realloc(h->dl, cap * sizeof *dl);
    if (dl)
        h->dl = dl;
    uint64_t *mask = realloc(h->mask, cap * sizeof *mask);
    if (mask)
        h->mask = mask;
    uint8_t *tf = realloc(h->tf, cap * FTS_MAX_PHRASES);
    if (tf)
        h->tf = tf;
    if (!id || !dl || !mask || !tf)
        return SQLITE_NOMEM;
    h->cap = cap;
    return SQLITE_OK;
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

static void collect_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                       int nval, sqlite3_value **vals)
{
    (void)nval;
    (void)vals;
    fts_rank *r = api->xUserData(fts);
    fts_hits *h = &r->hits;
    int rc = SQLITE_OK;
    if (!h->stats) {
        sqlite3_int64 ndocs = 0, ntokens = 0;
        if ((rc = api->xRowCount(fts, &ndocs)) != SQLITE_OK ||
            (rc = api->xColumnTotalSize(fts, 0, &ntokens)) != SQLITE_OK) {
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        h->ndocs = ndocs;
        h->avgdl = ndocs > 0 && ntokens > 0 ? (double)ntokens / (double)ndocs : 1.0;
        h->stats = 1;
    }
    if (h->n == h->cap && hits_grow(h) != SQLITE_OK) {
        h->nomem = 1;
        sqlite3_result_error_nomem(ctx);
        return;
    }
    int tf[FTS_MAX_PHRASES];
    uint64_t mask = row_tf(api, fts, h->np, tf, &rc);
    int dl = block_length(r, api->xRowid(fts));
    if (rc == SQLITE_OK && dl < 0)
        rc = api->xColumnSize(fts, 0, &dl);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    size_t i = h->n++;
    h->id[i] = api->xRowid(fts);
    h->dl[i] = dl;
    h->mask[i] = mask;
    uint8_t *t = h->tf + i * FTS_MAX_PHRASES;
    for (int k = 0; k < h->np; k++) {
        t[k] = (uint8_t)(tf[k] > 255 ? 255 : tf[k]);
        h->df[k] += tf[k] > 0;
    }
    sqlite3_result_null(ctx);
}

static void mask_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                    int nval, sqlite3_value **vals)
{
    (void)nval;
    (void)vals;
    int tf[FTS_MAX_PHRASES], rc = SQLITE_OK;
    int np = api->xPhraseCount(fts);
    uint64_t mask = row_tf(api, fts, np > FTS_MAX_PHRASES ? FTS_MAX_PHRASES : np, tf, &rc);
    if (rc != SQLITE_OK)
        sqlite3_result_error_code(ctx, rc);
    else
        sqlite3_result_int64(ctx, (sqlite3_int64)mask);
}

void fts_idf(const fts_rank *r, double *idf)
{
    const fts_hits *h = &r->hits;
    for (int k = 0; k < h->np; k++) {
        double n = (double)h->df[k], N = (double)h->ndocs;
        idf[k] = log(1.0 + (N - n + 0.5) / (n + 0.5));
    }
}

double fts_bm25(const fts_rank *r, size_t i, const double *weight, const double *idf, double k1,
                double b)
{
    const fts_hits *h = &r->hits;
    double norm = k1 * (1.0 - b + b * (double)h->dl[i] / h->avgdl);
    const uint8_t *t = h->tf + i * FTS_MAX_PHRASES;
    double score = 0;
    for (int k = 0; k < h->np; k++) {
        if (!t[k])
            continue;
        double f = (double)t[k];
        score += weight[k] * idf[k] * f * (k1 + 1.0) / (f + norm);
    }
    return score;
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
    if (rc == SQLITE_OK)
        rc = api->xCreateFunction(api, "mnemo_mask", NULL, mask_fn, NULL);
    if (rank)
        rank->db = db;
    return rc;
}
