/*
 * pgkeyword.c - the PostgreSQL backend's keyword leg: the inverted index for
 * whole words (pgnpost.c), else BM25 of every matching row from the
 * tsvectors' positions (see pgstore.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/postgres/pgint.h"

static int by_hit(const void *a, const void *b)
{
    const hitrow *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The keyword leg for any query: every matching row is read and scored
 * (df counted over them): the POOL best rows by BM25, and the rows of
 * EXTRA (vector candidates) that match, with their frequencies. The rows
 * are found by id, among the candidates of the postings (pgnpost.c) and the
 * chunks above their mark; without postings, among all the tenant's. */
static int keyword_all(pgsearch *s, const pgsearch_query *pq, const char *source, size_t pool,
                       const int64_t *extra, size_t nextra, double *sum_idf)
{
    int64_t *cand = NULL, mark = -1;
    size_t ncand = 0;
    int rc = pgnpost_candidates(s, pq, 0, pq->npos, source, &cand, &ncand, &mark);
    if (rc == MNEMO_NOTFOUND) {
        rc = MNEMO_OK;
        mark = -1;
    }
    if (rc)
        return rc;
    char k1[32], b[32], lim[32], mk[32];
    snprintf(k1, sizeof k1, "%.17g", s->k1);
    snprintf(b, sizeof b, "%.17g", s->b);
    snprintf(lim, sizeof lim, "%zu", pool);
    snprintf(mk, sizeof mk, "%lld", (long long)mark);
    buf ex, ids;
    buf_init(&ex, 0);
    buf_init(&ids, 0);
    pgstore_ids_literal(&ex, extra, nextra);
    pgstore_ids_literal(&ids, cand, ncand);
    free(cand);
    const char *p[12] = {s->tenant, pq->tsq.data, pq->phrases.data, pq->prefix.data,
                         k1,        b,            lim,              source,
                         ex.data,   pq->req.data, ids.data,         mk};
    pg_rows *r = NULL;
    rc = buf_err(&ex) || buf_err(&ids) ? MNEMO_NOMEM : MNEMO_OK;
    if (!rc)
        rc = pgstore_q(s->m, "search",
               "WITH q AS (SELECT x.k::int AS k, string_to_array(x.p, ' ') AS toks, x.pf "
               "FROM unnest($3::text[], $4::bool[]) WITH ORDINALITY AS x(p, pf, k)), "
               "m AS MATERIALIZED (SELECT c.id, c.ntok, c.tsv FROM mnemo_chunks c "
               "WHERE c.tenant = $1 AND c.id = ANY ($11::bigint[]) AND c.id <= $12::bigint "
               "AND c.tsv @@ $2::tsquery AND ($8 = '' OR c.source = $8) "
               "UNION ALL SELECT c.id, c.ntok, c.tsv FROM mnemo_chunks c WHERE $12::bigint >= 0 "
               "AND c.tenant = $1 AND c.id > $12::bigint AND c.tsv @@ $2::tsquery AND "
               "($8 = '' OR c.source = $8) "
               "UNION ALL SELECT c.id, c.ntok, c.tsv FROM mnemo_chunks c WHERE $12::bigint < 0 "
               "AND c.tenant = $1 AND c.tsv @@ $2::tsquery AND ($8 = '' OR c.source = $8)), "
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
               12, p, &r);
    buf_cleanup(&ex);
    buf_cleanup(&ids);
    if (rc)
        return rc;
    /* The row without an id carries the statistics, every other a hit. */
    size_t n = pg_nrows(r), last = n;
    for (size_t i = 0; i < n && last == n; i++)
        if (pg_isnull(r, i, 0))
            last = i;
    long long df[BM25_MAX_PHRASES] = {0};
    size_t ndf = last < n ? pgstore_int_array(pg_value(r, last, 4), df, BM25_MAX_PHRASES) : 0;
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
        h->id = pgstore_ll(r, i, 0);
        h->ntok = (int)pgstore_ll(r, i, 1);
        long long ks[BM25_MAX_PHRASES] = {0}, tf[BM25_MAX_PHRASES] = {0};
        size_t nk = pgstore_int_array(pg_value(r, i, 2), ks, BM25_MAX_PHRASES);
        size_t nt = pgstore_int_array(pg_value(r, i, 3), tf, BM25_MAX_PHRASES);
        for (size_t j = 0; j < nk && j < nt; j++)
            if (ks[j] >= 1 && ks[j] <= BM25_MAX_PHRASES)
                h->tf[ks[j] - 1] = (uint8_t)(tf[j] > 255 ? 255 : tf[j]);
    }
    pg_rows_free(r);
    if (s->nhits > 1)
        qsort(s->hits, s->nhits, sizeof *s->hits, by_hit);
    return MNEMO_OK;
}

/* The keyword leg: the postings (pgnpost.c) for whole words (excluded
 * phrases too), else (phrases, prefixes, or a tenant not synced since the
 * postings exist) every match. */
int pgkeyword_leg(pgsearch *s, const pgsearch_query *pq, const char *source, size_t pool,
                  const int64_t *extra, size_t nextra, double *sum_idf)
{
    if (pq->simple && pq->npos > 0 && pool > 0) {
        int rc = pgnpost_leg(s, pq, source, pool, extra, nextra, sum_idf);
        if (rc != MNEMO_NOTFOUND)
            return rc;
        core_clear(s->m);
    }
    return keyword_all(s, pq, source, pool, extra, nextra, sum_idf);
}

