/*
 * pgkeyword.c - the PostgreSQL backend's keyword leg: BM25 of every matching row
 * from the tsvectors' positions, or MaxScore over mnemo_terms for plain
 * words (see pgstore.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/postgres/pgmaxscore.h"
#include "store/postgres/pgpost.h"
#include "store/postgres/pgschema.h"
#include "store/postgres/pgstore_int.h"
#include "store/postgres/pgtext.h"

static int by_hit(const void *a, const void *b)
{
    const hitrow *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The keyword leg for any query: every matching row is read and scored
 * (df counted over them): the POOL best rows by BM25, and the rows of
 * EXTRA (vector candidates) that match, with their frequencies. */
static int keyword_all(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
                       const int64_t *extra, size_t nextra, double *sum_idf)
{
    char k1[32], b[32], lim[32];
    snprintf(k1, sizeof k1, "%.17g", s->k1);
    snprintf(b, sizeof b, "%.17g", s->b);
    snprintf(lim, sizeof lim, "%zu", pool);
    buf ex;
    buf_init(&ex, 0);
    ps_ids_literal(&ex, extra, nextra);
    const char *p[10] = {s->tenant,        pq->tsq.data, pq->phrases.data, pq->prefix.data, k1, b,
                         lim,              source,       ex.data,          pq->req.data};
    pg_rows *r = NULL;
    int rc = buf_err(&ex) ? MNEMO_NOMEM : MNEMO_OK;
    if (!rc)
        rc = ps_q(s->m, "search",
               "WITH q AS (SELECT x.k::int AS k, string_to_array(x.p, ' ') AS toks, x.pf "
               "FROM unnest($3::text[], $4::bool[]) WITH ORDINALITY AS x(p, pf, k)), "
               "m AS MATERIALIZED (SELECT c.id, c.ntok, c.tsv FROM mnemo_chunks c "
               "WHERE c.tenant = $1 AND c.tsv @@ $2::tsquery AND ($8 = '' OR c.source = $8)), "
               "t AS (SELECT m.id, m.ntok, q.k, least(255, sum(cardinality(u.positions)))::int "
               "AS tf FROM m CROSS JOIN LATERAL unnest(m.tsv) u JOIN q ON cardinality(q.toks) = 1 "
               "AND (u.lexeme = q.toks[1] OR (q.pf AND starts_with(u.lexeme, q.toks[1]))) "
               "GROUP BY m.id, m.ntok, q.k "
               "UNION ALL SELECT m.id, m.ntok, q.k, least(255, mnemo_phrase_tf(m.tsv, q.toks)) "
               "FROM m JOIN q ON cardinality(q.toks) > 1), "
               "h AS MATERIALIZED (SELECT id, ntok, k, tf FROM t WHERE tf > 0), "
               "d AS MATERIALIZED (SELECT k, count(*) AS df FROM h GROUP BY k), "
               "st AS MATERIALIZED (SELECT nchunks::float8 AS n, CASE WHEN nchunks > 0 AND "
               "ntokens > 0 THEN ntokens::float8 / nchunks ELSE 1 END AS avgdl FROM mnemo_corpus "
               "WHERE tenant = $1), "
               "w AS MATERIALIZED (SELECT d.k, ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5)) AS idf "
               "FROM d, st), "
               "s AS (SELECT h.id, h.ntok, array_agg(h.k ORDER BY h.k) AS ks, "
               "array_agg(h.tf ORDER BY h.k) AS tfs, sum(w.idf * h.tf * ($5::float8 + 1) / "
               "(h.tf + $5::float8 * (1 - $6::float8 + $6::float8 * h.ntok / st.avgdl))) AS score, "
               "count(*) FILTER (WHERE h.k = ANY ($10::int[])) AS nreq "
               "FROM h JOIN w USING (k) CROSS JOIN st GROUP BY h.id, h.ntok), "
               "r AS (SELECT id, ntok, ks, tfs, row_number() OVER (ORDER BY score DESC, id) AS rn "
               "FROM s WHERE nreq = cardinality($10::int[])) "
               "SELECT id, ntok, ks, tfs, NULL::bigint[], NULL::float8, NULL::float8 FROM r "
               "WHERE rn <= $7::int OR id = ANY ($9::bigint[]) "
               "UNION ALL SELECT NULL, NULL, NULL, NULL, (SELECT array_agg(coalesce(d.df, 0) "
               "ORDER BY q.k) FROM q LEFT JOIN d USING (k)), (SELECT n FROM st), "
               "(SELECT avgdl FROM st)",
               10, p, &r);
    buf_cleanup(&ex);
    if (rc)
        return rc;
    /* The row without an id carries the statistics, every other a hit. */
    size_t n = pg_nrows(r), last = n;
    for (size_t i = 0; i < n && last == n; i++)
        if (pg_isnull(r, i, 0))
            last = i;
    long long df[BM25_MAX_PHRASES] = {0};
    size_t ndf = last < n ? ps_int_array(pg_value(r, last, 4), df, BM25_MAX_PHRASES) : 0;
    double N = last < n ? strtod(pg_value(r, last, 5), NULL) : 0;
    s->avgdl = last == n || pg_isnull(r, last, 6) ? 1.0 : strtod(pg_value(r, last, 6), NULL);
    s->np = (int)ndf;
    double sum = 0;
    for (int k = 0; k < s->np; k++) {
        s->idf[k] = bm25_idf(N, (double)df[k]);
        if (k < pq->npos)
            sum += s->idf[k];
    }
    *sum_idf = sum > 0 ? sum : 1.0;
    s->hits = calloc(n ? n : 1, sizeof *s->hits);
    if (!s->hits) {
        pg_rows_free(r);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (i == last)
            continue;
        hitrow *h = &s->hits[s->nhits++];
        h->id = ps_ll(r, i, 0);
        h->ntok = (int)ps_ll(r, i, 1);
        long long ks[BM25_MAX_PHRASES] = {0}, tf[BM25_MAX_PHRASES] = {0};
        size_t nk = ps_int_array(pg_value(r, i, 2), ks, BM25_MAX_PHRASES);
        size_t nt = ps_int_array(pg_value(r, i, 3), tf, BM25_MAX_PHRASES);
        for (size_t j = 0; j < nk && j < nt; j++)
            if (ks[j] >= 1 && ks[j] <= BM25_MAX_PHRASES)
                h->tf[ks[j] - 1] = (uint8_t)(tf[j] > 255 ? 255 : tf[j]);
    }
    pg_rows_free(r);
    if (s->nhits > 1)
        qsort(s->hits, s->nhits, sizeof *s->hits, by_hit);
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Keyword leg, MaxScore
 *
 * For queries of single words (no phrases, no prefixes), document
 * frequencies come from mnemo_terms and only the matches of the rarest
 * terms are read. Term k scores at most ub_k, its BM25 at its largest
 * frequency in its shortest chunk (tf_max, ntok_min of mnemo_terms), so a
 * row matching none of the terms read so far scores at most the sum of
 * the other terms' bounds. The first round reads the rarest terms whose
 * matches fill the pool a few times; once the pool is full, the POOL-th
 * best score read is a threshold: the next round reads the rows holding a
 * smallest set of unread terms whose bounds may reach it (a tsquery of
 * conjunctions), after which no unread row can enter the pool and the
 * pool is exactly the one of keyword_all(). When that is too many sets, or
 * the pool is not full, the next rarest terms are read and so on. Each
 * round is one statement returning, per row, its length and the query
 * lexemes of its tsvector (ts_filter of setweight: nothing else is
 * unnested), all in one transaction without sequential scans (see
 * term_stats).
 * -------------------------------------------------------------------- */

#define MAXSCORE_FIRST_FILL 4    /* the first round's terms match the pool this many times */
#define MAXSCORE_SLACK 1e-9      /* relative margin for the bounds' rounding */

typedef struct mcand {
    hitrow h;
    double score;
} mcand;

typedef struct mterms {
    int order[BM25_MAX_PHRASES]; /* terms with matches, rarest first */
    int n, read;                /* terms ordered, the first READ of them read */
    long long df[BM25_MAX_PHRASES];
    double ub[BM25_MAX_PHRASES];
} mterms;

/* The positive phrases' frequencies in T, the text of a tsvector holding
 * query lexemes only ('lex':1A,5A 'other':3A). */
static void tf_of(const pgquery *pq, const char *t, uint8_t *tf)
{
    memset(tf, 0, (size_t)pq->npos);
    char w[512];
    while (*t == '\'') {
        size_t n = 0;
        for (t++; *t; t++) {
            if (*t == '\'' && t[1] != '\'')
                break;
            if ((*t == '\'' || *t == '\\') && t[1] == *t)
                t++;
            if (n + 1 < sizeof w)
                w[n++] = *t;
        }
        w[n] = 0;
        if (*t == '\'')
            t++;
        int npos = 0;
        if (*t == ':')
            for (npos = 1, t++; *t && *t != ' '; t++)
                npos += *t == ',';
        for (int k = 0; k < pq->npos; k++)
            if (!strcmp(pq->words.data + pq->woff[k], w))
                tf[k] = (uint8_t)(npos > 255 ? 255 : npos);
        while (*t == ' ')
            t++;
    }
}

/* Orders candidates best first: score, then id (as the SQLite pool). */
static int by_score(const void *a, const void *b)
{
    const mcand *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return x->h.id < y->h.id ? -1 : x->h.id > y->h.id;
}

static int by_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Reads the rows of R (id, ntok, filtered tsvector[, flag]) into V, those
 * failing the required phrases left out; with FLAG >= 0 only the rows
 * whose fourth column is FLAG. */
static int cands_add(pgsearch *s, const pgquery *pq, pg_rows *r, uint64_t req, int flag,
                     mcand **v, size_t *n, size_t *cap)
{
    size_t rows = pg_nrows(r);
    if (*n + rows > *cap) {
        size_t nc = (*n + rows) * 2;
        mcand *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return core_error(s->m, MNEMO_NOMEM, "out of memory");
        *v = nv;
        *cap = nc;
    }
    for (size_t i = 0; i < rows; i++) {
        if (flag >= 0 && ps_ll(r, i, 3) != flag)
            continue;
        mcand *c = &(*v)[*n];
        memset(c, 0, sizeof *c);
        c->h.id = ps_ll(r, i, 0);
        c->h.ntok = (int)ps_ll(r, i, 1);
        tf_of(pq, pg_value(r, i, 2), c->h.tf);
        uint64_t mask = 0;
        for (int k = 0; k < pq->npos; k++)
            mask |= (uint64_t)(c->h.tf[k] > 0) << k;
        if ((mask & req) != req)
            continue;
        c->score = ps_hit_bm25(s, &c->h);
        (*n)++;
    }
    return MNEMO_OK;
}

/* BM25's statistics for the query's terms: N, avgdl and each term's df
 * in the corpus searched, less the rows an excluded phrase removes (as
 * SQLite counts them), and the bounds of each term's frequency (TF_MAX) and
 * of its chunks' length (NTOK_MIN). With NOSEQ, turns sequential scans off
 * for the rest of the caller's transaction: a tsquery's rows are cheaper
 * through the GIN index than testing every chunk's detoasted tsvector,
 * which the planner cannot see. */
static int term_stats(pgsearch *s, const pgquery *pq, const char *source, int noseq,
                      long long *df, long long *tf_max, long long *ntok_min, double *N)
{
    const char *p[5] = {s->tenant, pq->lexs.data, source, pq->neg.data, pq->ptsq.data};
    pg_rows *r = NULL;
    int neg = pq->neg.len > 0;
    /* The statistics of each phrase in order: lexs holds the non-empty
     * ones. */
#define TERM_STATS                                                                                \
    "SELECT c.nchunks, CASE WHEN c.nchunks > 0 AND c.ntokens > 0 THEN c.ntokens::float8 / "       \
    "c.nchunks ELSE 1 END, t.dfs, t.tfs, t.nms, %s%s FROM mnemo_corpus c, LATERAL (SELECT "     \
    "array_agg(coalesce(st.df, 0) ORDER BY x.k) AS dfs, "                                          \
    "array_agg(coalesce(st.tf, 32767) ORDER BY x.k) AS tfs, array_agg(coalesce(st.nm, 0) "        \
    "ORDER BY x.k) AS nms FROM unnest($2::text[]) WITH ORDINALITY x(lex, k) LEFT JOIN LATERAL "   \
    "(SELECT sum(t.df) AS df, max(t.tf_max) AS tf, min(t.ntok_min) AS nm FROM mnemo_terms t "     \
    "WHERE t.tenant = $1 AND t.lexeme = x.lex AND ($3 = '' OR t.source = $3)) st ON true) t "     \
    "WHERE c.tenant = $1"
    char sql[2048];
    snprintf(sql, sizeof sql, TERM_STATS,
             noseq ? "set_config('enable_seqscan', 'off', true)" : "NULL",
             neg ? ", (SELECT array_agg((SELECT count(*) FROM mnemo_chunks m WHERE m.tenant = $1 "
                   "AND ($3 = '' OR m.source = $3) AND m.tsv @@ (x.q && $4::tsquery)) ORDER BY "
                   "x.k) FROM unnest($5::tsquery[]) WITH ORDINALITY x(q, k))"
                 : "");
#undef TERM_STATS
    int rc = ps_q(s->m, "search", sql, neg ? 5 : 3, p, &r);
    if (rc)
        return rc;
    long long stored[BM25_MAX_PHRASES] = {0}, out[BM25_MAX_PHRASES] = {0};
    long long tfs[BM25_MAX_PHRASES] = {0}, nms[BM25_MAX_PHRASES] = {0};
    size_t nstored = 0, ntfs = 0, nnms = 0;
    *N = 0;
    s->avgdl = 1.0;
    if (pg_nrows(r) == 1) {
        *N = strtod(pg_value(r, 0, 0), NULL);
        s->avgdl = strtod(pg_value(r, 0, 1), NULL);
        nstored = ps_int_array(pg_value(r, 0, 2), stored, BM25_MAX_PHRASES);
        ntfs = ps_int_array(pg_value(r, 0, 3), tfs, BM25_MAX_PHRASES);
        nnms = ps_int_array(pg_value(r, 0, 4), nms, BM25_MAX_PHRASES);
        if (neg)
            ps_int_array(pg_value(r, 0, 6), out, BM25_MAX_PHRASES);
    }
    pg_rows_free(r);
    size_t j = 0;
    for (int k = 0; k < pq->npos; k++) {
        df[k] = 0;
        tf_max[k] = MAX_POSITIONS + 1; /* no bound known: the loosest */
        ntok_min[k] = 0;
        if (!pq->words.data[pq->woff[k]])
            continue; /* nothing searchable: matches nothing */
        long long d = j < nstored ? stored[j] : 0;
        if (j < ntfs && j < nnms) {
            tf_max[k] = tfs[j];
            ntok_min[k] = nms[j];
        }
        j++;
        d -= out[k];
        df[k] = d > 0 ? d : 0;
    }
    return MNEMO_OK;
}

/* One keyword_maxscore's rounds (pgms callbacks): the candidates read,
 * the extra rows that match, the scores' scratch. */
typedef struct mrounds {
    pgsearch *s;
    const pgquery *pq;
    const char *source;
    size_t pool, nextra;
    uint64_t req;
    buf ex;
    mcand *v, *x;
    size_t n, cap, nx, capx;
    double *top;
} mrounds;

static int mround_read(void *ud, const char *tsq, int round)
{
    mrounds *r = ud;
    pgsearch *s = r->s;
    const pgquery *pq = r->pq;
    int with_extra = round == 0 && r->nextra > 0;
    /* The extra rows must match the query as a whole ($6). */
    const char *p[6] = {s->tenant, tsq, pq->lexs.data, r->source, r->ex.data, pq->tsq.data};
    pg_rows *rows = NULL;
    int rc = ps_q(s->m, "search",
               with_extra
                   ? "SELECT c.id, c.ntok, ts_filter(setweight(c.tsv, 'A', $3::text[]), "
                     "'{a}')::text, 0 FROM mnemo_chunks c WHERE c.tenant = $1 AND c.tsv @@ "
                     "$2::tsquery AND ($4 = '' OR c.source = $4) UNION ALL SELECT c.id, c.ntok, "
                     "ts_filter(setweight(c.tsv, 'A', $3::text[]), '{a}')::text, 1 FROM "
                     "mnemo_chunks c WHERE c.tenant = $1 AND c.id = ANY ($5::bigint[]) AND "
                     "c.tsv @@ $6::tsquery AND ($4 = '' OR c.source = $4)"
                   : "SELECT c.id, c.ntok, ts_filter(setweight(c.tsv, 'A', $3::text[]), "
                     "'{a}')::text FROM mnemo_chunks c WHERE c.tenant = $1 AND c.tsv @@ "
                     "$2::tsquery AND ($4 = '' OR c.source = $4)",
               with_extra ? 6 : 4, p, &rows);
    if (rc)
        return rc;
    rc = cands_add(s, pq, rows, r->req, with_extra ? 0 : -1, &r->v, &r->n, &r->cap);
    if (!rc && with_extra)
        rc = cands_add(s, pq, rows, r->req, 1, &r->x, &r->nx, &r->capx);
    pg_rows_free(rows);
    return rc;
}

/* Full once POOL candidates are read; the POOL-th best score is the
 * threshold. */
static int mround_full(void *ud, double *theta)
{
    mrounds *r = ud;
    if (r->n < r->pool)
        return 0;
    double *nt = realloc(r->top, r->n * sizeof *nt);
    if (!nt)
        return 0; /* read on: only slower */
    r->top = nt;
    for (size_t i = 0; i < r->n; i++)
        nt[i] = r->v[i].score;
    qsort(nt, r->n, sizeof *nt, by_desc);
    *theta = nt[r->pool - 1];
    return 1;
}

static int mround_reach(void *ud, double theta, double bound)
{
    (void)ud;
    return !(theta > bound * (1.0 + MAXSCORE_SLACK));
}

static int keyword_maxscore(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
                            const int64_t *extra, size_t nextra, double *sum_idf)
{
    mterms t;
    memset(&t, 0, sizeof t);
    double N;
    long long tf_max[BM25_MAX_PHRASES], ntok_min[BM25_MAX_PHRASES];
    /* One transaction: term_stats turns sequential scans off for it. */
    pg_conn *c;
    int rc = pgschema_conn(s->m, &c);
    int txn = !rc && !pg_in_transaction(c);
    if (txn)
        rc = ps_q(s->m, "search", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = term_stats(s, pq, source, txn, t.df, tf_max, ntok_min, &N);
    if (rc) {
        if (txn)
            ps_q(s->m, "search", "ROLLBACK", 0, NULL, NULL);
        return rc;
    }
    s->np = pq->npos;
    double sum = 0;
    for (int k = 0; k < s->np; k++) {
        s->idf[k] = bm25_idf(N, (double)t.df[k]);
        sum += s->idf[k];
        /* Term k's score is largest at its largest frequency in its
         * shortest chunk (hit_bm25 grows with tf, shrinks with length). */
        double f = tf_max[k] > 0 && tf_max[k] <= MAX_POSITIONS ? (double)tf_max[k] : 0;
        double len = ntok_min[k] > 0 ? (double)ntok_min[k] : 0;
        double norm = bm25_norm(s->k1, s->b, len, s->avgdl);
        t.ub[k] = f > 0 ? bm25_part(1.0, s->idf[k], f, s->k1, norm) : s->idf[k] * (s->k1 + 1.0);
    }
    *sum_idf = sum > 0 ? sum : 1.0;
    uint64_t req = s->qy->required & (pq->npos >= 64 ? ~(uint64_t)0
                                                     : (((uint64_t)1 << pq->npos) - 1));
    /* The terms with matches, rarest first; a required term without any
     * leaves nothing to find. With required terms, the rarest of them
     * holds every candidate: it is the only one read. */
    for (int k = 0; k < pq->npos; k++) {
        if (t.df[k] > 0) {
            int i = t.n++;
            while (i > 0 && t.df[t.order[i - 1]] > t.df[k]) {
                t.order[i] = t.order[i - 1];
                i--;
            }
            t.order[i] = k;
        } else if (req & ((uint64_t)1 << k)) {
            t.n = 0;
            break;
        }
    }
    int first = 0;
    if (req && t.n) {
        int i = 0;
        while (!(req & ((uint64_t)1 << t.order[i])))
            i++;
        int k = t.order[i];
        t.order[0] = k;
        t.n = 1;
        first = 1;
    } else if (t.n) {
        /* The rarest terms whose matches fill the pool a few times over. */
        long long rows = t.df[t.order[0]];
        for (first = 1; first < t.n && rows < (long long)pool * MAXSCORE_FIRST_FILL; first++)
            rows += t.df[t.order[first]];
    }
    mrounds mr;
    memset(&mr, 0, sizeof mr);
    mr.s = s;
    mr.pq = pq;
    mr.source = source;
    mr.pool = pool;
    mr.req = req;
    buf tail;
    buf_init(&tail, 0);
    buf_init(&mr.ex, 0);
    ps_ids_literal(&mr.ex, extra, nextra);
    mr.nextra = nextra;
    if (pq->neg.len)
        buf_printf(&tail, " & !(%s)", pq->neg.data);
    pgms ms;
    memset(&ms, 0, sizeof ms);
    ms.n = t.n;
    for (int i = 0; i < t.n; i++) {
        ms.lex[i] = pq->words.data + pq->woff[t.order[i]];
        ms.ub[i] = t.ub[t.order[i]];
    }
    ms.first = first;
    ms.sets = 1;
    ms.advance = 1;
    ms.tail = tail.data ? tail.data : "";
    ms.read = mround_read;
    ms.full = mround_full;
    ms.reach = mround_reach;
    ms.ud = &mr;
    if (buf_err(&tail) || buf_err(&mr.ex))
        rc = core_error(s->m, MNEMO_NOMEM, "out of memory");
    else if (t.n)
        rc = pgms_run(s->m, &ms);
    mcand *v = mr.v, *x = mr.x;
    size_t n = mr.n, nx = mr.nx;
    if (txn)
        ps_q(s->m, "search", rc ? "ROLLBACK" : "COMMIT", 0, NULL, NULL);
    /* The POOL best, and the extra rows that match. */
    if (!rc) {
        if (n > 1)
            qsort(v, n, sizeof *v, by_score);
        if (n > pool)
            n = pool;
        s->hits = calloc(n + nx + 1, sizeof *s->hits);
        if (!s->hits)
            rc = core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            s->hits[s->nhits++] = v[i].h;
        for (size_t i = 0; i < nx; i++)
            s->hits[s->nhits++] = x[i].h;
        if (s->nhits > 1)
            qsort(s->hits, s->nhits, sizeof *s->hits, by_hit);
        size_t k = 0;
        for (size_t i = 0; i < s->nhits; i++)
            if (!k || s->hits[k - 1].id != s->hits[i].id)
                s->hits[k++] = s->hits[i];
        s->nhits = k;
    }
    buf_cleanup(&tail);
    buf_cleanup(&mr.ex);
    free(mr.top);
    free(x);
    free(v);
    return rc;
}

/* The keyword leg: MaxScore when it applies (see above), else every
 * match. */
int ps_keyword_leg(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
                   const int64_t *extra, size_t nextra, double *sum_idf)
{
    if (pq->simple && pq->npos > 0 && pool > 0 && !pq->neg.len) {
        int rc = pgpost_leg(s, pq, source, pool, extra, nextra, sum_idf);
        if (rc != MNEMO_NOTFOUND)
            return rc;
        core_clear(s->m);
    }
    if (pq->simple && pq->npos > 0 && pool > 0 && s->k1 >= 0 && s->b >= 0 && s->b <= 1)
        return keyword_maxscore(s, pq, source, pool, extra, nextra, sum_idf);
    return keyword_all(s, pq, source, pool, extra, nextra, sum_idf);
}

