/*
 * pgmpost.c - the memories in the inverted index (pgpost.c; interface in
 * pgint.h): per tenant, scope (user, agent, run, type) and lexeme,
 * posting segments (seq, frequency, length), so that a search reads the
 * postings of its words in its scope instead of every matching row's
 * tsvector; and per scope, factor segments of each memory's score factor
 * inputs. This file is the memories' policy: which tables, when a write
 * merges, and what a search reads; pgpost.c writes, folds and walks.
 *
 * Tables (migration 8): mnemo_memory_postings and mnemo_memory_factors hold
 * the segments, each written at a generation `gen`; mnemo_memory_post_state
 * (tenant, merged, gen) says that every memory with a seq up to `merged` is
 * in them, except those in mnemo_memory_post_dead (updated or deleted
 * since), whose postings count for nothing and which are read from their
 * tsvectors, as the memories above the mark are.
 *
 * Writes. An add or import takes the tenant's write lock in shared mode
 * in its statement before its row gets a seq (PM_POST_LOCK_CTE); updates,
 * deletes and confirmations take it and the merge lock shared at their
 * start and record a merged memory dead. Once MERGE_AT memories wait above
 * the mark, the writer that sees it merges them: it takes the write lock
 * exclusive for a moment, when no write is in flight, so that every seq up
 * to the largest one it reads then is committed (a later write's seq is
 * larger); then, in a transaction of its own under the merge lock, it
 * merges the memories up to that seq and moves the mark there, while adds
 * go on. After an add the merge runs on a thread with a connection of its
 * own (pgquery_worker), so that the writer does not wait for it. A merge
 * writes one segment per key at the next generation; every MERGE_GENS
 * generations the keys with more segments are folded into one; when the
 * dead pass a share of the memories, the index is built again. A merge
 * that fails (or is killed) leaves the memories above the mark, still
 * found from their rows.
 *
 * Reads. One statement, in the search's snapshot, returns the segments of
 * the query's lexemes in scope, the dead, the matches among the memories
 * above the mark and the dead ones (from their tsvectors, every condition
 * applied), the expired memories and the mark; without a mark (never
 * merged: a database from before, or a small tenant) the caller reads rows.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "store/postgres/pgint.h"
#include "text/bm25.h"

#define MERGE_AT 2000          /* memories above the mark before a write merges them */
#define MERGE_GENS 8           /* generations between folds; segments a key may keep */
#define MERGE_GENS_S "8"
#define DEAD_MIN 1024          /* dead memories before the index is built again ... */
#define DEAD_SHARE 16          /* ... when more than 1/16 of the live ones */

#define DAMAGED "a segment of the memories' keyword index is damaged"

/* ----------------------------------------------------------------------
 * Factor segments
 * -------------------------------------------------------------------- */

/* A memory's factor inputs in a factor segment: its seq's distance from
 * the previous one (varint), importance, creation and confirmation times
 * (the doubles' bits, little-endian), confirmations (varint) and whether it
 * is about the user (a byte). Varints as pgpost.c writes them. */
static void put_f64(buf *b, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    unsigned char t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (unsigned char)(u >> (8 * i));
    buf_append(b, (const char *)t, 8);
}

static int get_f64(const unsigned char **p, const unsigned char *end, double *x)
{
    if (end - *p < 8)
        return 0;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u |= (uint64_t)(*p)[i] << (8 * i);
    *p += 8;
    memcpy(x, &u, sizeof *x);
    return 1;
}

static void put_factors(buf *b, int64_t *last, int64_t seq, const pgmpost_factors *f)
{
    pgpost_put_varint(b, (uint64_t)(seq - *last));
    put_f64(b, f->importance);
    put_f64(b, f->created);
    put_f64(b, f->confirmed);
    pgpost_put_varint(b, (uint64_t)(f->confirmations > 0 ? f->confirmations : 0));
    buf_putc(b, (char)(f->about_user ? 1 : 0));
    *last = seq;
}

/* Moves *P past an entry's bytes after its seq (pgpost_table.tail). */
static int factors_tail(const unsigned char **p, const unsigned char *end)
{
    uint64_t conf;
    if (end - *p < 24)
        return 0;
    *p += 24;
    if (!pgpost_get_varint(p, end, &conf) || *p >= end)
        return 0;
    (*p)++;
    return 1;
}

/* A factor segment's entries appended to *V (growing *CAP), the sorted
 * DEAD left out: 1, 0 damaged, -1 out of memory. */
typedef struct fentry {
    int64_t seq;
    pgmpost_factors f;
} fentry;

static int decode_factors(const unsigned char *p, size_t n, const int64_t *dead, size_t ndead,
                          fentry **v, size_t *nv, size_t *cap)
{
    const unsigned char *end = p + n;
    int64_t seq = 0;
    size_t d = 0;
    while (p < end) {
        uint64_t delta, conf;
        fentry e;
        if (!pgpost_get_varint(&p, end, &delta) || !get_f64(&p, end, &e.f.importance) ||
            !get_f64(&p, end, &e.f.created) || !get_f64(&p, end, &e.f.confirmed) ||
            !pgpost_get_varint(&p, end, &conf) || p >= end)
            return 0;
        e.f.about_user = *p++ != 0;
        e.f.confirmations = (double)conf;
        e.f.known = 1;
        seq += (int64_t)delta;
        e.seq = seq;
        if (pgpost_is_dead(dead, ndead, &d, seq))
            continue;
        if (*nv == *cap) {
            size_t nc = *cap ? *cap * 2 : 1024;
            fentry *nw = realloc(*v, nc * sizeof *nw);
            if (!nw)
                return -1;
            *v = nw;
            *cap = nc;
        }
        (*v)[(*nv)++] = e;
    }
    return 1;
}

/* The factor inputs in columns C.. of row I: importance, subject = 'user',
 * created_at, last_confirmed_at, confirmations (as pgmsearch.c reads them). */
static pgmpost_factors factors_at(const pg_rows *r, size_t i, int c)
{
    pgmpost_factors f;
    f.importance = pgmem_num_at(r, i, c);
    f.about_user = strcmp(pg_value(r, i, c + 1), "user") == 0;
    f.created = pgmem_num_at(r, i, c + 2);
    f.confirmed = pg_isnull(r, i, c + 3) ? 0 : pgmem_num_at(r, i, c + 3);
    f.confirmations = pgmem_num_at(r, i, c + 4);
    f.known = 1;
    return f;
}

/* The tables: postings keyed (user, agent, run, type, lexeme), factors
 * (user, agent, run, type). A key in a map (pgterms) is its columns, each
 * NUL-terminated; a factor key's lexeme is empty. */
static const pgpost_table postings = {
    5,
    "INSERT INTO mnemo_memory_postings(tenant, user_id, agent_id, run_id, type, lexeme, gen, n, "
    "data) SELECT $1, x.u, x.a, x.r, x.t, x.l, x.g, x.n, x.d FROM unnest($2::text[], $3::text[], "
    "$4::text[], $5::text[], $6::text[], $7::bigint[], $8::int[], $9::bytea[]) AS x(u, a, r, t, "
    "l, g, n, d)",
    "writing the memory index",
    DAMAGED,
    pgpost_tail,
};

static const pgpost_table factors = {
    4,
    "INSERT INTO mnemo_memory_factors(tenant, user_id, agent_id, run_id, type, gen, n, data) "
    "SELECT $1, x.u, x.a, x.r, x.t, x.g, x.n, x.d FROM unnest($2::text[], $3::text[], "
    "$4::text[], $5::text[], $6::bigint[], $7::int[], $8::bytea[]) AS x(u, a, r, t, g, n, d)",
    "writing the memory index",
    DAMAGED,
    factors_tail,
};

/* ----------------------------------------------------------------------
 * Merging
 * -------------------------------------------------------------------- */

static int64_t ll(const pg_rows *r, size_t i, int c)
{
    return strtoll(pg_value(r, i, c), NULL, 10);
}

static int by_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Folds each key with more than MERGE_GENS segments into one at its
 * largest generation, the dead left out: of the postings, or (FAC) of the
 * factor segments, whose key has no lexeme. */
/* The keys to fold are grouped once, then each key's rows found by the
 * primary key (the lateral subquery kept apart by OFFSET 0): a tenant new
 * since the last ANALYZE looks empty to the planner, which would otherwise
 * group the whole tenant again for each of its rows. */
static int fold(mnemo *m, int fac)
{
    const char *t = pgconn_tenant(m);
    int64_t *dead = NULL;
    size_t ndead = 0;
    int rc = pgpost_ids(m, "reading the memory index",
                        "SELECT seq FROM mnemo_memory_post_dead WHERE tenant = $1 ORDER BY seq", t,
                        &dead, &ndead);
    const char *p[1] = {t};
    pg_rows *r = NULL;
    if (!rc && !fac)
        rc = pgmem_q(m, "folding the memory index",
                     "WITH k AS MATERIALIZED (SELECT user_id, agent_id, run_id, type, lexeme FROM "
                     "mnemo_memory_postings WHERE tenant = $1 GROUP BY 1, 2, 3, 4, 5 HAVING "
                     "count(*) > " MERGE_GENS_S ") DELETE FROM mnemo_memory_postings p WHERE "
                     "p.ctid = ANY (ARRAY(SELECT q.ctid FROM k CROSS JOIN LATERAL (SELECT x.ctid "
                     "FROM mnemo_memory_postings x WHERE x.tenant = $1 AND x.lexeme = k.lexeme AND "
                     "x.user_id = k.user_id AND x.agent_id = k.agent_id AND x.run_id = k.run_id "
                     "AND x.type = k.type OFFSET 0) q)) RETURNING p.user_id, p.agent_id, "
                     "p.run_id, p.type, p.lexeme, p.gen, p.data::text",
                     1, p, &r);
    else if (!rc)
        rc =
            pgmem_q(m, "folding the memory index",
                    "WITH k AS MATERIALIZED (SELECT user_id, agent_id, run_id, type FROM "
                    "mnemo_memory_factors WHERE tenant = $1 GROUP BY 1, 2, 3, 4 HAVING count(*) "
                    "> " MERGE_GENS_S ") DELETE FROM mnemo_memory_factors p WHERE p.ctid = ANY "
                    "(ARRAY(SELECT q.ctid FROM k CROSS JOIN LATERAL (SELECT x.ctid FROM "
                    "mnemo_memory_factors x WHERE x.tenant = $1 AND x.user_id = k.user_id AND "
                    "x.agent_id = k.agent_id AND x.run_id = k.run_id AND x.type = k.type OFFSET 0) "
                    "q)) RETURNING p.user_id, p.agent_id, p.run_id, p.type, '', p.gen, "
                    "p.data::text",
                    1, p, &r);
    if (!rc)
        rc = pgpost_fold(m, fac ? &factors : &postings, t, r, 5, dead, ndead);
    free(dead);
    pg_rows_free(r);
    return rc;
}

/* The memories being merged: postings into map, the live ones' factors
 * into fmap; the one being added. */
typedef struct madd {
    mnemo *m;
    pgterms map, fmap;
    buf key, w;
    size_t scope; /* bytes of the key before the lexeme */
    int64_t seq;
    int ntok;
} madd;

static int add_lexeme(void *ud, const char *lex, size_t n, int npos)
{
    madd *a = ud;
    return pgpost_terms_post(&a->map, &a->key, a->scope, lex, n, a->seq, npos, a->ntok);
}

/* A page of memories (seq, user, agent, run, type, ntok, tsv, the factor
 * inputs, live) into the maps (pgpost_pages' FN). */
static int add_rows(void *ud, const pg_rows *r, int more)
{
    madd *a = ud;
    (void)more;
    int rc = MNEMO_OK;
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        buf_reset(&a->key);
        for (int c = 1; c <= 4; c++) {
            buf_puts(&a->key, pg_value(r, i, c));
            buf_putc(&a->key, 0);
        }
        a->scope = a->key.len;
        a->seq = ll(r, i, 0);
        a->ntok = (int)ll(r, i, 5);
        rc = buf_err(&a->key) ? MNEMO_NOMEM
                              : pgpost_tsv_each(pg_value(r, i, 6), &a->w, add_lexeme, a);
        if (!rc && !strcmp(pg_value(r, i, 12), "t")) { /* live: its factors */
            a->key.len = a->scope;
            buf_putc(&a->key, 0); /* no lexeme */
            pgterm *e =
                buf_err(&a->key) ? NULL : pgpost_terms_get(&a->fmap, a->key.data, a->key.len);
            pgmpost_factors f = factors_at(r, i, 7);
            if (e) {
                put_factors(&e->data, &e->last, a->seq, &f);
                e->n++;
            }
            rc = !e || buf_err(&e->data) ? MNEMO_NOMEM : MNEMO_OK;
        }
        if (rc)
            rc = core_error(a->m, rc, "out of memory");
    }
    return rc;
}

/* The memories of seq in (*AFTER, TO] as segments at GEN, *AFTER moved to
 * the last one read. */
static int merge_rows(mnemo *m, int64_t *after, int64_t to, long long gen)
{
    const char *t = pgconn_tenant(m);
    char upto[32];
    snprintf(upto, sizeof upto, "%lld", (long long)to);
    const char *p[3] = {t, NULL, upto};
    madd a;
    memset(&a, 0, sizeof a);
    a.m = m;
    buf_init(&a.key, 0);
    buf_init(&a.w, 0);
    int rc = pgpost_pages(m, "merging the memory index",
                          "SELECT seq, user_id, agent_id, run_id, type, ntok, tsv::text, "
                          "importance, subject, created_at, last_confirmed_at, confirmations, "
                          "deleted_at IS NULL FROM mnemo_memories WHERE tenant = $1 AND seq > "
                          "$2::bigint AND seq <= $3::bigint ORDER BY seq LIMIT 2000",
                          3, p, after, add_rows, &a);
    pgpost_segs g;
    pgpost_segs_init(&g, &postings, t);
    if (!rc)
        rc = pgpost_segs_terms(m, &g, &a.map, gen);
    pgpost_segs_cleanup(&g);
    pgpost_segs_init(&g, &factors, t);
    if (!rc)
        rc = pgpost_segs_terms(m, &g, &a.fmap, gen);
    pgpost_segs_cleanup(&g);
    pgpost_terms_cleanup(&a.map);
    pgpost_terms_cleanup(&a.fmap);
    buf_cleanup(&a.key);
    buf_cleanup(&a.w);
    return rc;
}

/* The merge of the memories up to seq TO (every one committed), inside
 * its transaction, under the merge lock. */
static int merge_tx(mnemo *m, int64_t to, int64_t *mark)
{
    const char *t = pgconn_tenant(m);
    const char *p[1] = {t};
    pg_rows *r = NULL;
    int rc = pgmem_q(m, "merging the memory index",
                     "SELECT (SELECT merged FROM mnemo_memory_post_state WHERE tenant = $1), "
                     "(SELECT gen FROM mnemo_memory_post_state WHERE tenant = $1), "
                     "(SELECT count(*) FROM mnemo_memory_post_dead WHERE tenant = $1), "
                     "(SELECT coalesce(sum(docs), 0) FROM mnemo_memory_stats WHERE tenant = $1)",
                     1, p, &r);
    if (rc)
        return rc;
    int fresh = pg_isnull(r, 0, 0);
    int64_t merged = fresh ? -1 : ll(r, 0, 0), gen = fresh ? 0 : ll(r, 0, 1);
    long long ndead = ll(r, 0, 2), live = ll(r, 0, 3);
    pg_rows_free(r);
    if (!fresh && to <= merged) { /* another writer's merge took them */
        *mark = merged;
        return MNEMO_OK;
    }
    /* The statistics count the merged memories (pgmem_stats_merged): none
     * before the first merge, and a rebuild counts them all again. */
    if (fresh)
        rc = pgmem_stats_reset(m);
    if (!rc && !fresh && ndead > DEAD_MIN && ndead > live / DEAD_SHARE) {
        /* Built again from every row: the dead go with the old segments. */
        rc = pgmem_q(m, "merging the memory index",
                     "DELETE FROM mnemo_memory_postings WHERE tenant = $1", 1, p, NULL);
        if (!rc)
            rc = pgmem_q(m, "merging the memory index",
                         "DELETE FROM mnemo_memory_factors WHERE tenant = $1", 1, p, NULL);
        if (!rc)
            rc = pgmem_q(m, "merging the memory index",
                         "DELETE FROM mnemo_memory_post_dead WHERE tenant = $1", 1, p, NULL);
        if (!rc)
            rc = pgmem_stats_reset(m);
        merged = -1;
    }
    int64_t first = merged, after = merged;
    if (!rc)
        rc = merge_rows(m, &after, to, (long long)(gen + 1));
    char num[32], g1[32];
    snprintf(num, sizeof num, "%lld", (long long)after);
    snprintf(g1, sizeof g1, "%lld", (long long)(gen + 1));
    const char *p3[3] = {t, num, g1};
    if (!rc && after > first)
        rc = pgmem_stats_merged(m, first, after);
    if (!rc)
        rc = pgmem_q(m, "merging the memory index",
                     "INSERT INTO mnemo_memory_post_state(tenant, merged, gen) VALUES ($1, "
                     "$2::bigint, $3::bigint) ON CONFLICT (tenant) DO UPDATE SET merged = "
                     "excluded.merged, gen = excluded.gen",
                     3, p3, NULL);
    if (!rc && (gen + 1) % MERGE_GENS == 0)
        rc = fold(m, 0);
    if (!rc && (gen + 1) % MERGE_GENS == 0)
        rc = fold(m, 1);
    if (!rc)
        *mark = after;
    return rc;
}

/* The newest memory every write before it committed into *TO: read under
 * the write lock taken exclusive, in a transaction that ends there (adds
 * wait only for this moment). */
static int merge_bound(mnemo *m, int64_t *to)
{
    const char *p[1] = {pgconn_tenant(m)};
    pg_rows *r = NULL;
    int rc = pgmem_q(m, "merging the memory index", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = pgmem_q(m, "merging the memory index",
                     "SELECT pg_advisory_xact_lock(" PM_POST_LOCK ", hashtext($1))", 1, p, NULL);
    if (!rc) /* a statement of its own: its snapshot is taken under the lock */
        rc = pgmem_q(m, "merging the memory index",
                     "SELECT coalesce(max(seq), -1) FROM mnemo_memories WHERE tenant = $1", 1, p,
                     &r);
    if (!rc)
        *to = ll(r, 0, 0);
    pg_rows_free(r);
    if (!rc)
        return pgmem_q(m, "merging the memory index", "COMMIT", 0, NULL, NULL);
    pgmem_q(m, "merging the memory index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

/* The merge; *MARK the mark after it. */
static int merge(mnemo *m, int64_t *mark)
{
    const char *p[1] = {pgconn_tenant(m)};
    int64_t to = -1;
    int rc = merge_bound(m, &to);
    if (rc || (rc = pgmem_q(m, "merging the memory index", "BEGIN", 0, NULL, NULL)))
        return rc;
    rc = pgmem_q(m, "merging the memory index",
                 "SELECT pg_advisory_xact_lock(" PM_MERGE_LOCK ", hashtext($1))", 1, p, NULL);
    if (!rc)
        rc = merge_tx(m, to, mark);
    if (!rc)
        return pgmem_q(m, "merging the memory index", "COMMIT", 0, NULL, NULL);
    pgmem_q(m, "merging the memory index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

/* A merge on a thread of its own, with a handle of its own. */
typedef struct pgmerger {
    pthread_t thread;
    mnemo *w;        /* pgquery_worker's */
    int64_t mark;    /* the mark after it, -1 when it failed */
    atomic_int done; /* set as the thread ends */
} pgmerger;

static void *merger_main(void *ud)
{
    pgmerger *g = ud;
    int64_t mark = -1;
    g->mark = merge(g->w, &mark) == MNEMO_OK ? mark : -1;
    atomic_store(&g->done, 1);
    return NULL;
}

/* Starts a merge beside the caller: 1, or 0 when it cannot (no second
 * connection to be had: the caller merges itself). */
static int merger_start(mnemo *m, struct pgmem *ps)
{
    pgmerger *g = calloc(1, sizeof *g);
    if (!g || !(g->w = pgquery_worker(m))) {
        free(g);
        return 0;
    }
    atomic_init(&g->done, 0);
    if (pthread_create(&g->thread, NULL, merger_main, g) != 0) {
        pgquery_worker_free(g->w);
        free(g);
        return 0;
    }
    ps->bg = g;
    return 1;
}

/* Takes the merge running beside the handle once it has ended, or (WAIT)
 * waits for it. */
static void merger_reap(struct pgmem *ps, int wait)
{
    pgmerger *g = ps->bg;
    if (!g || (!wait && !atomic_load(&g->done)))
        return;
    pthread_join(g->thread, NULL);
    if (g->mark >= 0) {
        ps->post_mark = g->mark;
    } else { /* a second connection refused or lost: not tried at every add */
        ps->post_known = 0;
        ps->bg_off = 1;
    }
    pgmem_close(g->w);
    pgquery_worker_free(g->w);
    free(g);
    ps->bg = NULL;
}

void pgmpost_wait(mnemo *m)
{
    if (m && PGB(m) && PGB(m)->mem)
        merger_reap(PGB(m)->mem, 1);
}

int pgmpost_catch_up(mnemo *m, int64_t seq)
{
    struct pgmem *ps = pgmem_state(m);
    if (!ps)
        return MNEMO_OK;
    int after_add = seq >= 0;
    ps->adds += after_add;
    merger_reap(ps, !after_add);
    if (ps->bg) /* one at a time */
        return MNEMO_OK;
    const char *p[1] = {pgconn_tenant(m)};
    pg_rows *r = NULL;
    if (!ps->post_known || !after_add) {
        if (pgmem_q(
                m, "reading the memory index",
                "SELECT coalesce((SELECT merged FROM mnemo_memory_post_state WHERE tenant = "
                "$1), -1), (SELECT coalesce(max(seq), -1) FROM mnemo_memories WHERE tenant = $1)",
                1, p, &r)) {
            core_clear(m);
            return MNEMO_OK;
        }
        ps->post_mark = ll(r, 0, 0);
        ps->post_known = 1;
        if (!after_add)
            seq = ll(r, 0, 1);
        pg_rows_free(r);
    }
    /* On a thread after a handle's second add on: a handle that adds once
     * (a command) would only wait for it at its close. */
    if (seq - ps->post_mark < MERGE_AT ||
        (after_add && ps->adds > 1 && !ps->bg_off && merger_start(m, ps)))
        return MNEMO_OK;
    int64_t mark = -1;
    /* The memories stay found from their rows when it fails. */
    if (merge(m, &mark) == MNEMO_OK)
        ps->post_mark = mark;
    else
        ps->post_known = 0;
    core_clear(m);
    return MNEMO_OK;
}

int pgmpost_lock_shared(mnemo *m)
{
    const char *p[1] = {pgconn_tenant(m)};
    return pgmem_q(m, "memories",
                   "SELECT pg_advisory_xact_lock_shared(" PM_POST_LOCK ", hashtext($1)), "
                   "pg_advisory_xact_lock_shared(" PM_MERGE_LOCK ", hashtext($1))",
                   1, p, NULL);
}

int pgmpost_dead(mnemo *m, const char *id)
{
    const char *p[2] = {pgconn_tenant(m), id};
    return pgmem_q(m, "memories",
                   "INSERT INTO mnemo_memory_post_dead(tenant, seq) SELECT m.tenant, m.seq FROM "
                   "mnemo_memories m JOIN mnemo_memory_post_state s ON s.tenant = m.tenant WHERE "
                   "m.tenant = $1 AND m.id = $2 AND m.seq <= s.merged ON CONFLICT DO NOTHING",
                   2, p, NULL);
}
/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

static int by_fentry(const void *a, const void *b)
{
    const fentry *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

void pgmpost_docs_cleanup(pgmpost_docs *d)
{
    free(d->f);
    free(d->seq);
    free(d->ntok);
    free(d->tf);
    memset(d, 0, sizeof *d);
}

static int in_sorted(const int64_t *v, size_t n, int64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t k = (lo + hi) / 2;
        if (v[k] < x)
            lo = k + 1;
        else
            hi = k;
    }
    return lo < n && v[lo] == x;
}

/* The statement of Q: rows (kind, lexeme, seq or gen, text). */
static int read_rows(mnemo *m, const pgmpost_query *q, pg_rows **out)
{
    pgmem_params *pp = q->p;
    int n0 = pp->n;
    int L = pgmem_params_add(pp, q->lexs), Q = pgmem_params_add(pp, q->tsq),
        N = pgmem_params_add(pp, q->now);
    buf sql;
    buf_init(&sql, 1 << 20);
/* A row's factor inputs (factors_at's columns), its length and its vector
 * filtered to the query's lexemes, as one text. */
#define TAIL_COLS                                                                              \
    "m.seq, concat_ws(' ', m.importance, m.subject = 'user', m.created_at, "                  \
    "coalesce(m.last_confirmed_at::text, '-'), m.confirmations, m.ntok, "                      \
    "ts_filter(setweight(m.tsv, 'A', $%d::text[]), '{a}')::text)"
    buf_printf(&sql,
               "SELECT 0, m.lexeme, m.gen, m.data::text FROM mnemo_memory_postings m WHERE "
               "m.tenant = $1 AND m.lexeme = ANY ($%d::text[]) AND %s "
               "UNION ALL SELECT 1, NULL, d.seq, NULL FROM mnemo_memory_post_dead d WHERE "
               "d.tenant = $1 "
               "UNION ALL SELECT 2, NULL, " TAIL_COLS " FROM mnemo_memories m WHERE m.tenant = $1 "
               "AND m.seq > (SELECT s.merged FROM mnemo_memory_post_state s WHERE s.tenant = $1) "
               "AND m.tsv @@ $%d::tsquery AND %s "
               "UNION ALL SELECT 2, NULL, " TAIL_COLS " FROM mnemo_memory_post_dead d JOIN "
               "mnemo_memories m ON m.tenant = d.tenant AND m.seq = d.seq WHERE d.tenant = $1 "
               "AND m.tsv @@ $%d::tsquery AND %s "
               "UNION ALL SELECT 3, NULL, m.seq, NULL FROM mnemo_memories m WHERE m.tenant = $1 "
               "AND m.expires_at IS NOT NULL AND m.deleted_at IS NULL AND m.expires_at <= "
               "$%d::float8 "
               "UNION ALL SELECT 4, NULL, s.merged, NULL FROM mnemo_memory_post_state s WHERE "
               "s.tenant = $1 "
               "UNION ALL SELECT 5, NULL, m.gen, m.data::text FROM mnemo_memory_factors m WHERE "
               "m.tenant = $1 AND %s",
               L, q->scope, L, Q, q->where, L, Q, q->where, N, q->scope);
#undef TAIL_COLS
    int rc = buf_err(&sql) ? core_error(m, MNEMO_NOMEM, "out of memory")
                           : pgmem_q(m, "memory search", sql.data, pp->n, pp->v, out);
    pp->n = n0;
    buf_cleanup(&sql);
    return rc;
}

/* A row above the mark or dead (text "importance true|false created
 * confirmed|- confirmations ntok tsv") into the lists L and *E; *NTOK. */
static int read_row(const pgmpost_query *q, const char *txt, pgpost_list *l, fentry *e, buf *w)
{
    char *end;
    e->f.importance = strtod(txt, &end);
    e->f.about_user = strncmp(end, " t", 2) == 0;
    end = strchr(end + 1, ' ');
    e->f.created = end ? strtod(end, &end) : 0;
    while (end && *end == ' ')
        end++;
    e->f.confirmed = end && *end == '-' ? 0 : end ? strtod(end, &end) : 0;
    if (end && *end == '-')
        end++;
    e->f.confirmations = end ? strtod(end, &end) : 0;
    e->f.known = 1;
    int ntok = end ? (int)strtol(end, &end, 10) : 0;
    return end ? pgpost_lists_tsv(l, q->lex, q->nlex, e->seq, ntok, end, w) : MNEMO_CORRUPT;
}

/* The rows of kinds 0, 2 and 5 into the lists L and the factors *FV. */
static int read_lists(const pgmpost_query *q, const pg_rows *r, const int64_t *dead,
                      size_t ndead, pgpost_list *l, fentry **fv, size_t *nf)
{
    size_t fcap = 0;
    buf raw, w;
    buf_init(&raw, 0);
    buf_init(&w, 0);
    int rc = MNEMO_OK;
    for (size_t i = 0; !rc && i < pg_nrows(r); i++) {
        long kind = strtol(pg_value(r, i, 0), NULL, 10);
        if (kind == 0) {
            rc = pgpost_lists_segment(l, q->lex, q->nlex, pg_value(r, i, 1), pg_value(r, i, 3),
                                      &raw, dead, ndead);
        } else if (kind == 2) {
            fentry e;
            e.seq = ll(r, i, 2);
            rc = read_row(q, pg_value(r, i, 3), l, &e, &w);
            if (!rc && *nf == fcap) {
                size_t nc = fcap ? fcap * 2 : 1024;
                fentry *nw = realloc(*fv, nc * sizeof *nw);
                if (!nw)
                    rc = MNEMO_NOMEM;
                else {
                    *fv = nw;
                    fcap = nc;
                }
            }
            if (!rc)
                (*fv)[(*nf)++] = e;
        } else if (kind == 5) {
            int ok = pgpost_unhex(pg_value(r, i, 3), &raw)
                         ? decode_factors((const unsigned char *)raw.data, raw.len, dead, ndead,
                                          fv, nf, &fcap)
                         : 0;
            rc = ok < 0 ? MNEMO_NOMEM : ok == 0 ? MNEMO_CORRUPT : MNEMO_OK;
        }
    }
    buf_cleanup(&raw);
    buf_cleanup(&w);
    return rc;
}

/* Room for one more document in OUT (*CAP of them). */
static int docs_grow(pgmpost_docs *out, size_t *cap)
{
    if (out->n < *cap)
        return MNEMO_OK;
    size_t nc = *cap ? *cap * 2 : 1024;
    int64_t *s = realloc(out->seq, nc * sizeof *s);
    if (s)
        out->seq = s;
    int *nt = realloc(out->ntok, nc * sizeof *nt);
    if (nt)
        out->ntok = nt;
    uint8_t *tf = realloc(out->tf, nc * BM25_MAX_PHRASES);
    if (tf)
        out->tf = tf;
    pgmpost_factors *fa = realloc(out->f, nc * sizeof *fa);
    if (fa)
        out->f = fa;
    if (!s || !nt || !tf || !fa)
        return MNEMO_NOMEM;
    *cap = nc;
    return MNEMO_OK;
}

/* Document at a time over the lists L, the sorted expired EXP left out,
 * each with its factors from the sorted FV, into OUT. */
static int walk(const pgmpost_query *q, pgpost_list *l, const int64_t *exp, size_t nexp,
                const fentry *fv, size_t nf, pgmpost_docs *out)
{
    size_t fat = 0, cap = 0;
    for (;;) {
        uint8_t tf[BM25_MAX_PHRASES] = {0};
        int ntok = 0;
        uint64_t mask;
        int64_t id = pgpost_next(l, q->nlex, tf, &ntok, &mask);
        if (id == INT64_MAX)
            return MNEMO_OK;
        if (in_sorted(exp, nexp, id))
            continue;
        if (docs_grow(out, &cap))
            return MNEMO_NOMEM;
        memcpy(out->tf + out->n * BM25_MAX_PHRASES, tf, BM25_MAX_PHRASES);
        out->ntok[out->n] = ntok;
        while (fat < nf && fv[fat].seq < id)
            fat++;
        if (fat < nf && fv[fat].seq == id)
            out->f[out->n] = fv[fat].f;
        else
            memset(&out->f[out->n], 0, sizeof out->f[out->n]);
        out->seq[out->n++] = id;
    }
}

int pgmpost_read(mnemo *m, const pgmpost_query *q, pgmpost_docs *out)
{
    memset(out, 0, sizeof *out);
    pg_rows *r = NULL;
    int rc = read_rows(m, q, &r);
    if (rc)
        return rc;
    size_t rows = pg_nrows(r);
    int have_mark = 0;
    size_t ndead = 0, nexp = 0, nf = 0;
    fentry *fv = NULL;
    int64_t *dead = malloc((rows + 1) * sizeof *dead), *exp = malloc((rows + 1) * sizeof *exp);
    pgpost_list l[BM25_MAX_PHRASES];
    memset(l, 0, sizeof l);
    if (!dead || !exp)
        rc = MNEMO_NOMEM;
    for (size_t i = 0; !rc && i < rows; i++) {
        long kind = strtol(pg_value(r, i, 0), NULL, 10);
        if (kind == 1)
            dead[ndead++] = ll(r, i, 2);
        else if (kind == 3)
            exp[nexp++] = ll(r, i, 2);
        else if (kind == 4)
            have_mark = 1;
    }
    if (!rc && !have_mark) {
        rc = MNEMO_NOTFOUND; /* never merged: rows it is */
        goto done;
    }
    if (ndead > 1)
        qsort(dead, ndead, sizeof *dead, by_i64);
    if (nexp > 1)
        qsort(exp, nexp, sizeof *exp, by_i64);
    if (!rc)
        rc = read_lists(q, r, dead, ndead, l, &fv, &nf);
    for (size_t i = 1; !rc && i < nf; i++)
        if (fv[i].seq < fv[i - 1].seq) {
            qsort(fv, nf, sizeof *fv, by_fentry);
            break;
        }
    pgpost_lists_sort(l, q->nlex);
    if (!rc)
        rc = walk(q, l, exp, nexp, fv, nf, out);
done:
    pgpost_lists_free(l, BM25_MAX_PHRASES);
    free(fv);
    free(dead);
    free(exp);
    pg_rows_free(r);
    if (rc == MNEMO_NOTFOUND)
        return rc;
    if (rc == MNEMO_CORRUPT)
        return core_error(m, rc, DAMAGED);
    return rc ? core_error(m, rc, "out of memory") : MNEMO_OK;
}
