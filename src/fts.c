/*
 * fts.c - FTS5 tokenizer and BM25 ranking function (see fts.h).
 */
#include "fts.h"

#include <math.h>
#include <stdlib.h>
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
 * Ranking: mnemo_bm25(fts_table)
 * -------------------------------------------------------------------- */

typedef struct count_ctx {
    int64_t n;
} count_ctx;

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ud)
{
    (void)api;
    (void)fts;
    ((count_ctx *)ud)->n++;
    return SQLITE_OK;
}

static int prepare_idf(const Fts5ExtensionApi *api, Fts5Context *fts, fts_rank *r)
{
    sqlite3_int64 ndocs = 0, ntokens = 0;
    int rc = api->xRowCount(fts, &ndocs);
    if (rc == SQLITE_OK)
        rc = api->xColumnTotalSize(fts, 0, &ntokens);
    if (rc != SQLITE_OK)
        return rc;
    r->ndocs = ndocs;
    r->avgdl = ndocs > 0 ? (double)ntokens / (double)ndocs : 1.0;
    if (r->avgdl <= 0)
        r->avgdl = 1.0;
    int np = api->xPhraseCount(fts);
    if (np > FTS_MAX_PHRASES)
        np = FTS_MAX_PHRASES;
    for (int i = 0; i < np; i++) {
        r->idf[i] = 0;
        if (i < r->nphrase && r->weight[i] <= 0)
            continue;
        count_ctx cc = {0};
        rc = api->xQueryPhrase(fts, i, &cc, count_row);
        if (rc != SQLITE_OK)
            return rc;
        double nq = (double)cc.n;
        r->idf[i] = log(1.0 + ((double)ndocs - nq + 0.5) / (nq + 0.5));
    }
    r->idf_ready = 1;
    return SQLITE_OK;
}

static void bm25_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                    int nval, sqlite3_value **vals)
{
    (void)nval;
    (void)vals;
    fts_rank *r = api->xUserData(fts);
    int rc;
    if (!r->idf_ready && (rc = prepare_idf(api, fts, r)) != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    int np = api->xPhraseCount(fts);
    if (np > FTS_MAX_PHRASES)
        np = FTS_MAX_PHRASES;
    int tf[FTS_MAX_PHRASES];
    memset(tf, 0, sizeof tf);
    int ninst = 0;
    if ((rc = api->xInstCount(fts, &ninst)) != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    for (int i = 0; i < ninst; i++) {
        int phrase, col, off;
        if (api->xInst(fts, i, &phrase, &col, &off) == SQLITE_OK && phrase < np)
            tf[phrase]++;
    }
    int dl = 0;
    if ((rc = api->xColumnSize(fts, 0, &dl)) != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    double norm = r->k1 * (1.0 - r->b + r->b * (double)dl / r->avgdl);
    double score = 0;
    uint64_t mask = 0;
    for (int i = 0; i < np; i++) {
        if (!tf[i])
            continue;
        mask |= (uint64_t)1 << i;
        double w = i < r->nphrase ? r->weight[i] : 1.0;
        double t = (double)tf[i];
        score += w * r->idf[i] * t * (r->k1 + 1.0) / (t + norm);
    }
    r->last_mask = mask;
    sqlite3_result_double(ctx, score);
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

int fts_register(sqlite3 *db, fts_rank *rank, fts_feed *feed)
{
    fts5_api *api = get_api(db);
    if (!api)
        return SQLITE_ERROR;
    fts5_tokenizer t = {tok_create, tok_delete, tok_tokenize};
    int rc = api->xCreateTokenizer(api, "mnemo", feed, &t, NULL);
    if (rc == SQLITE_OK)
        rc = api->xCreateFunction(api, "mnemo_bm25", rank, bm25_fn, NULL);
    return rc;
}
