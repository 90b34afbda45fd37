/*
 * pgnpost.c - the notes' chunks in the inverted index (see pgint.h): the
 * sync's merge policy and the keyword leg's reading, over pgpost.c's
 * segments, folding and lists. The scope of a key is the chunk's source
 * (memory or sessions); a document is a chunk id.
 *
 * Writes. Sync adds each chunk it inserts; at a batch's commit, once enough
 * postings wait (and always at the last commit) they become one new segment
 * per lexeme and the mark moves to the largest id, in the batch's
 * transaction: the segments never disagree with the chunks committed. A
 * segment's `gen` is the mark it was written at. A deleted chunk at or
 * below the mark is recorded dead by the statement that deletes it
 * (PGNPOST_DEAD). A lexeme with more than POST_GENS segments is folded into
 * one, dead chunks left out; when dead chunks pass a share of the corpus,
 * every lexeme is, and the dead list is emptied.
 *
 * Reads. One statement returns, in one snapshot, the query lexemes'
 * segments, the dead ids, the query's matches among chunks above the mark
 * (from their tsvectors) and the corpus statistics; the mark it read is
 * checked against the one the statement assumed (a sync may move it
 * between searches) and the statement repeated when they differ. Every
 * match is then scored (document at a time over the terms' lists, BM25 as
 * fts.c computes it) and the best kept (topk.h): the pool is exact
 * without bounds or rounds.
 */
#include "store/postgres/pgint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/blockmax.h"
#include "engine/topk.h"
#include "util/utf8.h"

#define POST_FLUSH (4u << 20) /* postings waiting before a batch writes them */
#define POST_GENS 8           /* segments of a lexeme before they are folded */
#define POST_FOLD 256         /* lexemes folded per statement */
#define POST_KEYS 20000       /* keys written past which folding looks at every lexeme */
#define POST_DEAD_MIN 1024    /* dead chunks before every lexeme is folded ... */
#define POST_DEAD_SHARE 16    /* ... or more than 1/16 of the corpus */

/* The segments: key (source, lexeme), the postings' encoding. */
static const pgpost_table postings = {
    2,
    "INSERT INTO mnemo_postings(tenant, source, lexeme, gen, n, data) SELECT $1, x.s, x.l, x.g, "
    "x.n, x.d FROM unnest($2::text[], $3::text[], $4::bigint[], $5::int[], $6::bytea[]) AS "
    "x(s, l, g, n, d)",
    "writing the index",
    "a segment of the keyword index is damaged (run `mnemo index --force`)",
    pgpost_tail,
};

/* ----------------------------------------------------------------------
 * Writing
 * -------------------------------------------------------------------- */

struct pgnpost {
    mnemo *m;
    const char *tenant;
    int64_t merged, maxid; /* the mark; the largest id added */
    pgterms terms;
    /* the chunk being added: its key's scope (source) in key */
    int64_t id;
    int ntok;
    size_t scope;
    buf key, w;
};

/* Starts chunk ID of SOURCE, NTOK long. */
static void chunk_start(pgnpost *p, int64_t id, const char *source, int ntok)
{
    p->id = id;
    p->ntok = ntok;
    if (id > p->maxid)
        p->maxid = id;
    buf_reset(&p->key);
    buf_puts(&p->key, source);
    buf_putc(&p->key, 0);
    p->scope = p->key.len;
}

static int add_lexeme(void *ud, const char *lex, size_t n, int npos)
{
    pgnpost *p = ud;
    return pgpost_terms_post(&p->terms, &p->key, p->scope, lex, n, p->id, npos, p->ntok);
}

int pgnpost_add(pgnpost *p, int64_t id, const char *source, int ntok, const char *tsv)
{
    chunk_start(p, id, source, ntok);
    int rc = pgpost_tsv_each(tsv, &p->w, add_lexeme, p);
    return rc ? core_error(p->m, rc, "out of memory") : MNEMO_OK;
}

int pgnpost_add_bin(pgnpost *p, int64_t id, const char *source, int ntok, const unsigned char *t,
                    size_t n)
{
    chunk_start(p, id, source, ntok);
    const unsigned char *end = t + n;
    if (n < 4)
        return core_error(p->m, MNEMO_INVALID, "a tsvector without its count");
    uint32_t nlex = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
    t += 4;
    for (uint32_t i = 0; i < nlex; i++) {
        const unsigned char *z = memchr(t, 0, (size_t)(end - t));
        if (!z || end - z < 3)
            return core_error(p->m, MNEMO_INVALID, "a tsvector cut short");
        int npos = z[1] << 8 | z[2];
        if (end - (z + 3) < 2 * npos)
            return core_error(p->m, MNEMO_INVALID, "a tsvector cut short");
        if (add_lexeme(p, (const char *)t, (size_t)(z - t), npos ? npos : 1))
            return core_error(p->m, MNEMO_NOMEM, "out of memory");
        t = z + 3 + 2 * npos;
    }
    return MNEMO_OK;
}

/* Folds each listed lexeme's segments into one (at the largest gen), the
 * dead chunks left out: (source, lexeme) pairs as two text array literals. */
static int fold_keys(pgnpost *p, const char *srcs, const char *lexs, const int64_t *dead,
                     size_t ndead)
{
    const char *prm[3] = {p->tenant, srcs, lexs};
    pg_rows *r = NULL;
    int rc =
        pgstore_q(p->m, "folding the index",
                  "DELETE FROM mnemo_postings p USING unnest($2::text[], $3::text[]) AS k(s, l) "
                  "WHERE p.tenant = $1 AND p.source = k.s AND p.lexeme = k.l "
                  "RETURNING p.source, p.lexeme, p.gen, p.data::text",
                  3, prm, &r);
    if (!rc)
        rc = pgpost_fold(p->m, &postings, p->tenant, r, 2, dead, ndead);
    pg_rows_free(r);
    return rc;
}

/* Folds the lexemes with more than POST_GENS segments (among the keys in
 * the array literals KSRC and KLEX when not NULL), or every lexeme (then
 * empties the dead list) when ALL. */
static int fold(pgnpost *p, int all, const char *ksrc, const char *klex)
{
    int64_t *dead = NULL;
    size_t ndead = 0;
    int rc = pgpost_ids(p->m, "reading the index",
                        "SELECT id FROM mnemo_post_dead WHERE tenant = $1 ORDER BY id", p->tenant,
                        &dead, &ndead);
    char gens[16];
    snprintf(gens, sizeof gens, "%d", all ? 0 : POST_GENS);
    const char *prm[4] = {p->tenant, gens, ksrc, klex};
    pg_rows *r = NULL;
    if (!rc && (all || !ksrc))
        rc = pgstore_q(p->m, "folding the index",
                       "SELECT source, lexeme FROM mnemo_postings WHERE tenant = $1 GROUP BY 1, 2 "
                       "HAVING count(*) > $2::int",
                       2, prm, &r);
    else if (!rc)
        rc = pgstore_q(
            p->m, "folding the index",
            "SELECT p.source, p.lexeme FROM mnemo_postings p JOIN unnest($3::text[], "
            "$4::text[]) AS k(s, l) ON p.source = k.s AND p.lexeme = k.l WHERE p.tenant = "
            "$1 GROUP BY 1, 2 HAVING count(*) > $2::int",
            4, prm, &r);
    buf srcs, lexs;
    buf_init(&srcs, 0);
    buf_init(&lexs, 0);
    size_t rows = rc ? 0 : pg_nrows(r);
    for (size_t i = 0; !rc && i < rows; i += POST_FOLD) {
        buf_reset(&srcs);
        buf_reset(&lexs);
        buf_putc(&srcs, '{');
        buf_putc(&lexs, '{');
        for (size_t j = i; j < rows && j < i + POST_FOLD; j++) {
            pgstore_arr_add(&srcs, pg_value(r, j, 0), strlen(pg_value(r, j, 0)));
            pgstore_arr_add(&lexs, pg_value(r, j, 1), strlen(pg_value(r, j, 1)));
        }
        buf_putc(&srcs, '}');
        buf_putc(&lexs, '}');
        if (buf_err(&srcs) || buf_err(&lexs))
            rc = core_error(p->m, MNEMO_NOMEM, "out of memory");
        else
            rc = fold_keys(p, srcs.data, lexs.data, dead, ndead);
    }
    if (!rc && all) {
        const char *p1[1] = {p->tenant};
        rc = pgstore_q(p->m, "folding the index", "DELETE FROM mnemo_post_dead WHERE tenant = $1",
                       1, p1, NULL);
    }
    pg_rows_free(r);
    buf_cleanup(&srcs);
    buf_cleanup(&lexs);
    free(dead);
    return rc;
}

/* Folds when a merge wrote segments (WROTE: among the keys KSRC, KLEX, or
 * all of them when NULL) or the dead chunks pass their share. */
static int fold_due(pgnpost *p, int wrote, const char *ksrc, const char *klex)
{
    const char *prm[1] = {p->tenant};
    pg_rows *r = NULL;
    int rc = pgstore_q(p->m, "writing the index",
                       "SELECT (SELECT count(*) FROM mnemo_post_dead WHERE tenant = $1), "
                       "(SELECT nchunks FROM mnemo_corpus WHERE tenant = $1)",
                       1, prm, &r);
    if (rc)
        return rc;
    long long ndead = pgstore_ll(r, 0, 0), nchunks = pgstore_ll(r, 0, 1);
    pg_rows_free(r);
    int all = ndead > POST_DEAD_MIN && ndead > nchunks / POST_DEAD_SHARE;
    return all || wrote ? fold(p, all, ksrc, klex) : MNEMO_OK;
}

/* The keys waiting as two array literals (sources, lexemes). */
static void key_arrays(const pgterms *t, buf *ksrc, buf *klex)
{
    buf_putc(ksrc, '{');
    buf_putc(klex, '{');
    for (size_t i = 0; i < t->cap; i++) {
        const char *part[2];
        if (!t->t[i].key)
            continue;
        pgpost_key_parts(t->t[i].key, 2, part);
        pgstore_arr_add(ksrc, part[0], strlen(part[0]));
        pgstore_arr_add(klex, part[1], strlen(part[1]));
    }
    buf_putc(ksrc, '}');
    buf_putc(klex, '}');
}

/* The postings waiting as one segment per key at GEN, and the mark moved
 * there. */
static int write_terms(pgnpost *p, int64_t gen)
{
    pgpost_segs g;
    pgpost_segs_init(&g, &postings, p->tenant);
    int rc = pgpost_segs_terms(p->m, &g, &p->terms, (long long)gen);
    pgpost_segs_cleanup(&g);
    char mark[32];
    snprintf(mark, sizeof mark, "%lld", (long long)gen);
    const char *prm[2] = {p->tenant, mark};
    if (!rc)
        rc = pgstore_q(p->m, "writing the index",
                       "INSERT INTO mnemo_post_state(tenant, merged) VALUES ($1, $2::bigint) "
                       "ON CONFLICT (tenant) DO UPDATE SET merged = excluded.merged",
                       2, prm, NULL);
    return rc;
}

int pgnpost_due(const pgnpost *p)
{
    return p && p->terms.posts >= POST_FLUSH;
}

int pgnpost_pending(const pgnpost *p)
{
    return p && (p->terms.used || p->maxid > p->merged);
}

int pgnpost_flush(pgnpost *p, int final)
{
    if (!p || (!final && p->terms.posts < POST_FLUSH))
        return MNEMO_OK;
    /* A last commit with nothing to write still looks at the dead. */
    int wrote = pgnpost_pending(p);
    int64_t gen = p->maxid > p->merged ? p->maxid : p->merged;
    /* The keys written, to look for lexemes with too many segments among
     * them (all of them past a size: one scan is cheaper then). */
    int keys = p->terms.used <= POST_KEYS;
    buf ksrc, klex;
    buf_init(&ksrc, 0);
    buf_init(&klex, 0);
    if (keys)
        key_arrays(&p->terms, &ksrc, &klex);
    int rc = wrote ? write_terms(p, gen) : MNEMO_OK;
    if (!rc && (buf_err(&ksrc) || buf_err(&klex)))
        rc = core_error(p->m, MNEMO_NOMEM, "out of memory");
    if (!rc) {
        p->merged = gen;
        pgpost_terms_cleanup(&p->terms);
        rc = fold_due(p, wrote, keys ? ksrc.data : NULL, keys ? klex.data : NULL);
    }
    buf_cleanup(&ksrc);
    buf_cleanup(&klex);
    return rc;
}

int pgnpost_reset(mnemo *m, const char *tenant)
{
    const char *prm[1] = {tenant};
    int rc =
        pgstore_q(m, "rebuilding", "DELETE FROM mnemo_postings WHERE tenant = $1", 1, prm, NULL);
    if (!rc)
        rc = pgstore_q(m, "rebuilding", "DELETE FROM mnemo_post_dead WHERE tenant = $1", 1, prm,
                       NULL);
    if (!rc)
        rc = pgstore_q(m, "rebuilding",
                       "INSERT INTO mnemo_post_state(tenant, merged) VALUES ($1, 0) ON CONFLICT "
                       "(tenant) DO UPDATE SET merged = 0",
                       1, prm, NULL);
    return rc;
}

void pgnpost_free(pgnpost *p)
{
    if (!p)
        return;
    pgpost_terms_cleanup(&p->terms);
    buf_cleanup(&p->key);
    buf_cleanup(&p->w);
    free(p);
}

/* What waits, written in a transaction of its own. */
static int flush_alone(pgnpost *p)
{
    if (p->merged < 0)
        p->merged = 0;
    int rc = pgstore_q(p->m, "merging the index", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = pgnpost_flush(p, 1);
    if (!rc)
        return pgstore_q(p->m, "merging the index", "COMMIT", 0, NULL, NULL);
    pgstore_q(p->m, "merging the index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

/* A page of chunks above the mark (id, source, ntok, tsv) added
 * (pgpost_pages' FN); a large backlog (a database indexed before the
 * postings) is written as it is read, not held. */
static int add_page(void *ud, const pg_rows *r, int more)
{
    pgnpost *p = ud;
    int rc = MNEMO_OK;
    for (size_t i = 0; !rc && i < pg_nrows(r); i++)
        rc = pgnpost_add(p, pgstore_ll(r, i, 0), pg_value(r, i, 1), (int)pgstore_ll(r, i, 2),
                         pg_value(r, i, 3));
    if (!rc && more && p->terms.posts >= POST_FLUSH)
        rc = flush_alone(p);
    return rc;
}

int pgnpost_open(mnemo *m, const char *tenant, pgnpost **out)
{
    *out = NULL;
    pgnpost *p = calloc(1, sizeof *p);
    if (!p)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    p->m = m;
    p->tenant = tenant;
    buf_init(&p->key, 0);
    buf_init(&p->w, 0);
    const char *prm[2] = {tenant, NULL};
    pg_rows *r = NULL;
    int rc = pgstore_q(
        m, "reading the index",
        "SELECT coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1)", 1, prm, &r);
    if (!rc) {
        p->merged = pgstore_ll(r, 0, 0);
        pg_rows_free(r);
    }
    /* Chunks above the mark: a batch an earlier sync did not merge, or
     * chunks stored before the index existed (images and audio, above
     * every note, are never merged: they hold no words). */
    int64_t from = p->merged, after = from;
    if (!rc)
        rc = pgpost_pages(m, "merging the index",
                          "SELECT id, source, ntok, tsv::text FROM mnemo_chunks WHERE tenant = $1 "
                          "AND id > $2::bigint AND id < " PGSTORE_MEDIA_IDS " ORDER BY id LIMIT "
                          "2000",
                          2, prm, &after, add_page, p);
    if (!rc && (after > from || p->merged < 0)) {
        rc = flush_alone(p);
        if (!rc) {
            /* The state row exists now even when there was nothing. */
            const char *p2[2] = {tenant, "0"};
            rc = pgstore_q(m, "merging the index",
                           "INSERT INTO mnemo_post_state(tenant, merged) VALUES ($1, $2::bigint) "
                           "ON CONFLICT (tenant) DO NOTHING",
                           2, p2, NULL);
        }
    }
    if (rc) {
        pgnpost_free(p);
        return rc;
    }
    *out = p;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

static int by_posting(const void *a, const void *b)
{
    const pgposting *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_hitid(const void *a, const void *b)
{
    const hitrow *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The mark this handle saw last (-1: none seen), kept across searches. */
static int64_t *s_mark(pgsearch *s)
{
    struct pgstore *st = pgstore_state(s->m);
    if (st && !st->post_seen) {
        st->post_mark = -1;
        st->post_seen = 1;
    }
    return st ? &st->post_mark : NULL;
}

/* One snapshot of what the leg needs for the mark MARK: rows (kind, source,
 * lexeme, gen or id, text). */
static int read_snapshot(pgsearch *s, const pgsearch_query *pq, const char *source, int64_t mark,
                         pg_rows **out)
{
#define SNAPSHOT                                                                                  \
    "SELECT 0 AS k, p.source, p.lexeme, p.gen, p.data::text FROM mnemo_postings p "              \
    "WHERE p.tenant = $1 AND p.lexeme = ANY ($2::text[]) AND ($3 = '' OR p.source = "            \
    "$3) AND p.gen <= $5::bigint "                                                                \
    "UNION ALL SELECT 1, NULL, NULL, d.id, NULL FROM mnemo_post_dead d WHERE "                   \
    "d.tenant = $1 "                                                                              \
    "UNION ALL SELECT 2, NULL, NULL, c.id, c.ntok || ' ' || ts_filter(setweight(c.tsv, "         \
    "'A', $2::text[]), '{a}')::text FROM (SELECT id, ntok, source, tsv FROM "                    \
    "mnemo_chunks WHERE tenant = $1 AND id > $5::bigint OFFSET 0) c WHERE c.tsv @@ "            \
    "$4::tsquery AND ($3 = '' OR c.source = $3) "                                                 \
    "UNION ALL SELECT 3, c.xmin::text, c.nchunks::text, coalesce(s.merged, -1), CASE WHEN "      \
    "c.nchunks > 0 AND c.ntokens > 0 THEN (c.ntokens::float8 / c.nchunks)::text ELSE "           \
    "'1' END FROM mnemo_corpus c LEFT JOIN mnemo_post_state s ON s.tenant = c.tenant "           \
    "WHERE c.tenant = $1 "
    static const char sql[] = SNAPSHOT "ORDER BY 1, 2, 3, 4";
#undef SNAPSHOT
    char w[32];
    snprintf(w, sizeof w, "%lld", (long long)mark);
    const char *prm[5] = {s->tenant, pq->lexs.data, source, pq->tsq.data, w};
    return pgstore_qp(s->m, "search", sql, 5, prm, out);
}

/* Drops the postings of L whose ids are in the sorted OUT[0..NOUT). */
static void drop_ids(pgpost_list *l, const int64_t *out, size_t nout)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; nout && i < l->n; i++) {
        while (j < nout && out[j] < l->v[i].id)
            j++;
        if (j < nout && out[j] == l->v[i].id)
            continue;
        l->v[k++] = l->v[i];
    }
    if (nout)
        l->n = k;
}

/* The ids, sorted, of the merged chunks that hold an excluded phrase of
 * PQ, as SQLite counts them: the postings of each one's lexemes, and where
 * a phrase has more than one, the rows holding them all checked. */
static int excluded_ids(pgsearch *s, const pgsearch_query *pq, const char *source, int64_t **out,
                        size_t *nout)
{
    int64_t mark;
    int rc = pgnpost_candidates(s, pq, pq->npos, pq->np, source, out, nout, &mark);
    if (rc || !pq->negmulti || !*nout)
        return rc;
    buf ids;
    buf_init(&ids, 0);
    pgstore_ids_literal(&ids, *out, *nout);
    free(*out);
    *out = NULL;
    *nout = 0;
    if (buf_err(&ids)) {
        buf_cleanup(&ids);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    const char *prm[3] = {s->tenant, ids.data, pq->neg.data};
    pg_rows *r = NULL;
    rc = pgstore_qp(s->m, "search",
                    "SELECT id FROM mnemo_chunks WHERE tenant = $1 AND id = ANY ($2::bigint[]) AND "
                    "tsv @@ $3::tsquery ORDER BY id",
                    3, prm, &r);
    buf_cleanup(&ids);
    if (rc)
        return rc;
    size_t n = pg_nrows(r);
    if (!(*out = malloc((n + 1) * sizeof **out))) {
        pg_rows_free(r);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        (*out)[i] = pgstore_ll(r, i, 0);
    *nout = n;
    pg_rows_free(r);
    return MNEMO_OK;
}

/* The mark the statement read at (the corpus row, last): -1 when none. */
static int64_t snapshot_mark(const pg_rows *r)
{
    size_t n = pg_nrows(r);
    return n && pgstore_ll(r, n - 1, 0) == 3 ? pgstore_ll(r, n - 1, 3) : -1;
}

/* The snapshot at the handle's mark, read again while a sync moves the
 * mark: MNEMO_NOTFOUND when there are no postings yet. */
static int read_marked(pgsearch *s, const pgsearch_query *pq, const char *source, pg_rows **out)
{
    int64_t *mark = s_mark(s);
    if (!mark)
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    pg_rows *r = NULL;
    int rc = MNEMO_OK;
    if (*mark < 0) {
        const char *prm[1] = {s->tenant};
        rc = pgstore_q(
            s->m, "search",
            "SELECT coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1)", 1, prm,
            &r);
        if (rc)
            return rc;
        *mark = pgstore_ll(r, 0, 0);
        pg_rows_free(r);
        r = NULL;
        if (*mark < 0)
            return MNEMO_NOTFOUND;
    }
    /* The mark may have moved since: read again at the new one. */
    for (int tries = 0;; tries++) {
        if ((rc = read_snapshot(s, pq, source, *mark, &r)))
            return rc;
        int64_t now = snapshot_mark(r);
        if (now == *mark)
            break;
        pg_rows_free(r);
        r = NULL;
        *mark = now;
        if (now < 0 || tries == 3)
            return MNEMO_NOTFOUND; /* none yet, or a sync merging now */
    }
    *out = r;
    return MNEMO_OK;
}

struct pgnpost_lists {
    pgpost_list t[BM25_MAX_PHRASES];
};

void pgnpost_lists_free(pgnpost_lists *l)
{
    if (!l)
        return;
    pgpost_lists_free(l->t, BM25_MAX_PHRASES);
    free(l);
}

/* The snapshot's rows into the lists of L (PQ's words LEX), the excluded
 * NEGS left out of the merged ones, and its statistics into S and *N. */
static int lists_of(pgsearch *s, const pgsearch_query *pq, const pg_rows *r, const int64_t *negs,
                    size_t nneg, const char *const *lex, pgpost_list *t, double *N)
{
    size_t rows = pg_nrows(r);
    int64_t *dead = NULL;
    size_t ndead = 0;
    buf raw, w;
    buf_init(&raw, 0);
    buf_init(&w, 0);
    /* Segments (kind 0), then the dead ids (kind 1): find them first. */
    size_t d0 = 0;
    while (d0 < rows && pgstore_ll(r, d0, 0) == 0)
        d0++;
    size_t d1 = d0;
    while (d1 < rows && pgstore_ll(r, d1, 0) == 1)
        d1++;
    int rc = (dead = malloc((d1 - d0 + 1) * sizeof *dead)) ? MNEMO_OK : MNEMO_NOMEM;
    for (size_t j = d0; !rc && j < d1; j++)
        dead[ndead++] = pgstore_ll(r, j, 3);
    for (size_t i = 0; !rc && i < d0; i++)
        rc = pgpost_lists_segment(t, lex, pq->npos, pg_value(r, i, 2), pg_value(r, i, 4), &raw,
                                  dead, ndead);
    pgpost_lists_sort(t, pq->npos);
    for (int k = 0; !rc && k < pq->npos; k++)
        drop_ids(&t[k], negs, nneg);
    /* Chunks above the mark (ids above every segment's), then the
     * statistics. */
    for (size_t i = d1; !rc && i < rows; i++) {
        if (pgstore_ll(r, i, 0) == 3) {
            *N = strtod(pg_value(r, i, 2), NULL);
            s->avgdl = strtod(pg_value(r, i, 4), NULL);
            /* The corpus row is updated by every sync commit: its
             * version stamps what the search sees. */
            snprintf(s->stamp, sizeof s->stamp, "%s", pg_value(r, i, 1));
            continue;
        }
        char *end;
        long ntok = strtol(pg_value(r, i, 4), &end, 10);
        rc = pgpost_lists_tsv(t, lex, pq->npos, pgstore_ll(r, i, 3), (int)ntok, end, &w);
    }
    free(dead);
    buf_cleanup(&raw);
    buf_cleanup(&w);
    return rc;
}

int pgnpost_read(pgsearch *s, const pgsearch_query *pq, const char *source, pgnpost_lists **out,
                 double *sum_idf)
{
    *out = NULL;
    pg_rows *r = NULL;
    int rc = read_marked(s, pq, source, &r);
    if (rc)
        return rc;
    /* The merged chunks the excluded phrases remove (the ones above the
     * mark came filtered by the whole query). */
    int64_t *negs = NULL;
    size_t nneg = 0;
    if (pq->neg.len && (rc = excluded_ids(s, pq, source, &negs, &nneg))) {
        pg_rows_free(r);
        return rc;
    }
    const char *lex[BM25_MAX_PHRASES];
    for (int k = 0; k < pq->npos; k++)
        lex[k] = pq->words.data + pq->woff[k];
    pgnpost_lists *l = calloc(1, sizeof *l);
    double N = 0;
    s->avgdl = 1.0;
    rc = l ? lists_of(s, pq, r, negs, nneg, lex, l->t, &N) : MNEMO_NOMEM;
    pg_rows_free(r);
    free(negs);
    if (rc) {
        pgnpost_lists_free(l);
        if (rc == MNEMO_CORRUPT)
            return core_error(s->m, rc, "%s", postings.damaged);
        return core_error(s->m, rc, "out of memory");
    }
    /* BM25's statistics, as keyword_all() counts them. */
    s->np = pq->npos;
    double sum = 0;
    for (int k = 0; k < s->np; k++) {
        s->idf[k] = bm25_idf(N, (double)l->t[k].n);
        sum += s->idf[k];
    }
    *sum_idf = sum > 0 ? sum : 1.0;
    *out = l;
    return MNEMO_OK;
}

/* EXTRA[0..N) sorted into a copy (*OUT; few: insertion sort). */
static int sorted_copy(const int64_t *extra, size_t n, int64_t **out)
{
    if (!(*out = malloc((n + 1) * sizeof **out)))
        return MNEMO_NOMEM;
    int64_t *ex = *out;
    if (n)
        memcpy(ex, extra, n * sizeof *ex);
    for (size_t a = 1; a < n; a++) {
        int64_t x = ex[a];
        size_t b = a;
        while (b > 0 && ex[b - 1] > x) {
            ex[b] = ex[b - 1];
            b--;
        }
        ex[b] = x;
    }
    return MNEMO_OK;
}

/* The hits kept by BEST (their rows in ROWS, by slot) and the extra ids'
 * hits XS[0..NXS) into s->hits, by id, once each. */
static int hits_of(pgsearch *s, const topk *best, const hitrow *rows, const hitrow *xs,
                   size_t nxs)
{
    s->hits = calloc(best->n + nxs + 1, sizeof *s->hits);
    if (!s->hits)
        return MNEMO_NOMEM;
    for (size_t a = 0; a < best->n; a++)
        s->hits[s->nhits++] = rows[best->v[a].slot];
    for (size_t a = 0; a < nxs; a++)
        s->hits[s->nhits++] = xs[a];
    if (s->nhits > 1)
        qsort(s->hits, s->nhits, sizeof *s->hits, by_hitid);
    size_t k = 0;
    for (size_t a = 0; a < s->nhits; a++)
        if (!k || s->hits[k - 1].id != s->hits[a].id)
            s->hits[k++] = s->hits[a];
    s->nhits = k;
    return MNEMO_OK;
}

/* The lists as blockmax.h's blocks (KWBLOCK postings each, bounds from
 * their frequencies and lengths), read straight from the lists. */
#define KWBLOCK 128

typedef struct bm_list {
    const pgpost_list *l;
    int64_t *first, *last;
    double *ub;
    int64_t id[KWBLOCK];
    uint8_t tf[KWBLOCK];
    int32_t dl[KWBLOCK];
} bm_list;

static int bm_read(void *ud, const blockmax_term *t, size_t b, blockmax_posts *out)
{
    bm_list *x = &((bm_list *)ud)[t->phrase];
    size_t from = b * KWBLOCK, to = from + KWBLOCK;
    if (to > x->l->n)
        to = x->l->n;
    for (size_t i = from; i < to; i++) {
        const pgposting *p = &x->l->v[i];
        x->id[i - from] = p->id;
        x->tf[i - from] = (uint8_t)(p->tf > 255 ? 255 : p->tf);
        x->dl[i - from] = p->ntok;
    }
    *out = (blockmax_posts){x->id, x->tf, x->dl, to - from};
    return MNEMO_OK;
}

/* Top-k with block bounds (blockmax.h) over the lists: the pool into
 * BEST with its rows by slot in ROWS, and the rows of the extra ids EX
 * into XS. MNEMO_NOTFOUND when a list is not strictly ascending (the
 * caller walks every posting). */
static int walk_blockmax(pgsearch *s, pgnpost_lists *l, uint64_t req, topk *best, hitrow *rows,
                         const int64_t *ex, size_t nextra, hitrow *xs, size_t *nxs)
{
    bm_list *bl = calloc((size_t)s->np + 1, sizeof *bl);
    blockmax_term t[BM25_MAX_PHRASES];
    double w[BM25_MAX_PHRASES];
    int nt = 0, rc = bl ? MNEMO_OK : MNEMO_NOMEM;
    for (int k = 0; !rc && k < s->np; k++) {
        const pgpost_list *pl = &l->t[k];
        w[k] = 1.0;
        bl[k].l = pl;
        for (size_t i = 1; !rc && i < pl->n; i++)
            if (pl->v[i].id <= pl->v[i - 1].id)
                rc = MNEMO_NOTFOUND;
        size_t nb = (pl->n + KWBLOCK - 1) / KWBLOCK;
        if (rc || !nb)
            continue;
        bl[k].first = malloc(nb * sizeof *bl[k].first);
        bl[k].last = malloc(nb * sizeof *bl[k].last);
        bl[k].ub = malloc(nb * sizeof *bl[k].ub);
        if (!bl[k].first || !bl[k].last || !bl[k].ub) {
            rc = MNEMO_NOMEM;
            break;
        }
        for (size_t b = 0; b < nb; b++) {
            size_t from = b * KWBLOCK, to = from + KWBLOCK < pl->n ? from + KWBLOCK : pl->n;
            blockmax_bound bound = {0};
            for (size_t i = from; i < to; i++)
                blockmax_bound_add(&bound, (uint32_t)pl->v[i].tf, (uint32_t)pl->v[i].ntok);
            bl[k].first[b] = pl->v[from].id;
            bl[k].last[b] = pl->v[to - 1].id;
            bl[k].ub[b] = blockmax_bound_share(&bound, 1.0, s->idf[k], s->k1, s->b, s->avgdl);
        }
        t[nt++] = (blockmax_term){.phrase = k, .nblocks = nb, .first = bl[k].first,
                                  .last = bl[k].last, .ub = bl[k].ub};
    }
    /* Dead and excluded ids are out of the lists already: none is gone. */
    blockmax_query q = {.t = t, .nt = nt, .np = s->np, .w = w, .idf = s->idf, .k1 = s->k1,
                        .b = s->b, .avgdl = s->avgdl, .required = req, .read = bm_read, .ud = bl};
    if (!rc)
        rc = blockmax_run(&q, best);
    /* The rows of what was kept, and of the extra ids the lists hold. */
    for (size_t i = 0; !rc && i < best->n; i++) {
        hitrow *h = &rows[best->v[i].slot];
        int32_t dl;
        uint64_t mask;
        h->id = best->v[i].id;
        rc = blockmax_row(&q, h->id, h->tf, &dl, &mask);
        h->ntok = dl;
    }
    for (size_t i = 0; !rc && i < nextra; i++) {
        hitrow h = {.id = ex[i]};
        int32_t dl;
        uint64_t mask;
        if (i && ex[i] == ex[i - 1])
            continue;
        rc = blockmax_row(&q, h.id, h.tf, &dl, &mask);
        h.ntok = dl;
        if (!rc && mask && (mask & req) == req)
            xs[(*nxs)++] = h;
    }
    for (int k = 0; bl && k < s->np; k++) {
        free(bl[k].first);
        free(bl[k].last);
        free(bl[k].ub);
    }
    free(bl);
    return rc;
}

int pgnpost_walk(pgsearch *s, const pgsearch_query *pq, pgnpost_lists *l, size_t pool,
                 const int64_t *extra, size_t nextra)
{
    pgpost_list *t = l->t;
    topk best = {0};
    hitrow *rows = NULL, *xs = NULL;
    int64_t *ex = NULL;
    size_t nxs = 0, xat = 0;
    /* Walked again (with the extra ids known by then): from the start. */
    for (int k = 0; k < BM25_MAX_PHRASES; k++)
        t[k].at = 0;
    free(s->hits);
    s->hits = NULL;
    s->nhits = 0;
    uint64_t req = s->qy->required & (pq->npos >= 64 ? ~(uint64_t)0
                                                     : (((uint64_t)1 << pq->npos) - 1));
    int rc = topk_init(&best, pool);
    if (!rc && (!(rows = malloc((pool + 1) * sizeof *rows)) ||
                !(xs = malloc((nextra + 1) * sizeof *xs))))
        rc = MNEMO_NOMEM;
    /* The extra ids in order, to be met while the lists are walked. */
    if (!rc)
        rc = sorted_copy(extra, nextra, &ex);
    /* The pool by block bounds when the lists allow it (as SQLite's). */
    int walked = 0;
    if (!rc) {
        rc = walk_blockmax(s, l, req, &best, rows, ex, nextra, xs, &nxs);
        walked = rc == MNEMO_OK;
        if (rc == MNEMO_NOTFOUND) {
            rc = MNEMO_OK;
            best.n = 0;
            nxs = 0;
        }
    }
    /* Else document at a time: the smallest id at the lists' heads; the
     * best POOL by BM25, then id (topk.h). */
    while (!rc && !walked) {
        hitrow h;
        uint64_t mask;
        memset(&h, 0, sizeof h);
        h.id = pgpost_next(t, s->np, h.tf, &h.ntok, &mask);
        if (h.id == INT64_MAX)
            break;
        if ((mask & req) != req)
            continue;
        size_t slot = topk_offer(&best, pgstore_hit_bm25(s, &h), h.id);
        if (slot != TOPK_NONE)
            rows[slot] = h;
        while (xat < nextra && ex[xat] < h.id)
            xat++;
        if (xat < nextra && ex[xat] == h.id)
            xs[nxs++] = h;
    }
    if (!rc)
        rc = hits_of(s, &best, rows, xs, nxs);
    free(ex);
    free(xs);
    free(rows);
    topk_cleanup(&best);
    return rc ? core_error(s->m, rc, "out of memory") : MNEMO_OK;
}

int pgnpost_leg(pgsearch *s, const pgsearch_query *pq, const char *source, size_t pool,
                const int64_t *extra, size_t nextra, double *sum_idf)
{
    pgnpost_lists *l;
    int rc = pgnpost_read(s, pq, source, &l, sum_idf);
    if (rc)
        return rc;
    rc = pgnpost_walk(s, pq, l, pool, extra, nextra);
    pgnpost_lists_free(l);
    return rc;
}

/* ----------------------------------------------------------------------
 * Candidates of any query
 * -------------------------------------------------------------------- */

/* The end of the range of lexemes that start with P[0..N), into HI: P with
 * its last character one code point up (the lexeme column's C collation
 * sorts bytes, which is code point order). 0 when there is none. */
static int prefix_hi(const char *p, size_t n, buf *hi)
{
    while (n > 0) {
        size_t at = n - 1;
        while (at > 0 && ((unsigned char)p[at] & 0xC0) == 0x80)
            at--;
        int32_t cp;
        if (utf8_decode(p + at, n - at, &cp) != (int)(n - at) || cp < 0)
            return 0;
        cp = cp + 1 == 0xD800 ? 0xE000 : cp + 1;
        if (cp <= 0x10FFFF) {
            char e[4];
            buf_reset(hi);
            buf_append(hi, p, at);
            buf_append(hi, e, (size_t)utf8_put(cp, e));
            return !buf_err(hi);
        }
        n = at;
    }
    return 0;
}

typedef struct cslot {
    int part;
    size_t off; /* of its lexeme (NUL-terminated) in the copy */
    pgposting *v;
    size_t n, cap;
} cslot;

static void ids_unique(pgposting *v, size_t *n)
{
    if (*n > 1)
        qsort(v, *n, sizeof *v, by_posting);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (!k || v[k - 1].id != v[i].id)
            v[k++] = v[i];
    *n = k;
}

/* Keeps the ids of A[0..*NA) that are also in B[0..NB) (both sorted). */
static void ids_and(pgposting *a, size_t *na, const pgposting *b, size_t nb)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; i < *na; i++) {
        while (j < nb && b[j].id < a[i].id)
            j++;
        if (j < nb && b[j].id == a[i].id)
            a[k++] = a[i];
    }
    *na = k;
}

int pgnpost_candidates(pgsearch *s, const pgsearch_query *pq, int k0, int k1, const char *source,
                      int64_t **ids, size_t *nids, int64_t *mark)
{
    *ids = NULL;
    *nids = 0;
    *mark = -1;
    /* A slot per lexeme of a phrase or word, one per prefix. */
    cslot sl[BM25_MAX_PHRASES * 8];
    size_t ns = 0;
    int full = 0;
    buf words, los, his, ks, srcs, hi, raw, lexes;
    buf_init(&words, 0);
    buf_init(&los, 0);
    buf_init(&his, 0);
    buf_init(&ks, 0);
    buf_init(&srcs, 0);
    buf_init(&hi, 0);
    buf_init(&raw, 0);
    buf_init(&lexes, 0);
    buf_putc(&words, '{');
    buf_putc(&los, '{');
    buf_putc(&his, '{');
    buf_putc(&ks, '{');
    buf_putc(&srcs, '{');
    if (*source)
        pgstore_arr_add(&srcs, source, strlen(source));
    else {
        pgstore_arr_add(&srcs, "memory", 6);
        pgstore_arr_add(&srcs, "sessions", 8);
    }
    buf_putc(&srcs, '}');
    /* The slots' lexemes, NUL-terminated one after another. */
    for (int k = k0; k < k1 && !full; k++) {
        const char *t = pq->toks.data ? pq->toks.data + pq->toff[k] : "";
        while (*t) {
            size_t len = strcspn(t, " ");
            if (ns == sizeof sl / sizeof *sl) {
                full = 1; /* a phrase longer than any a person types */
                break;
            }
            sl[ns++] = (cslot){k, lexes.len, NULL, 0, 0};
            buf_append(&lexes, t, len);
            buf_putc(&lexes, '\0');
            if (pq->pfx[k]) {
                /* A range of the lexeme index: [t, t with its last
                 * character one up). None above U+10FFFF: read the rows. */
                if (!prefix_hi(t, len, &hi)) {
                    full = 1;
                    break;
                }
                pgstore_arr_add(&los, t, len);
                pgstore_arr_add(&his, hi.data, hi.len);
                pgstore_arr_int(&ks, (long long)ns);
            } else
                pgstore_arr_add(&words, t, len);
            t += len;
            while (*t == ' ')
                t++;
        }
    }
    buf_putc(&words, '}');
    buf_putc(&los, '}');
    buf_putc(&his, '}');
    buf_putc(&ks, '}');
    int rc = buf_err(&words) || buf_err(&los) || buf_err(&his) || buf_err(&ks) ||
                     buf_err(&srcs) || buf_err(&lexes)
                 ? MNEMO_NOMEM
                 : full ? MNEMO_NOTFOUND : MNEMO_OK;
    /* Whole lexemes (slot 0: matched by name), prefixes (the slot's
     * number), then the mark, in one snapshot. */
    pg_rows *r = NULL;
    const char *prm[6] = {s->tenant, srcs.data, words.data, los.data, his.data, ks.data};
    int qrc = MNEMO_OK;
    if (!rc)
        rc = qrc = pgstore_qp(s->m, "search",
                   "SELECT 0, p.lexeme, p.data::text FROM mnemo_postings p WHERE p.tenant = $1 "
                   "AND p.source = ANY ($2::text[]) AND p.lexeme = ANY ($3::text[]) "
                   "UNION ALL SELECT r.k, p.lexeme, p.data::text FROM unnest($4::text[], "
                   "$5::text[], $6::int[]) r(lo, hi, k) CROSS JOIN LATERAL (SELECT lexeme, data "
                   "FROM mnemo_postings WHERE tenant = $1 AND source = ANY ($2::text[]) AND "
                   "lexeme >= r.lo AND lexeme < r.hi) p "
                   "UNION ALL SELECT -1, NULL, coalesce((SELECT merged FROM mnemo_post_state "
                   "WHERE tenant = $1), -1)::text",
                   6, prm, &r);
    size_t rows = rc ? 0 : pg_nrows(r);
    for (size_t i = 0; !rc && i < rows; i++) {
        long long k = pgstore_ll(r, i, 0);
        if (k < 0) {
            *mark = pgstore_ll(r, i, 2);
            continue;
        }
        const char *lex = pg_value(r, i, 1);
        int decoded = 0;
        for (size_t j = 0; !rc && j < ns; j++) {
            if (k ? (size_t)k != j + 1
                  : pq->pfx[sl[j].part] || strcmp(lexes.data + sl[j].off, lex))
                continue;
            if (!decoded && !pgpost_unhex(pg_value(r, i, 2), &raw)) {
                rc = MNEMO_CORRUPT;
                break;
            }
            decoded = 1;
            int ok = pgpost_decode((const unsigned char *)raw.data, raw.len, NULL, 0, &sl[j].v,
                                   &sl[j].n, &sl[j].cap);
            rc = ok < 0 ? MNEMO_NOMEM : ok == 0 ? MNEMO_CORRUPT : MNEMO_OK;
        }
    }
    pg_rows_free(r);
    /* Per part its lexemes' lists intersected (a phrase holds them all),
     * a prefix's lists joined; then every part's together. */
    pgposting *all = NULL;
    size_t nall = 0, cap = 0;
    for (size_t j = 0; !rc && j < ns; j++)
        ids_unique(sl[j].v, &sl[j].n);
    for (size_t j = 0; !rc && j < ns; j++) {
        if (j && sl[j - 1].part == sl[j].part)
            continue; /* the part's first slot holds its result */
        for (size_t o = j + 1; o < ns && sl[o].part == sl[j].part; o++)
            ids_and(sl[j].v, &sl[j].n, sl[o].v, sl[o].n);
        if (nall + sl[j].n > cap) {
            size_t nc = (nall + sl[j].n) * 2 + 16;
            pgposting *nv = realloc(all, nc * sizeof *nv);
            if (!nv) {
                rc = MNEMO_NOMEM;
                break;
            }
            all = nv;
            cap = nc;
        }
        if (sl[j].n)
            memcpy(all + nall, sl[j].v, sl[j].n * sizeof *all);
        nall += sl[j].n;
    }
    if (!rc)
        ids_unique(all, &nall);
    if (!rc && !(*ids = malloc((nall + 1) * sizeof **ids)))
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < nall; i++)
        (*ids)[i] = all[i].id;
    if (!rc)
        *nids = nall;
    free(all);
    for (size_t j = 0; j < ns; j++)
        free(sl[j].v);
    buf_cleanup(&words);
    buf_cleanup(&los);
    buf_cleanup(&his);
    buf_cleanup(&ks);
    buf_cleanup(&srcs);
    buf_cleanup(&hi);
    buf_cleanup(&raw);
    buf_cleanup(&lexes);
    if (qrc || rc == MNEMO_NOTFOUND || !rc)
        return rc;
    if (rc == MNEMO_CORRUPT)
        return core_error(s->m, rc, "a segment of the keyword index is damaged (run `mnemo index "
                          "--force`)");
    return core_error(s->m, rc, "out of memory");
}
