/*
 * pgmsearch.c - searching structured memories on PostgreSQL: the query's
 * phrases as tsqueries, the keyword leg (the memories' inverted index for
 * words in a plain scope, MaxScore over mnemo_memory_terms without
 * episodes, else the matching rows), the vector leg, episodes, the factors
 * the ranking reaches, feeding the shared fusion (msearch.c) through
 * mem_searcher (see pgmem.c).
 */
#include "store/postgres/pgint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/memory.h"
#include "engine/rank.h"

#define POOL 200          /* vector candidates, as on SQLite */
#define CALIBRATION 2000  /* vectors the calibration of vector scores reads at most */

/* ----------------------------------------------------------------------
 * Search: the keyword leg
 * -------------------------------------------------------------------- */

#define MAX_QTOKS 256

/* The query's phrases as lexeme sequences: phrase k is tokens
 * tok[first[k] .. first[k] + len[k]), each an index into the distinct
 * lexemes lex[] (with prefix flags pre[]). */
typedef struct qphr {
    int np, nlex, ntok;
    int first[BM25_MAX_PHRASES], len[BM25_MAX_PHRASES];
    int tok[MAX_QTOKS];
    char lex[MAX_QTOKS][TOK_MAX_BYTES + 1];
    int pre[MAX_QTOKS];
    int npositive;
} qphr;

typedef struct phr_ctx {
    qphr *p;
    int count;
} phr_ctx;

static int lex_index(qphr *p, const char *s, size_t n, int prefix)
{
    for (int i = 0; i < p->nlex; i++)
        if (p->pre[i] == prefix && strlen(p->lex[i]) == n && memcmp(p->lex[i], s, n) == 0)
            return i;
    if (p->nlex == MAX_QTOKS)
        return -1;
    memcpy(p->lex[p->nlex], s, n);
    p->lex[p->nlex][n] = 0;
    p->pre[p->nlex] = prefix;
    return p->nlex++;
}

/* Query mode as FTS5 tokenizes a query phrase: identifiers whole, no parts. */
static int phr_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    phr_ctx *c = ud;
    if ((flags & (TOKF_PART | TOKF_COLOCATED)) || len <= 0)
        return 0;
    qphr *p = c->p;
    if (p->ntok == MAX_QTOKS)
        return 0;
    int k = lex_index(p, token, (size_t)len, 0);
    if (k >= 0) {
        p->tok[p->ntok++] = k;
        c->count++;
    }
    return 0;
}

/* Reads the phrases of Q's MATCH expression ("a" OR "b" * ..., then
 * optionally NOT (...)): the same phrases, in the same order, as FTS5 sees. */
static int phrases(tok *t, const query *qr, qphr *p)
{
    memset(p, 0, sizeof *p);
    buf s;
    buf_init(&s, 1 << 16);
    const char *c = qr->match;
    int rc = MNEMO_OK;
    while (c && *c && p->np < BM25_MAX_PHRASES) {
        if (*c != '"') {
            c++;
            continue;
        }
        buf_reset(&s);
        for (c++; *c; c++) {
            if (*c == '"') {
                if (c[1] != '"')
                    break;
                c++;
            }
            buf_putc(&s, *c);
        }
        if (*c)
            c++;
        int prefix = strncmp(c, " *", 2) == 0;
        phr_ctx pc = {p, 0};
        p->first[p->np] = p->ntok;
        if (s.len && (rc = tok_run(t, s.data, s.len, 0, phr_fn, &pc)))
            break;
        p->len[p->np] = pc.count;
        if (prefix && pc.count) {
            /* A prefix applies to the phrase's last token. */
            int *last = &p->tok[p->ntok - 1];
            int k = lex_index(p, p->lex[*last], strlen(p->lex[*last]), 1);
            if (k >= 0)
                *last = k;
        }
        p->np++;
    }
    buf_cleanup(&s);
    p->npositive = qr->npositive < p->np ? qr->npositive : p->np;
    return rc;
}

/* Phrase K of P as tsquery text. */
static void phrase_tsq(const qphr *p, int k, buf *b)
{
    for (int j = 0; j < p->len[k]; j++) {
        int x = p->tok[p->first[k] + j];
        if (j)
            buf_puts(b, " <-> ");
        pgtext_lexeme(b, p->lex[x], strlen(p->lex[x]));
        if (p->pre[x])
            buf_puts(b, ":*");
    }
}

/* The tsquery of P: positive phrases ORed, excluded ones negated. */
static void tsquery(const qphr *p, buf *b)
{
    int any = 0;
    buf_puts(b, "(");
    for (int k = 0; k < p->npositive; k++) {
        if (!p->len[k])
            continue;
        buf_puts(b, any ? " | (" : "(");
        phrase_tsq(p, k, b);
        buf_puts(b, ")");
        any = 1;
    }
    buf_puts(b, ")");
    int neg = 0;
    for (int k = p->npositive; k < p->np; k++) {
        if (!p->len[k])
            continue;
        buf_puts(b, neg ? " | (" : " & !((");
        phrase_tsq(p, k, b);
        buf_puts(b, ")");
        neg = 1;
    }
    if (neg)
        buf_puts(b, ")");
}

/* Positions of each query lexeme in one row. */
typedef struct lexpos {
    int *v[MAX_QTOKS];
    int n[MAX_QTOKS], cap[MAX_QTOKS];
} lexpos;

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Appends position POS to lexeme I's list in L. */
static int lexpos_add(lexpos *l, int i, int pos)
{
    if (l->n[i] == l->cap[i]) {
        int cap = l->cap[i] ? l->cap[i] * 2 : 16;
        int *v = realloc(l->v[i], (size_t)cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        l->v[i] = v;
        l->cap[i] = cap;
    }
    l->v[i][l->n[i]++] = pos;
    return MNEMO_OK;
}

/* Parses "i:p,p,... i:p,..." (i 1-based lexeme numbers) into L. */
static int lexpos_parse(lexpos *l, int nlex, const char *s)
{
    for (int i = 0; i < nlex; i++)
        l->n[i] = 0;
    if (!s)
        s = "";
    while (*s) {
        char *end;
        long i = strtol(s, &end, 10) - 1;
        if (*end != ':' || i < 0 || i >= nlex)
            return MNEMO_OK; /* not ours: ignore */
        s = end + 1;
        for (;;) {
            long pos = strtol(s, &end, 10);
            if (end == s)
                break;
            if (lexpos_add(l, (int)i, (int)pos) != MNEMO_OK)
                return MNEMO_NOMEM;
            s = end;
            if (*s != ',')
                break;
            s++;
        }
        while (*s == ' ')
            s++;
    }
    for (int i = 0; i < nlex; i++)
        if (l->n[i] > 1)
            qsort(l->v[i], (size_t)l->n[i], sizeof(int), by_int);
    return MNEMO_OK;
}

/* Parses tsvector text ("'lex':3A,7A 'it''s':2A", a row's vector filtered
 * to the query's lexemes) into L, by the lexemes of P (none a prefix):
 * what lexpos_parse reads, without the server joining each row's lexemes
 * to the query's in a subquery, which cost more than the rest of the
 * statement. W is scratch. */
static int lexpos_parse_tsv(lexpos *l, const qphr *p, const char *s, buf *w)
{
    for (int i = 0; i < p->nlex; i++)
        l->n[i] = 0;
    if (!s)
        return MNEMO_OK;
    while (*s == ' ')
        s++;
    while (*s == '\'') {
        buf_reset(w);
        for (s++; *s; s++) {
            if (*s == '\'' && s[1] != '\'')
                break;
            if ((*s == '\'' || *s == '\\') && s[1] == *s)
                s++;
            buf_putc(w, *s);
        }
        if (*s == '\'')
            s++;
        if (buf_err(w))
            return MNEMO_NOMEM;
        int x = -1;
        for (int i = 0; i < p->nlex && x < 0; i++)
            if (!p->pre[i] && strlen(p->lex[i]) == w->len && !memcmp(p->lex[i], w->data, w->len))
                x = i;
        if (*s == ':') {
            s++;
            for (;;) {
                char *end;
                long pos = strtol(s, &end, 10);
                if (end == s)
                    break;
                if (x >= 0 && lexpos_add(l, x, (int)pos))
                    return MNEMO_NOMEM;
                s = end;
                while (*s >= 'A' && *s <= 'D') /* the weight */
                    s++;
                if (*s != ',')
                    break;
                s++;
            }
        }
        while (*s && *s != ' ')
            s++;
        while (*s == ' ')
            s++;
    }
    for (int i = 0; i < p->nlex; i++)
        if (l->n[i] > 1)
            qsort(l->v[i], (size_t)l->n[i], sizeof(int), by_int);
    return MNEMO_OK;
}

static int has_pos(const lexpos *l, int x, int pos)
{
    int lo = 0, hi = l->n[x];
    while (lo < hi) {
        int k = (lo + hi) / 2;
        if (l->v[x][k] < pos)
            lo = k + 1;
        else
            hi = k;
    }
    return lo < l->n[x] && l->v[x][lo] == pos;
}

/* The frequency of phrase K in the row of L. */
static int phrase_tf(const qphr *p, const lexpos *l, int k)
{
    if (!p->len[k])
        return 0;
    int x0 = p->tok[p->first[k]], tf = 0, last = -1;
    for (int i = 0; i < l->n[x0]; i++) {
        int pos = l->v[x0][i];
        if (pos == last)
            continue; /* a position merged from two lexemes of a prefix */
        last = pos;
        int ok = 1;
        for (int j = 1; j < p->len[k] && ok; j++)
            ok = has_pos(l, p->tok[p->first[k] + j], pos + j);
        tf += ok;
    }
    return tf;
}

/* ----------------------------------------------------------------------
 * Search: candidates
 * -------------------------------------------------------------------- */

/* Cosines are 1 - pgvector's cosine distance; a zero vector (text the
 * provider knows nothing of) has NaN distance, cosine 0 as on SQLite. */
typedef struct search_ctx {
    const char *where;  /* over alias m, $2.. */
    pgmem_params *p;    /* $1 tenant, then the where's */
    vecsetup vs;
    int vectors;        /* the vector leg can run */
    buf qvec;           /* the query vector literal */
    size_t need;        /* results wanted */
    int user_query;     /* the query asks about the user (mem_factors) */
    double now;
    const char *scope;  /* mem_where_scope_pg's part of where */
    int post_ok;        /* the rest of where is liveness: the index may serve */
    char now_s[32];     /* the time where checks expiry at */
} search_ctx;

/* A candidate from a row with COLS at 0. */
static mcand *push_row(mset *s, const pg_rows *r, size_t i)
{
    mcand *c = mset_push(s, strtoll(pg_value(r, i, 17), NULL, 10));
    if (!c)
        return NULL;
    c->importance = pgmem_num_at(r, i, 3);
    c->about_user = strcmp(pg_value(r, i, 5), "user") == 0;
    c->created = pgmem_num_at(r, i, 11);
    c->confirmed = pg_isnull(r, i, 15) ? 0 : pgmem_num_at(r, i, 15);
    c->confirmations = pgmem_num_at(r, i, 14);
    c->has_factors = 1;
    c->rec = pgmem_row_json(r, i, 0);
    return c;
}

/* What a keyword match is ranked by (alias m); its record is read only if
 * it makes the results (load_recs). */
#define KCOLS                                                                                  \
    "m.seq, m.ntok, m.importance, m.subject, m.created_at, m.last_confirmed_at, "              \
    "m.confirmations"
#define NKCOLS 7

/* The keyword leg's rows: their hits (phrase frequencies, lengths) in
 * hits, in the same order their factor inputs (mid = seq) and raw
 * cosines; df counts the rows holding each phrase. */
typedef struct kleg {
    qphr *ph;
    lexpos *lp;
    bm25_hits *hits;
    mcand *row;
    double *cos;
    int64_t df[BM25_MAX_PHRASES];
} kleg;

static int kleg_grow(kleg *k)
{
    bm25_hits *h = k->hits;
    if (h->n < h->cap)
        return MNEMO_OK;
    if (bm25_hits_grow(h) != MNEMO_OK)
        return MNEMO_NOMEM;
    mcand *row = realloc(k->row, h->cap * sizeof *row);
    if (row)
        k->row = row;
    double *cos = realloc(k->cos, h->cap * sizeof *cos);
    if (cos)
        k->cos = cos;
    return row && cos ? MNEMO_OK : MNEMO_NOMEM;
}

/* Frees the hits' arrays and H itself. */
static void hits_free(bm25_hits *h)
{
    if (h)
        bm25_hits_cleanup(h);
    free(h);
}

static void kleg_cleanup(kleg *k)
{
    hits_free(k->hits);
    for (int i = 0; k->lp && i < MAX_QTOKS; i++)
        free(k->lp->v[i]);
    free(k->lp);
    free(k->ph);
    free(k->row);
    free(k->cos);
}

/* Reads the rows in scope matching tsquery TQ (text), appending them. Only
 * the query's lexemes are unnested from each row (ts_filter after
 * setweight), unless a prefix needs them all. */
static int kleg_read(mnemo *m, search_ctx *x, kleg *k, const char *tq, const char *lexs,
                     const char *pres, int any_prefix)
{
    int n0 = x->p->n;
    int a = pgmem_params_add(x->p, tq), b = pgmem_params_add(x->p, lexs);
    int c = any_prefix ? pgmem_params_add(x->p, pres) : 0;
    buf sql, w;
    buf_init(&sql, 1 << 20);
    buf_init(&w, 0);
    /* Without prefixes each row's vector filtered to the query's lexemes
     * is all that is needed (lexpos_parse_tsv); a prefix matches lexemes
     * the query does not name, joined here to the lexeme they extend. */
    if (any_prefix)
        buf_printf(&sql,
                   "SELECT " KCOLS ", (SELECT string_agg(t.i::text || ':' || "
                   "array_to_string(u.positions, ','), ' ') FROM unnest(m.tsv) u JOIN "
                   "unnest($%d::text[], $%d::boolean[]) WITH ORDINALITY AS t(tok, pre, i) ON "
                   "u.lexeme = t.tok OR (t.pre AND starts_with(u.lexeme, t.tok)))",
                   b, c);
    else
        buf_printf(&sql, "SELECT " KCOLS ", ts_filter(setweight(m.tsv, 'A', $%d::text[]), "
                   "'{a}')::text", b);
    if (x->vectors) {
        int v = pgmem_params_add(x->p, x->qvec.data), id = pgmem_params_add(x->p, x->vs.ident);
        buf_printf(&sql,
                   ", (SELECT 1 - coalesce(nullif(v.embedding <=> $%d::vector, 'NaN'), 1) "
                   "FROM %s v WHERE v.tenant = m.tenant AND v.memory_id = m.id AND "
                   "v.model = $%d)",
                   v, x->vs.table, id);
    }
    buf_printf(&sql,
               " FROM mnemo_memories m WHERE m.tenant = $1 AND m.tsv @@ $%d::tsquery AND %s", a,
               x->where);
    pg_rows *r = NULL;
    int rc = buf_err(&sql)
                 ? core_error(m, MNEMO_NOMEM, "out of memory")
                 : pgmem_q(m, "memory search", sql.data, x->p->n, x->p->v, &r);
    x->p->n = n0;
    bm25_hits *h = k->hits;
    qphr *ph = k->ph;
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        const char *pos = pg_value(r, i, NKCOLS);
        if (kleg_grow(k) || (any_prefix ? lexpos_parse(k->lp, ph->nlex, pos)
                                        : lexpos_parse_tsv(k->lp, ph, pos, &w))) {
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
            break;
        }
        size_t j = h->n;
        h->id[j] = (int64_t)j;
        h->dl[j] = (int)strtol(pg_value(r, i, 1), NULL, 10);
        h->mask[j] = 0;
        uint8_t *tf = h->tf + j * BM25_MAX_PHRASES;
        for (int p = 0; p < ph->np; p++) {
            int f = phrase_tf(ph, k->lp, p);
            tf[p] = (uint8_t)(f > 255 ? 255 : f);
            k->df[p] += f > 0;
            if (f > 0)
                h->mask[j] |= (uint64_t)1 << p;
        }
        mcand *row = &k->row[j];
        memset(row, 0, sizeof *row);
        row->mid = strtoll(pg_value(r, i, 0), NULL, 10);
        row->importance = pgmem_num_at(r, i, 2);
        row->about_user = strcmp(pg_value(r, i, 3), "user") == 0;
        row->created = pgmem_num_at(r, i, 4);
        row->confirmed = pg_isnull(r, i, 5) ? 0 : pgmem_num_at(r, i, 5);
        row->confirmations = pgmem_num_at(r, i, 6);
        row->has_factors = 1;
        k->cos[j] = x->vectors && !pg_isnull(r, i, NKCOLS + 1)
                        ? strtod(pg_value(r, i, NKCOLS + 1), NULL)
                        : NAN;
        h->n++;
    }
    pg_rows_free(r);
    buf_cleanup(&sql);
    buf_cleanup(&w);
    return rc;
}

/* The keyword leg's rows from the memories' inverted index (pgmpost.c):
 * the same hits as kleg_read finds for a query of single lexemes, their
 * factors read later, only for the candidates ranking reaches
 * (load_factors). MNEMO_NOTFOUND: the index cannot serve. */
static int kleg_postings(mnemo *m, search_ctx *x, kleg *k, const char *lexs, const char *tq)
{
    qphr *ph = k->ph;
    const char *lv[MAX_QTOKS];
    for (int i = 0; i < ph->nlex; i++)
        lv[i] = ph->lex[i];
    pgmpost_query q = {lv, ph->nlex, lexs, tq, x->scope, x->where, x->now_s, x->p};
    pgmpost_docs d;
    int rc = pgmpost_read(m, &q, &d);
    bm25_hits *h = k->hits;
    for (size_t i = 0; !rc && i < d.n; i++) {
        if (kleg_grow(k)) {
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
            break;
        }
        size_t j = h->n;
        h->id[j] = (int64_t)j;
        h->dl[j] = d.ntok[i];
        h->mask[j] = 0;
        uint8_t *tf = h->tf + j * BM25_MAX_PHRASES;
        const uint8_t *lt = d.tf + i * BM25_MAX_PHRASES;
        for (int p = 0; p < ph->np; p++) {
            int f = ph->len[p] ? lt[ph->tok[ph->first[p]]] : 0;
            tf[p] = (uint8_t)f;
            k->df[p] += f > 0;
            if (f > 0)
                h->mask[j] |= (uint64_t)1 << p;
        }
        mcand *row = &k->row[j];
        memset(row, 0, sizeof *row);
        row->mid = d.seq[i];
        const pgmpost_factors *f = &d.f[i];
        if (f->known) {
            row->importance = f->importance;
            row->about_user = f->about_user;
            row->created = f->created;
            row->confirmed = f->confirmed;
            row->confirmations = f->confirmations;
            row->has_factors = 1;
        }
        k->cos[j] = NAN;
        h->n++;
    }
    pgmpost_docs_cleanup(&d);
    return rc;
}

/* The statistics: N, the mean length and each phrase's document frequency
 * (every phrase a single lexeme): the stored counts of the merged memories,
 * each the sum of the writers' slots (pgquery_slot), plus the live
 * memories above the mark, counted from their rows (pgmem_stats_merged), in
 * one statement: one snapshot. The rows above the mark are bounded above
 * too (by the newest), so that the planner, which knows neither bound,
 * takes the range as narrow and reads it through mnemo_memories_seq: with
 * the lower bound alone it reckons a third of the tenant and scans them
 * all (32 ms at 20k memories, for one row above the mark). */
#define STATS_N                                                                                \
    "WITH nm AS MATERIALIZED (SELECT m.ntok, m.tsv FROM mnemo_memories m WHERE m.tenant = $1 "  \
    "AND m.seq > " PM_MARK_SQL " AND m.seq <= (SELECT max(x.seq) FROM mnemo_memories x WHERE "  \
    "x.tenant = $1) AND m.deleted_at IS NULL), "                                                \
    "nt AS (SELECT count(*) AS docs, coalesce(sum(ntok), 0) AS tokens FROM nm) "                \
    "SELECT 0, coalesce(sum(s.docs), 0) + (SELECT docs FROM nt), coalesce(sum(s.tokens), 0) + " \
    "(SELECT tokens FROM nt) FROM mnemo_memory_stats s WHERE s.tenant = $1"
static const char stats_n_sql[] = STATS_N;
/* With the frequencies, and (row -1) whether a live memory has expired by
 * $3: SQLite's frequencies leave those out. */
static const char stats_sql[] =
    STATS_N " UNION ALL SELECT t.i, sum(d.df), 0 FROM unnest($2::text[]) WITH ORDINALITY AS "
    "t(l, i) JOIN (SELECT lexeme, df FROM mnemo_memory_terms WHERE tenant = $1 AND lexeme = ANY "
    "($2::text[]) UNION ALL SELECT l, 1 FROM nm, unnest(tsvector_to_array(ts_filter(setweight("
    "nm.tsv, 'A', $2::text[]), '{a}'))) l) d ON d.lexeme = t.l GROUP BY t.i "
    "UNION ALL SELECT -1, count(*), 0 FROM (SELECT 1 FROM mnemo_memories e WHERE e.tenant = $1 "
    "AND e.expires_at IS NOT NULL AND e.deleted_at IS NULL AND e.expires_at <= $3::float8 "
    "LIMIT 1) z";
#undef STATS_N

/* The statistics into K's hits; the document frequencies only with NOW
 * (the time expiry is checked at; *EXPIRED: a live memory has expired), as
 * a search counting them in its scope needs N and the mean length alone. */
static int stored_stats(mnemo *m, const char *lexs, kleg *k, const char *now, int *expired)
{
    const char *p[3] = {pgconn_tenant(m), lexs, now};
    pg_rows *r = NULL;
    int rc = now ? pgmem_qp(m, "memory search", stats_sql, 3, p, &r)
                 : pgmem_qp(m, "memory search", stats_n_sql, 1, p, &r);
    if (expired)
        *expired = 0;
    bm25_hits *h = k->hits;
    int64_t ldf[MAX_QTOKS] = {0};
    double ntokens = 0;
    h->ndocs = 0;
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        long x = strtol(pg_value(r, i, 0), NULL, 10);
        if (x == 0) {
            h->ndocs = strtoll(pg_value(r, i, 1), NULL, 10);
            ntokens = strtod(pg_value(r, i, 2), NULL);
        } else if (x == -1) {
            if (expired)
                *expired = strtoll(pg_value(r, i, 1), NULL, 10) > 0;
        } else if (x >= 1 && x <= k->ph->nlex) {
            ldf[x - 1] = strtoll(pg_value(r, i, 1), NULL, 10);
        }
    }
    h->avgdl = h->ndocs > 0 && ntokens > 0 ? ntokens / (double)h->ndocs : 1.0;
    h->stats = 1;
    for (int i = 0; i < k->ph->np; i++)
        h->df[i] = k->ph->len[i] ? ldf[k->ph->tok[k->ph->first[i]]] : 0;
    pg_rows_free(r);
    return rc;
}

typedef struct term {
    int lex;   /* index into the lexemes */
    int64_t df;
    double ub; /* its most to a memory's BM25 */
} term;

static int by_ub(const void *a, const void *b)
{
    const term *x = a, *y = b;
    return x->ub < y->ub ? 1 : x->ub > y->ub ? -1 : (x->lex > y->lex) - (x->lex < y->lex);
}

/* One kleg_maxscore's rounds (pgms callbacks): the best NEED scores so
 * far in TOP (a heap, rank_top_offer), the rows scored of the hits. */
typedef struct krounds {
    mnemo *m;
    search_ctx *x;
    kleg *k;
    mem_bm25 *kb;
    const char *lexs, *pres;
    double *top, wv, maxf;
    size_t need, ntop, scored;
} krounds;

static int kround_read(void *ud, const char *tsq, int round)
{
    krounds *r = ud;
    (void)round;
    int rc = kleg_read(r->m, r->x, r->k, tsq, r->lexs, r->pres, 0);
    for (; !rc && r->scored < r->k->hits->n; r->scored++) {
        double text = mem_bm25_norm(r->kb, r->k->hits, r->scored);
        rank_top_offer(r->top, &r->ntop, r->need,
                       text * mem_factors(r->m, &r->k->row[r->scored], r->x->user_query,
                                          r->x->now));
    }
    return rc;
}

static int kround_full(void *ud, double *theta)
{
    krounds *r = ud;
    *theta = r->ntop ? r->top[0] : 0;
    return r->ntop == r->need;
}

/* Whether a memory whose terms' BM25 bounds sum to BOUND may reach THETA,
 * with its vector's share and its factors at their most. */
static int kround_reach(void *ud, double theta, double bound)
{
    krounds *r = ud;
    double tub = 1.0 - exp(-2.0 * bound / r->kb->sum);
    double rub = r->x->vectors ? 1.0 - (1.0 - tub) * (1.0 - r->wv) : tub; /* v <= 1 */
    return !(rub * r->maxf < theta);
}

/* Reads the matches of plain terms rarest (by their most to BM25) first
 * (pgmaxscore_run): each term's rows without the terms read before, until the
 * NEED-th best score so far beats what a memory holding only the terms
 * left could score. Scores of the rows read are exact: positions of every
 * query lexeme come with each row. */
static int kleg_maxscore(mnemo *m, const query *qr, search_ctx *x, kleg *k, const char *lexs,
                         const char *pres, mem_bm25 *kb)
{
    qphr *ph = k->ph;
    int expired = 0;
    int rc = stored_stats(m, lexs, k, x->now_s, &expired);
    if (!rc && expired)
        return MNEMO_NOTFOUND; /* the frequencies would count them: read the matches */
    if (rc)
        return rc;
    mem_bm25_init(m, qr, k->hits, kb);
    term t[MAX_QTOKS] = {{0, 0, 0}};
    int nt = 0;
    for (int p = 0; p < ph->npositive; p++) {
        if (!ph->len[p] || kb->w[p] <= 0 || k->hits->df[p] <= 0)
            continue;
        int lex = ph->tok[ph->first[p]], i = 0;
        while (i < nt && t[i].lex != lex)
            i++;
        if (i == nt)
            t[nt++] = (term){lex, k->hits->df[p], 0};
        t[i].ub += kb->w[p] * kb->idf[p] * (kb->k1 + 1.0);
    }
    if (nt > 1)
        qsort(t, (size_t)nt, sizeof *t, by_ub);
    if (nt > PGMS_MAX_TERMS)
        nt = PGMS_MAX_TERMS; /* not reached: phrases are fewer */
    krounds r = {m, x, k, kb, lexs, pres, NULL, cfg_num(m->cfg, CFG_VECTOR_WEIGHT),
                 mem_max_factor(m, x->user_query), x->need ? x->need : 1, 0, 0};
    pgms ms;
    memset(&ms, 0, sizeof ms);
    ms.n = nt;
    for (int i = 0; i < nt; i++) {
        ms.lex[i] = ph->lex[t[i].lex];
        ms.ub[i] = t[i].ub;
    }
    ms.first = 1;
    ms.read = kround_read;
    ms.full = kround_full;
    ms.reach = kround_reach;
    ms.ud = &r;
    buf neg;
    buf_init(&neg, 1 << 20);
    for (int p = ph->npositive; p < ph->np; p++) {
        if (!ph->len[p])
            continue;
        buf_puts(&neg, " & !(");
        phrase_tsq(ph, p, &neg);
        buf_puts(&neg, ")");
    }
    ms.tail = neg.data ? neg.data : "";
    r.top = malloc(r.need * sizeof *r.top);
    if (!r.top || buf_err(&neg))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    else
        rc = pgmaxscore_run(m, &ms);
    free(r.top);
    buf_cleanup(&neg);
    return rc;
}

/* The episode members of MIDS (mem_episode_fn): the memories stored just
 * before and after each in its scope. */
static int pg_episodes(mnemo *m, void *ud, const int64_t *mids, size_t n, mem_members *l)
{
    (void)ud;
    buf ids;
    buf_init(&ids, 1 << 20);
    buf_putc(&ids, '{');
    for (size_t i = 0; i < n; i++)
        buf_printf(&ids, "%s%lld", i ? "," : "", (long long)mids[i]);
    buf_putc(&ids, '}');
    if (buf_err(&ids)) {
        buf_cleanup(&ids);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
#define SIDE(OP, ORDER)                                                                       \
    "(SELECT row_number() OVER (ORDER BY " ORDER ") AS k, p.seq, p.created_at, p.text "     \
    "FROM mnemo_memories p WHERE p.tenant = o.tenant AND p.user_id = o.user_id AND "         \
    "p.agent_id = o.agent_id AND p.run_id = o.run_id AND p.deleted_at IS NULL AND "          \
    "(p.created_at, p.seq) " OP " (o.created_at, o.seq) ORDER BY " ORDER " LIMIT 2)"
    const char *p[2] = {pgconn_tenant(m), ids.data};
    pg_rows *r = NULL;
    int rc = pgmem_q(m, "memory episodes",
               "SELECT o.seq, o.created_at, o.text, n.dir, n.seq, n.created_at, n.text "
               "FROM mnemo_memories o LEFT JOIN LATERAL (SELECT -1 AS dir, b.* FROM " SIDE(
                   "<", "p.created_at DESC, p.seq DESC") " b UNION ALL SELECT 1, a.* FROM " SIDE(">",
                                                                                      "p.created_at, p.seq") " a) n ON true "
               "WHERE o.tenant = $1 AND o.seq = ANY ($2::bigint[]) ORDER BY o.seq, n.dir, n.k",
               2, p, &r);
#undef SIDE
    buf_cleanup(&ids);
    int64_t of = -1;
    int dir = 0, pos = 0, stop = 0;
    double own_at = 0, when = 0;
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        int64_t o = strtoll(pg_value(r, i, 0), NULL, 10);
        if (o != of) {
            of = o;
            own_at = strtod(pg_value(r, i, 1), NULL);
            dir = 0;
            if ((rc = mem_members_add(l, of, of, 0, pg_value(r, i, 2))))
                break;
        }
        if (pg_isnull(r, i, 3))
            continue;
        int d = (int)strtol(pg_value(r, i, 3), NULL, 10);
        if (d != dir) { /* a new side starts at the memory itself */
            dir = d;
            pos = 0;
            stop = 0;
            when = own_at;
        }
        double at = strtod(pg_value(r, i, 5), NULL);
        if (stop || fabs(at - when) > MEM_EPISODE_GAP) {
            stop = 1;
            continue;
        }
        pos += dir;
        when = at;
        rc = mem_members_add(l, of, strtoll(pg_value(r, i, 4), NULL, 10), pos, pg_value(r, i, 6));
    }
    pg_rows_free(r);
    return rc;
}

/* Keyword candidates of query QR (raw cosines of their vectors in COS,
 * NAN for none, when the vector leg runs). */
/* What the keyword leg leaves for the episodes: the hits, their memories
 * and the BM25 weights (kept_cleanup frees). */
typedef struct kept {
    bm25_hits *hits;
    int64_t *mids;
    mem_bm25 kb;
} kept;

static void kept_cleanup(kept *k)
{
    hits_free(k->hits);
    free(k->mids);
}

static int keyword_leg(mnemo *m, const query *qr, search_ctx *x, mset *s, double **cos,
                       kept *kout)
{
    tok *t = NULL;
    kleg k;
    memset(&k, 0, sizeof k);
    int rc = pgconn_qtok(m, &t);
    k.ph = calloc(1, sizeof *k.ph);
    k.lp = calloc(1, sizeof *k.lp);
    k.hits = calloc(1, sizeof *k.hits);
    if (!rc && (!k.ph || !k.lp || !k.hits))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    qphr *ph = k.ph;
    if (!rc)
        rc = phrases(t, qr, ph);
    int any = 0, plain = !rc && qr->required == 0, any_prefix = 0;
    for (int p = 0; !rc && p < ph->npositive; p++) {
        any |= ph->len[p] > 0;
        plain &= ph->len[p] <= 1;
    }
    for (int i = 0; !rc && i < ph->nlex; i++)
        any_prefix |= ph->pre[i];
    plain &= !any_prefix;
    buf tq, lexs, pres;
    buf_init(&tq, 1 << 20);
    buf_init(&lexs, 1 << 20);
    buf_init(&pres, 1 << 16);
    mem_bm25 kb;
    if (!rc && any) {
        const char *lv[MAX_QTOKS];
        buf_putc(&pres, '{');
        for (int i = 0; i < ph->nlex; i++) {
            lv[i] = ph->lex[i];
            buf_puts(&pres, i ? (ph->pre[i] ? ",t" : ",f") : (ph->pre[i] ? "t" : "f"));
        }
        buf_putc(&pres, '}');
        pg_text_array(&lexs, lv, (size_t)ph->nlex);
        if (buf_err(&lexs) || buf_err(&pres))
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
    }
    bm25_hits *h = k.hits;
    /* Episodes (mem_episodes) read the keyword scores of the best candidates
     * well past the limit and of their neighbours: MaxScore's early stop
     * would leave some of those unread, so it serves only without them. */
    if (cfg_num(m->cfg, CFG_MEMORY_CONTEXT) > 0)
        plain = 0;
    /* MaxScore takes the document frequencies of the whole tenant; SQLite
     * counts them among the memories of the search's scope that have not
     * expired: the same only for a search of the whole tenant (and with
     * none expired, which kleg_maxscore checks). */
    if (!x->post_ok || strcmp(x->scope, "true") != 0)
        plain = 0;
    int done = 0;
    if (!rc && any && plain) {
        h->np = ph->np;
        rc = kleg_maxscore(m, qr, x, &k, lexs.data, pres.data, &kb);
        done = rc != MNEMO_NOTFOUND;
        if (!done)
            rc = MNEMO_OK;
    }
    if (!rc && any && !done) {
        /* Every match, with frequencies in scope as SQLite counts them, and
         * the stored N and mean length. */
        h->np = ph->np;
        tsquery(ph, &tq);
        if (buf_err(&tq))
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
        if (!rc)
            rc = stored_stats(m, lexs.data, &k, NULL, NULL);
        /* Single lexemes in a plain scope: the inverted index, when built. */
        int post = !rc && x->post_ok && !x->vectors && !any_prefix && ph->np == ph->npositive &&
                   ph->nlex <= BM25_MAX_PHRASES;
        for (int p = 0; post && p < ph->np; p++)
            post = ph->len[p] <= 1;
        int pr = post ? kleg_postings(m, x, &k, lexs.data, tq.data) : MNEMO_NOTFOUND;
        if (pr != MNEMO_NOTFOUND)
            rc = pr;
        else if (!rc)
            rc = kleg_read(m, x, &k, tq.data, lexs.data, pres.data, any_prefix);
        for (int p = 0; p < ph->np; p++)
            h->df[p] = k.df[p];
        if (!rc)
            mem_bm25_init(m, qr, k.hits, &kb);
    }
    size_t n = h ? h->n : 0;
    if (!rc && n && !(*cos = calloc(n, sizeof **cos)))
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        if (!mem_bm25_hit_ok(qr, k.hits, i))
            continue;
        (*cos)[s->n] = k.cos[i];
        mcand *c = mset_push(s, k.row[i].mid);
        if (!c) {
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
            break;
        }
        double vec = c->vec, vrank = c->vrank;
        *c = k.row[i];
        c->vec = vec;
        c->vrank = vrank;
        c->text = mem_bm25_norm(&kb, k.hits, i);
    }
    if (!rc && n) { /* the hits' memories, for the episodes (pg_run) */
        if (!(kout->mids = malloc(n * sizeof *kout->mids)))
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
        for (size_t i = 0; !rc && i < n; i++)
            kout->mids[i] = k.row[i].mid;
    }
    kout->kb = kb;
    kout->hits = k.hits; /* the hits */
    k.hits = NULL;
    kleg_cleanup(&k);
    buf_cleanup(&tq);
    buf_cleanup(&lexs);
    buf_cleanup(&pres);
    return rc;
}

/* Reads the records of the first N candidates of S that have none. */
static int load_recs(mnemo *m, mset *s, size_t n)
{
    if (n > s->n)
        n = s->n;
    buf ids;
    buf_init(&ids, 1 << 20);
    buf_putc(&ids, '{');
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        if (!s->v[i].rec)
            buf_printf(&ids, "%s%lld", want++ ? "," : "", (long long)s->v[i].mid);
    buf_putc(&ids, '}');
    int rc = buf_err(&ids) ? core_error(m, MNEMO_NOMEM, "out of memory") : MNEMO_OK;
    pg_rows *r = NULL;
    const char *p[2] = {pgconn_tenant(m), ids.data};
    if (!rc && want)
        rc = pgmem_q(m, "memory search",
               "SELECT " COLS " FROM mnemo_memories m WHERE m.tenant = $1 AND "
               "m.seq = ANY($2::bigint[])",
               2, p, &r);
    for (size_t j = 0; !rc && j < pg_nrows(r); j++) {
        int64_t seq = strtoll(pg_value(r, j, 17), NULL, 10);
        for (size_t i = 0; i < n; i++) {
            if (s->v[i].mid == seq && !s->v[i].rec) {
                if (!(s->v[i].rec = pgmem_row_json(r, j, 0)))
                    rc = core_error(m, MNEMO_NOMEM, "out of memory");
                break;
            }
        }
    }
    pg_rows_free(r);
    buf_cleanup(&ids);
    return rc;
}

typedef struct vrow {
    size_t row;
    int64_t seq;
    double cos;
} vrow;

static int by_cos(const void *a, const void *b)
{
    const vrow *x = a, *y = b;
    return x->cos < y->cos ? 1 : x->cos > y->cos ? -1 : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The vector leg: the calibration over the newest CALIBRATION vectors in
 * scope (all of them in a smaller scope), the best POOL through the HNSW
 * index; keyword candidates (the first NK of S, with raw cosines KCOS) get
 * their calibrated scores. *RAN: vectors in scope. */
static int vector_leg(mnemo *m, search_ctx *x, mset *s, size_t nk, const double *kcos, int *ran)
{
    *ran = 0;
    int n0 = x->p->n;
    int v = pgmem_params_add(x->p, x->qvec.data), id = pgmem_params_add(x->p, x->vs.ident);
    int cid = pgmem_params_add(x->p, x->vs.cident);
    buf sql;
    buf_init(&sql, 1 << 20);
    /* And the query's cosines with the fixed texts (engine/calib.h). */
    char rf[512];
    if (x->vs.calib[0])
        snprintf(rf, sizeof rf,
                 "(SELECT coalesce(array_agg(1 - (e.embedding <=> $%d::vector)), '{}') AS cs "
                 "FROM %s e WHERE e.tenant = $1 AND e.identity = $%d) rf",
                 v, x->vs.calib, cid);
    else
        snprintf(rf, sizeof rf, "(SELECT '{}'::float8[] AS cs, $%d::text AS id) rf", cid);
    buf_printf(&sql,
               "SELECT z.n, z.s, z.s2, rf.cs FROM (SELECT count(*) AS n, "
               "coalesce(sum(c), 0) AS s, coalesce(sum(c * c), 0) AS s2 FROM (SELECT "
               "1 - coalesce(nullif(v.embedding <=> $%d::vector, 'NaN'), 1) AS c FROM (SELECT "
               "v.embedding FROM %s v JOIN mnemo_memories m ON m.tenant = v.tenant AND m.id = "
               "v.memory_id WHERE v.tenant = $1 AND v.model = $%d AND %s ORDER BY m.seq DESC "
               "LIMIT %d) v) z0) z CROSS JOIN %s",
               v, x->vs.table, id, x->where, CALIBRATION, rf);
    pg_rows *st = NULL, *r = NULL;
    int rc =
        buf_err(&sql) ? MNEMO_NOMEM : pgmem_q(m, "memory vectors", sql.data, x->p->n, x->p->v, &st);
    size_t n = rc ? 0 : (size_t)strtoull(pg_value(st, 0, 0), NULL, 10);
    double sum = n ? strtod(pg_value(st, 0, 1), NULL) : 0;
    double sum2 = n ? strtod(pg_value(st, 0, 2), NULL) : 0;
    double rcs[CALIB_NTEXTS];
    size_t rn = n ? pgtext_float_array(pg_value(st, 0, 3), rcs, CALIB_NTEXTS) : 0;
    x->p->n = cid - 1; /* the fixed texts' setup: not a parameter of what follows */
    if (!rc && n) {
        buf_reset(&sql);
        buf_printf(&sql,
                   "SELECT " COLS ", 1 - coalesce(nullif(v.embedding <=> $%d::vector, 'NaN'), 1) FROM %s v JOIN "
                   "mnemo_memories m ON m.tenant = v.tenant AND m.id = v.memory_id WHERE "
                   "v.tenant = $1 AND v.model = $%d AND %s ORDER BY v.embedding <=> $%d::vector "
                   "LIMIT %d",
                   v, x->vs.table, id, x->where, v, POOL);
        rc = buf_err(&sql) ? MNEMO_NOMEM
                           : pgmem_q(m, "memory vectors", sql.data, x->p->n, x->p->v, &r);
    }
    x->p->n = n0;
    if (!rc && n) {
        double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
        calib_null nl = {mean, var > 0 ? sqrt(var) : 0, n, 0, 0, 0};
        calib_ref_cosines(&nl, rcs, rn);
        for (size_t i = 0; i < nk; i++)
            if (!isnan(kcos[i]))
                mem_vec_set(&s->v[i], kcos[i], &nl);
        size_t nr = pg_nrows(r);
        vrow *rows = calloc(nr ? nr : 1, sizeof *rows);
        if (!rows)
            rc = MNEMO_NOMEM;
        for (size_t i = 0; !rc && i < nr; i++)
            rows[i] = (vrow){i, strtoll(pg_value(r, i, 17), NULL, 10),
                             strtod(pg_value(r, i, NCOLS), NULL)};
        if (!rc && nr > 1)
            qsort(rows, nr, sizeof *rows, by_cos);
        mset_sort_mid(s, nk);
        for (size_t i = 0; !rc && i < nr; i++) {
            mcand *c = mset_find(s, nk, rows[i].seq);
            if (!c) {
                if (!(c = push_row(s, r, rows[i].row)) || !c->rec) {
                    rc = MNEMO_NOMEM;
                    break;
                }
            }
            mem_vec_set(c, rows[i].cos, &nl);
        }
        free(rows);
        *ran = 1;
    }
    pg_rows_free(st);
    pg_rows_free(r);
    buf_cleanup(&sql);
    return rc == MNEMO_NOMEM ? core_error(m, rc, "out of memory") : rc;
}

static int by_mid_ptr(const void *a, const void *b)
{
    const mcand *x = *(const mcand *const *)a, *y = *(const mcand *const *)b;
    return (x->mid > y->mid) - (x->mid < y->mid);
}

/* Reads the factor inputs of the N candidates C (in the search's
 * snapshot); those not found keep none. */
static int load_factors(mnemo *m, mcand **c, size_t n)
{
    if (!n)
        return MNEMO_OK;
    qsort(c, n, sizeof *c, by_mid_ptr);
    buf ids;
    buf_init(&ids, 1 << 20);
    buf_putc(&ids, '{');
    for (size_t i = 0; i < n; i++)
        buf_printf(&ids, "%s%lld", i ? "," : "", (long long)c[i]->mid);
    buf_putc(&ids, '}');
    const char *p[2] = {pgconn_tenant(m), ids.data};
    pg_rows *r = NULL;
    int rc = buf_err(&ids) ? core_error(m, MNEMO_NOMEM, "out of memory")
                           : pgmem_q(m, "memory search",
                                     "SELECT " KCOLS " FROM mnemo_memories m WHERE m.tenant = $1 "
                                     "AND m.seq = ANY ($2::bigint[])",
                                     2, p, &r);
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        mcand key = {0}, *kp = &key;
        key.mid = strtoll(pg_value(r, i, 0), NULL, 10);
        mcand **f = bsearch(&kp, c, n, sizeof *c, by_mid_ptr);
        if (!f)
            continue;
        mcand *row = *f;
        row->importance = pgmem_num_at(r, i, 2);
        row->about_user = strcmp(pg_value(r, i, 3), "user") == 0;
        row->created = pgmem_num_at(r, i, 4);
        row->confirmed = pg_isnull(r, i, 5) ? 0 : pgmem_num_at(r, i, 5);
        row->confirmations = pgmem_num_at(r, i, 6);
        row->has_factors = 1;
    }
    pg_rows_free(r);
    buf_cleanup(&ids);
    return rc;
}

typedef struct relord {
    double rel;
    mcand *c;
} relord;

static int by_relord(const void *a, const void *b)
{
    const relord *x = a, *y = b;
    if (x->rel != y->rel)
        return x->rel < y->rel ? 1 : -1;
    return (x->c->mid > y->c->mid) - (x->c->mid < y->c->mid);
}

#define FACTOR_BATCH 64 /* candidates whose factors one statement reads, at first */

/* Reads, a batch per statement, the factors of the candidates mem_rank
 * will look at (keyword matches from the index come without): it visits
 * them by relevance until the best NEED scores are out of reach of the
 * rest, which is followed here with the same arithmetic. */
static int prefetch_factors(mnemo *m, search_ctx *x, mset *s, size_t need, int ran)
{
    size_t miss = 0;
    for (size_t i = 0; i < s->n; i++)
        miss += !s->v[i].has_factors;
    if (!miss)
        return MNEMO_OK;
    double wv = cfg_num(m->cfg, CFG_VECTOR_WEIGHT), bound = mem_max_factor(m, x->user_query);
    relord *o = malloc(s->n * sizeof *o);
    mcand **batch = malloc((s->n + 1) * sizeof *batch);
    double *top = malloc((need ? need : 1) * sizeof *top);
    int rc = o && batch && top ? MNEMO_OK : core_error(m, MNEMO_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < s->n; i++) {
        mcand *c = &s->v[i];
        double v = c->vec < 0 ? 0 : c->vec;
        o[i] = (relord){ran ? 1.0 - (1.0 - c->text) * (1.0 - wv * v) : c->text, c};
    }
    if (!rc && s->n > 1)
        qsort(o, s->n, sizeof *o, by_relord);
    size_t ntop = 0, want = FACTOR_BATCH;
    for (size_t i = 0; !rc && i < s->n; i++) {
        mcand *c = o[i].c;
        if (ntop == need && o[i].rel * bound < top[0])
            break;
        if (!c->has_factors) {
            size_t nb = 0;
            for (size_t j = i; j < s->n && nb < want; j++)
                if (!o[j].c->has_factors)
                    batch[nb++] = o[j].c;
            want *= 2;
            if ((rc = load_factors(m, batch, nb)))
                break;
        }
        double score = c->has_factors ? o[i].rel * mem_factors(m, c, x->user_query, x->now) : 0;
        rank_top_offer(top, &ntop, need, score);
    }
    free(o);
    free(batch);
    free(top);
    return rc;
}

static int pg_factors(mnemo *m, void *ud, mcand *c)
{
    (void)ud;
    if (!c->has_factors) { /* not foreseen by prefetch_factors */
        int rc = load_factors(m, &c, 1);
        if (rc)
            return rc;
    }
    return c->has_factors ? MNEMO_OK : MNEMO_NOTFOUND;
}

static int pg_load(mnemo *m, mcand *c)
{
    (void)m;
    return c->rec ? MNEMO_OK : MNEMO_NOTFOUND;
}

/* Ends the search's read-only transaction. */
static int search_end(mnemo *m, int rc)
{
    if (!rc)
        return pgmem_q(m, "memory search", "COMMIT", 0, NULL, NULL);
    buf keep;
    buf_init(&keep, 0);
    buf_puts(&keep, m->err.data ? m->err.data : "");
    pgmem_q(m, "memory search", "ROLLBACK", 0, NULL, NULL);
    core_error(m, rc, "%s", keep.data ? keep.data : "memory search failed");
    buf_cleanup(&keep);
    return rc;
}

static int pg_run(mnemo *m, const char *text, mem_opts *o, size_t need, mset *s,
                  const char **mode)
{
    *mode = "keyword";
    buf qt;
    buf_init(&qt, 1 << 16);
    int rc = mem_query_text(m, text, &qt);
    const char *qtext = qt.data ? qt.data : "";
    double now = core_now();
    search_ctx x;
    memset(&x, 0, sizeof x);
    buf_init(&x.qvec, 0);
    buf where;
    buf_init(&where, 1 << 20);
    mfilter args;
    mfilter_init(&args);
    pgmem_params p = {0};
    query pq;
    memset(&pq, 0, sizeof pq);
    tok *t = NULL;
    if (!rc && !(rc = pgconn_qtok(m, &t)))
        rc = query_parse(t, qtext, &pq);
    buf scope;
    buf_init(&scope, 1 << 16);
    if (!rc)
        rc = mem_where_pg(o, floor(now), 2, &where, &args);
    if (!rc)
        rc = mem_where_scope_pg(o, 2, &scope, &x.post_ok);
    pgmem_fmt_num(floor(now), x.now_s);
    x.scope = scope.data;
    if (!rc)
        rc = pgmem_params_make(m, &args, 10, &p);
    x.where = where.data;
    x.p = &p;
    x.need = need;
    x.user_query = mem_about_user(qtext, o);
    x.now = now;
    /* The query vector, when a provider is configured and pgvector is there
     * (vec_setup runs its own transactions: before ours). */
    if (!rc && *qtext && pgmem_vec_setup(m, &x.vs)) {
        struct pgmem *ps = pgmem_state(m);
        if (ps && !ps->embedded) {
            ps->embedded = 1;
            pgmem_embed_missing(m, &x.vs); /* memories stored before vectors were possible */
        }
        float *qv = NULL;
        size_t qlen = strlen(qtext);
        buf err;
        buf_init(&err, 4096);
        if (embed_texts(x.vs.e, EMBED_QUERY, &qtext, &qlen, 1, &qv, &err) == MNEMO_OK) {
            pgtext_vector_literal(&x.qvec, qv, embed_dims(x.vs.e));
            x.vectors = !buf_err(&x.qvec);
        }
        free(qv);
        buf_cleanup(&err);
        core_clear(m);
    }
    int began = 0;
    if (!rc && !(rc = pgmem_q(m, "memory search", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                        0, NULL, NULL)))
        began = 1;
    if (!rc && x.vectors)
        rc = pgmem_q(m, "memory search", "SET LOCAL hnsw.ef_search = 200", 0, NULL, NULL);
    double *kcos = NULL;
    kept kk = {0};
    if (!rc && pq.match)
        rc = keyword_leg(m, &pq, &x, s, &kcos, &kk);
    int ran = 0;
    if (!rc && x.vectors)
        rc = vector_leg(m, &x, s, s->n, kcos, &ran);
    if (ran)
        *mode = "hybrid";
    if (!rc && kk.hits && kk.mids && s->n)
        rc = mem_episodes(m, &pq, &kk.kb, kk.hits, kk.mids, need, s, s->n, pg_episodes, NULL);
    kept_cleanup(&kk);
    if (!rc)
        rc = prefetch_factors(m, &x, s, need, ran);
    if (!rc)
        rc = mem_rank(m, qtext, o, ran, need, now, s, pg_factors, NULL);
    if (!rc) /* the records of the results, in the same snapshot */
        rc = load_recs(m, s, need);
    if (began)
        rc = search_end(m, rc);
    free(kcos);
    query_cleanup(&pq);
    pgmem_params_free(&p);
    mfilter_cleanup(&args);
    buf_cleanup(&where);
    buf_cleanup(&scope);
    buf_cleanup(&x.qvec);
    buf_cleanup(&qt);
    return rc;
}

const mem_searcher pgmsearch_searcher = {pg_run, pg_load};

