/*
 * pgmpost.c - the memories' inverted index on PostgreSQL (see pgmem_int.h):
 * per tenant, scope (user, agent, run, type) and lexeme, posting segments in
 * the chunks' encoding (pgpost.h: seq, frequency, length), so that a search
 * reads the postings of its words in its scope instead of every matching
 * row's tsvector.
 *
 * Tables (migration 8): mnemo_memory_postings holds the segments, each
 * written at a generation `gen`; mnemo_memory_post_state (tenant, merged,
 * gen) says that every memory with a seq up to `merged` is in them, except
 * those in mnemo_memory_post_dead (updated or deleted since), whose postings
 * count for nothing and which are read from their tsvectors, as the
 * memories above the mark are.
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
 * own (pgschema_worker), so that the writer does not wait for it. A merge
 * writes one segment per key at the next
 * generation; every MERGE_GENS generations the keys with more segments are
 * folded into one; when the dead pass a share of the memories, the index
 * is built again. A merge that fails (or is killed) leaves the memories
 * above the mark, still found from their rows.
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
#include "store/postgres/pgconn.h"
#include "store/postgres/pgmem.h"
#include "store/postgres/pgmem_int.h"
#include "store/postgres/pgmpost.h"
#include "store/postgres/pgpost.h"
#include "store/postgres/pgschema.h"

#define MERGE_AT 2000          /* memories above the mark before a write merges them */
#define MERGE_ROWS 2000        /* rows read per statement while merging */
#define MERGE_GENS 8           /* generations between folds; segments a key may keep */
#define MERGE_GENS_S "8"
#define MERGE_WRITE (4u << 20) /* bytes of segments per INSERT */
#define DEAD_MIN 1024          /* dead memories before the index is built again ... */
#define DEAD_SHARE 16          /* ... when more than 1/16 of the live ones */

/* ----------------------------------------------------------------------
 * Postings being written, by key
 * -------------------------------------------------------------------- */

/* The memory being added to a map (pgterms, pgpost.h). A key is user,
 * agent, run, type and lexeme, each NUL-terminated. */
typedef struct madd {
    pgterms *map;
    buf key;
    size_t scope; /* bytes of the key before the lexeme */
    int64_t seq;
    int ntok;
} madd;

static int add_lexeme(void *ud, const char *lex, size_t n, int npos)
{
    madd *a = ud;
    a->key.len = a->scope;
    buf_append(&a->key, lex, n);
    buf_putc(&a->key, 0);
    pgterm *e = buf_err(&a->key) ? NULL : pgterms_get(a->map, a->key.data, a->key.len);
    if (!e)
        return MNEMO_NOMEM;
    pgpost_put(&e->data, &e->last, a->seq, npos, a->ntok);
    e->n++;
    return buf_err(&e->data) ? MNEMO_NOMEM : MNEMO_OK;
}

/* The five parts of a key. */
static void key_parts(const char *key, const char *part[5])
{
    for (int i = 0; i < 5; i++) {
        part[i] = key;
        key += strlen(key) + 1;
    }
}

/* A memory's factor inputs in a factor segment: its seq's distance from
 * the previous one (varint), importance, creation and confirmation times
 * (the doubles' bits, little-endian), confirmations (varint) and whether it
 * is about the user (a byte). Varints as pgpost.h writes them. */
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
        while (d < ndead && dead[d] < seq)
            d++;
        if (d < ndead && dead[d] == seq)
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
    f.importance = pm_num_at(r, i, c);
    f.about_user = strcmp(pg_value(r, i, c + 1), "user") == 0;
    f.created = pm_num_at(r, i, c + 2);
    f.confirmed = pg_isnull(r, i, c + 3) ? 0 : pm_num_at(r, i, c + 3);
    f.confirmations = pm_num_at(r, i, c + 4);
    f.known = 1;
    return f;
}

/* ----------------------------------------------------------------------
 * Writing segments
 * -------------------------------------------------------------------- */

typedef struct msegs {
    buf col[8]; /* user, agent, run, type, lexeme, gen, n, data: array literals */
} msegs;

static void segs_init(msegs *g)
{
    for (int i = 0; i < 8; i++) {
        buf_init(&g->col[i], 0);
        buf_putc(&g->col[i], '{');
    }
}

static void segs_cleanup(msegs *g)
{
    for (int i = 0; i < 8; i++)
        buf_cleanup(&g->col[i]);
}

static int segs_write(mnemo *m, msegs *g)
{
    if (g->col[0].len <= 1)
        return MNEMO_OK;
    const char *p[9];
    p[0] = pgconn_tenant(m);
    for (int i = 0; i < 8; i++) {
        buf_putc(&g->col[i], '}');
        if (buf_err(&g->col[i]))
            return core_error(m, MNEMO_NOMEM, "out of memory");
        p[i + 1] = g->col[i].data;
    }
    int rc = pm_q(m, "writing the memory index",
                  "INSERT INTO mnemo_memory_postings(tenant, user_id, agent_id, run_id, type, "
                  "lexeme, gen, n, data) SELECT $1, x.u, x.a, x.r, x.t, x.l, x.g, x.n, x.d FROM "
                  "unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
                  "$7::bigint[], $8::int[], $9::bytea[]) AS x(u, a, r, t, l, g, n, d)",
                  9, p, NULL);
    for (int i = 0; i < 8; i++) {
        buf_reset(&g->col[i]);
        buf_putc(&g->col[i], '{');
    }
    return rc;
}

/* Adds the segment DATA[0..LEN) of N postings of KEY at GEN, and writes the
 * batch once large. */
static int segs_add(mnemo *m, msegs *g, const char *key, long long gen, long long n,
                    const char *data, size_t len)
{
    const char *part[5];
    key_parts(key, part);
    for (int i = 0; i < 5; i++)
        ps_arr_add(&g->col[i], part[i], strlen(part[i]));
    ps_arr_int(&g->col[5], gen);
    ps_arr_int(&g->col[6], n);
    buf *d = &g->col[7];
    if (d->len > 1)
        buf_putc(d, ',');
    buf_puts(d, "\"\\"); /* the hex's backslash escaped in the array */
    pgpost_hex(d, data, len);
    buf_putc(d, '"');
    return d->len >= MERGE_WRITE ? segs_write(m, g) : MNEMO_OK;
}

/* Factor segments: user, agent, run, type, gen, n, data. */
static int fsegs_write(mnemo *m, msegs *g)
{
    if (g->col[0].len <= 1)
        return MNEMO_OK;
    const char *p[8];
    p[0] = pgconn_tenant(m);
    for (int i = 0; i < 7; i++) {
        buf_putc(&g->col[i], '}');
        if (buf_err(&g->col[i]))
            return core_error(m, MNEMO_NOMEM, "out of memory");
        p[i + 1] = g->col[i].data;
    }
    int rc = pm_q(m, "writing the memory index",
                  "INSERT INTO mnemo_memory_factors(tenant, user_id, agent_id, run_id, type, gen, "
                  "n, data) SELECT $1, x.u, x.a, x.r, x.t, x.g, x.n, x.d FROM unnest($2::text[], "
                  "$3::text[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::bytea[]) AS "
                  "x(u, a, r, t, g, n, d)",
                  8, p, NULL);
    for (int i = 0; i < 7; i++) {
        buf_reset(&g->col[i]);
        buf_putc(&g->col[i], '{');
    }
    return rc;
}

static int fsegs_add(mnemo *m, msegs *g, const char *key, long long gen, long long n,
                     const char *data, size_t len)
{
    const char *part[5];
    key_parts(key, part);
    for (int i = 0; i < 4; i++)
        ps_arr_add(&g->col[i], part[i], strlen(part[i]));
    ps_arr_int(&g->col[4], gen);
    ps_arr_int(&g->col[5], n);
    buf *d = &g->col[6];
    if (d->len > 1)
        buf_putc(d, ',');
    buf_puts(d, "\"\\");
    pgpost_hex(d, data, len);
    buf_putc(d, '"');
    return d->len >= MERGE_WRITE ? fsegs_write(m, g) : MNEMO_OK;
}

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

/* The tenant's dead memories, sorted, into *V. */
static int dead_list(mnemo *m, int64_t **v, size_t *n)
{
    const char *p[1] = {pgconn_tenant(m)};
    pg_rows *r = NULL;
    int rc = pm_q(m, "reading the memory index",
                  "SELECT seq FROM mnemo_memory_post_dead WHERE tenant = $1 ORDER BY seq", 1, p,
                  &r);
    if (rc)
        return rc;
    *n = pg_nrows(r);
    if (!(*v = malloc((*n ? *n : 1) * sizeof **v))) {
        pg_rows_free(r);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < *n; i++)
        (*v)[i] = ll(r, i, 0);
    pg_rows_free(r);
    return MNEMO_OK;
}

/* A segment row returned by a fold, by key and generation. */
typedef struct frow {
    const char *col[5];
    int64_t gen;
    size_t row;
} frow;

static int by_key(const void *a, const void *b)
{
    const frow *x = a, *y = b;
    for (int c = 0; c < 5; c++) {
        int d = strcmp(x->col[c], y->col[c]);
        if (d)
            return d;
    }
    return (x->gen > y->gen) - (x->gen < y->gen);
}

static int same_key(const frow *x, const frow *y)
{
    for (int c = 0; c < 5; c++)
        if (strcmp(x->col[c], y->col[c]))
            return 0;
    return 1;
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
    int64_t *dead = NULL;
    size_t ndead = 0;
    int rc = dead_list(m, &dead, &ndead);
    const char *p[1] = {pgconn_tenant(m)};
    pg_rows *r = NULL;
    if (!rc && !fac)
        rc = pm_q(m, "folding the memory index",
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
        rc = pm_q(m, "folding the memory index",
                  "WITH k AS MATERIALIZED (SELECT user_id, agent_id, run_id, type FROM "
                  "mnemo_memory_factors WHERE tenant = $1 GROUP BY 1, 2, 3, 4 HAVING count(*) > "
                  MERGE_GENS_S ") DELETE FROM mnemo_memory_factors p WHERE p.ctid = ANY "
                  "(ARRAY(SELECT q.ctid FROM k CROSS JOIN LATERAL (SELECT x.ctid FROM "
                  "mnemo_memory_factors x WHERE x.tenant = $1 AND x.user_id = k.user_id AND "
                  "x.agent_id = k.agent_id AND x.run_id = k.run_id AND x.type = k.type OFFSET 0) "
                  "q)) RETURNING p.user_id, p.agent_id, p.run_id, p.type, '', p.gen, "
                  "p.data::text",
                  1, p, &r);
    size_t rows = rc ? 0 : pg_nrows(r);
    frow *ord = malloc((rows ? rows : 1) * sizeof *ord);
    if (!rc && !ord)
        rc = core_error(m, MNEMO_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < rows; i++) {
        for (int c = 0; c < 5; c++)
            ord[i].col[c] = pg_value(r, i, c);
        ord[i].gen = ll(r, i, 5);
        ord[i].row = i;
    }
    if (!rc && rows > 1)
        qsort(ord, rows, sizeof *ord, by_key);
    buf raw, seg, key;
    buf_init(&raw, 0);
    buf_init(&seg, 0);
    buf_init(&key, 0);
    msegs g;
    segs_init(&g);
    pgposting *v = NULL;
    fentry *fv = NULL;
    size_t nv = 0, cap = 0;
    for (size_t i = 0; !rc && i < rows;) {
        size_t j = i;
        long long gen = 0;
        nv = 0;
        for (; !rc && j < rows && same_key(&ord[i], &ord[j]); j++) {
            gen = ord[j].gen;
            int ok = 0;
            if (pgpost_unhex(pg_value(r, ord[j].row, 6), &raw))
                ok = fac ? decode_factors((const unsigned char *)raw.data, raw.len, dead, ndead,
                                          &fv, &nv, &cap)
                         : pgpost_decode((const unsigned char *)raw.data, raw.len, dead, ndead,
                                         &v, &nv, &cap);
            if (ok < 0)
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
            else if (!ok)
                rc = core_error(m, MNEMO_CORRUPT, "a segment of the memories' keyword index is "
                                "damaged");
        }
        if (!rc && nv) {
            buf_reset(&seg);
            buf_reset(&key);
            int64_t last = 0;
            for (size_t k = 0; k < nv; k++) {
                if (fac)
                    put_factors(&seg, &last, fv[k].seq, &fv[k].f);
                else
                    pgpost_put(&seg, &last, v[k].id, v[k].tf, v[k].ntok);
            }
            for (int c = 0; c < 5; c++) {
                buf_puts(&key, ord[i].col[c]);
                buf_putc(&key, 0);
            }
            const char *d = seg.data ? seg.data : "";
            if (buf_err(&seg) || buf_err(&key))
                rc = core_error(m, MNEMO_NOMEM, "out of memory");
            else if (fac)
                rc = fsegs_add(m, &g, key.data, gen, (long long)nv, d, seg.len);
            else
                rc = segs_add(m, &g, key.data, gen, (long long)nv, d, seg.len);
        }
        i = j;
    }
    if (!rc)
        rc = fac ? fsegs_write(m, &g) : segs_write(m, &g);
    segs_cleanup(&g);
    buf_cleanup(&raw);
    buf_cleanup(&seg);
    buf_cleanup(&key);
    free(v);
    free(fv);
    free(ord);
    free(dead);
    pg_rows_free(r);
    return rc;
}

/* The merge of the memories up to seq TO (every one committed), inside
 * its transaction, under the merge lock. */
static int merge_tx(mnemo *m, int64_t to, int64_t *mark)
{
    const char *t = pgconn_tenant(m);
    char upto[32];
    snprintf(upto, sizeof upto, "%lld", (long long)to);
    const char *p[3] = {t, NULL, upto};
    pg_rows *r = NULL;
    int rc = pm_q(m, "merging the memory index",
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
    /* The statistics count the merged memories (pm_stats_merged): none
     * before the first merge, and a rebuild counts them all again. */
    if (fresh)
        rc = pm_stats_reset(m);
    if (!rc && !fresh && ndead > DEAD_MIN && ndead > live / DEAD_SHARE) {
        /* Built again from every row: the dead go with the old segments. */
        rc = pm_q(m, "merging the memory index",
                  "DELETE FROM mnemo_memory_postings WHERE tenant = $1", 1, p, NULL);
        if (!rc)
            rc = pm_q(m, "merging the memory index",
                      "DELETE FROM mnemo_memory_factors WHERE tenant = $1", 1, p, NULL);
        if (!rc)
            rc = pm_q(m, "merging the memory index",
                      "DELETE FROM mnemo_memory_post_dead WHERE tenant = $1", 1, p, NULL);
        if (!rc)
            rc = pm_stats_reset(m);
        merged = -1;
    }
    int64_t first = merged;
    pgterms map = {0}, fmap = {0};
    madd a = {&map, {0}, 0, 0, 0};
    buf_init(&a.key, 0);
    buf w;
    buf_init(&w, 0);
    int64_t after = merged;
    char num[32];
    while (!rc) {
        snprintf(num, sizeof num, "%lld", (long long)after);
        p[1] = num;
        r = NULL;
        rc = pm_q(m, "merging the memory index",
                  "SELECT seq, user_id, agent_id, run_id, type, ntok, tsv::text, importance, "
                  "subject, created_at, last_confirmed_at, confirmations, deleted_at IS NULL FROM "
                  "mnemo_memories WHERE tenant = $1 AND seq > $2::bigint AND seq <= $3::bigint "
                  "ORDER BY seq LIMIT 2000",
                  3, p, &r);
        if (rc)
            break;
        size_t n = pg_nrows(r);
        for (size_t i = 0; !rc && i < n; i++) {
            buf_reset(&a.key);
            for (int c = 1; c <= 4; c++) {
                buf_puts(&a.key, pg_value(r, i, c));
                buf_putc(&a.key, 0);
            }
            a.scope = a.key.len;
            a.seq = ll(r, i, 0);
            a.ntok = (int)ll(r, i, 5);
            rc = buf_err(&a.key) ? MNEMO_NOMEM
                                 : pgpost_tsv_each(pg_value(r, i, 6), &w, add_lexeme, &a);
            if (!rc && !strcmp(pg_value(r, i, 12), "t")) { /* live: its factors */
                a.key.len = a.scope;
                buf_putc(&a.key, 0); /* no lexeme */
                pgterm *e = buf_err(&a.key) ? NULL : pgterms_get(&fmap, a.key.data, a.key.len);
                pgmpost_factors f = factors_at(r, i, 7);
                if (e) {
                    put_factors(&e->data, &e->last, a.seq, &f);
                    e->n++;
                }
                rc = !e || buf_err(&e->data) ? MNEMO_NOMEM : MNEMO_OK;
            }
            if (rc)
                rc = core_error(m, rc, "out of memory");
        }
        if (n)
            after = ll(r, n - 1, 0);
        pg_rows_free(r);
        if (n < MERGE_ROWS)
            break;
    }
    msegs g;
    segs_init(&g);
    for (size_t i = 0; !rc && i < map.cap; i++) {
        pgterm *e = &map.t[i];
        if (e->key)
            rc = segs_add(m, &g, e->key, (long long)(gen + 1), e->n,
                          e->data.data ? e->data.data : "", e->data.len);
    }
    if (!rc)
        rc = segs_write(m, &g);
    for (size_t i = 0; !rc && i < fmap.cap; i++) {
        pgterm *e = &fmap.t[i];
        if (e->key)
            rc = fsegs_add(m, &g, e->key, (long long)(gen + 1), e->n,
                           e->data.data ? e->data.data : "", e->data.len);
    }
    if (!rc)
        rc = fsegs_write(m, &g);
    segs_cleanup(&g);
    pgterms_cleanup(&map);
    pgterms_cleanup(&fmap);
    buf_cleanup(&a.key);
    buf_cleanup(&w);
    char g1[32];
    snprintf(num, sizeof num, "%lld", (long long)after);
    snprintf(g1, sizeof g1, "%lld", (long long)(gen + 1));
    const char *p3[3] = {t, num, g1};
    if (!rc && after > first)
        rc = pm_stats_merged(m, first, after);
    if (!rc)
        rc = pm_q(m, "merging the memory index",
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
    int rc = pm_q(m, "merging the memory index", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = pm_q(m, "merging the memory index",
                  "SELECT pg_advisory_xact_lock(" PM_POST_LOCK ", hashtext($1))", 1, p, NULL);
    if (!rc) /* a statement of its own: its snapshot is taken under the lock */
        rc = pm_q(m, "merging the memory index",
                  "SELECT coalesce(max(seq), -1) FROM mnemo_memories WHERE tenant = $1", 1, p,
                  &r);
    if (!rc)
        *to = ll(r, 0, 0);
    pg_rows_free(r);
    if (!rc)
        return pm_q(m, "merging the memory index", "COMMIT", 0, NULL, NULL);
    pm_q(m, "merging the memory index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

/* The merge; *MARK the mark after it. */
static int merge(mnemo *m, int64_t *mark)
{
    const char *p[1] = {pgconn_tenant(m)};
    int64_t to = -1;
    int rc = merge_bound(m, &to);
    if (rc || (rc = pm_q(m, "merging the memory index", "BEGIN", 0, NULL, NULL)))
        return rc;
    rc = pm_q(m, "merging the memory index",
              "SELECT pg_advisory_xact_lock(" PM_MERGE_LOCK ", hashtext($1))", 1, p, NULL);
    if (!rc)
        rc = merge_tx(m, to, mark);
    if (!rc)
        return pm_q(m, "merging the memory index", "COMMIT", 0, NULL, NULL);
    pm_q(m, "merging the memory index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

/* A merge on a thread of its own, with a handle of its own. */
typedef struct pgmerger {
    pthread_t thread;
    mnemo *w;        /* pgschema_worker's */
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
    if (!g || !(g->w = pgschema_worker(m))) {
        free(g);
        return 0;
    }
    atomic_init(&g->done, 0);
    if (pthread_create(&g->thread, NULL, merger_main, g) != 0) {
        pgschema_worker_free(g->w);
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
    pgschema_worker_free(g->w);
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
    struct pgmem *ps = pm_state(m);
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
        if (pm_q(m, "reading the memory index",
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
    return pm_q(m, "memories",
                "SELECT pg_advisory_xact_lock_shared(" PM_POST_LOCK ", hashtext($1)), "
                "pg_advisory_xact_lock_shared(" PM_MERGE_LOCK ", hashtext($1))",
                1, p, NULL);
}

int pgmpost_dead(mnemo *m, const char *id)
{
    const char *p[2] = {pgconn_tenant(m), id};
    return pm_q(m, "memories",
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

typedef struct plist {
    pgposting *v;
    size_t n, cap;
    int unsorted;
} plist;

static int plist_push(plist *l, int64_t id, int ntok, int tf)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        pgposting *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return MNEMO_NOMEM;
        l->v = nv;
        l->cap = nc;
    }
    if (l->n && l->v[l->n - 1].id > id)
        l->unsorted = 1;
    l->v[l->n++] = (pgposting){id, ntok, tf};
    return MNEMO_OK;
}

static int by_posting(const void *a, const void *b)
{
    const pgposting *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

typedef struct rowtf {
    const char *const *lex;
    int nlex;
    plist *l;
    int64_t seq;
    int ntok;
} rowtf;

static int row_lexeme(void *ud, const char *lex, size_t n, int npos)
{
    rowtf *c = ud;
    for (int k = 0; k < c->nlex; k++)
        if (strlen(c->lex[k]) == n && !memcmp(c->lex[k], lex, n))
            return plist_push(&c->l[k], c->seq, c->ntok, npos > 255 ? 255 : npos);
    return MNEMO_OK;
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

int pgmpost_read(mnemo *m, const pgmpost_query *q, pgmpost_docs *out)
{
    memset(out, 0, sizeof *out);
    params *pp = q->p;
    int n0 = pp->n;
    int L = pm_params_add(pp, q->lexs), Q = pm_params_add(pp, q->tsq),
        N = pm_params_add(pp, q->now);
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
    pg_rows *r = NULL;
    int rc = buf_err(&sql) ? core_error(m, MNEMO_NOMEM, "out of memory")
                           : pm_q(m, "memory search", sql.data, pp->n, pp->v, &r);
    pp->n = n0;
    buf_cleanup(&sql);
    if (rc)
        return rc;
    size_t rows = pg_nrows(r);
    int have_mark = 0;
    size_t ndead = 0, nexp = 0, nf = 0, fcap = 0;
    fentry *fv = NULL;
    int64_t *dead = malloc((rows + 1) * sizeof *dead), *exp = malloc((rows + 1) * sizeof *exp);
    plist l[BM25_MAX_PHRASES];
    memset(l, 0, sizeof l);
    buf raw, w;
    buf_init(&raw, 0);
    buf_init(&w, 0);
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
    for (size_t i = 0; !rc && i < rows; i++) {
        long kind = strtol(pg_value(r, i, 0), NULL, 10);
        if (kind == 0) {
            const char *lex = pg_value(r, i, 1);
            int k = 0;
            while (k < q->nlex && strcmp(q->lex[k], lex))
                k++;
            if (k == q->nlex)
                continue;
            if (!pgpost_unhex(pg_value(r, i, 3), &raw)) {
                rc = MNEMO_CORRUPT;
                break;
            }
            size_t before = l[k].n;
            int ok = pgpost_decode((const unsigned char *)raw.data, raw.len, dead, ndead,
                                   &l[k].v, &l[k].n, &l[k].cap);
            rc = ok < 0 ? MNEMO_NOMEM : ok == 0 ? MNEMO_CORRUPT : MNEMO_OK;
            if (!rc && before && l[k].n > before && l[k].v[before].id < l[k].v[before - 1].id)
                l[k].unsorted = 1;
        } else if (kind == 2) {
            /* "importance true|false created confirmed|- confirmations ntok tsv" */
            char *end;
            const char *txt = pg_value(r, i, 3);
            fentry e;
            e.seq = ll(r, i, 2);
            e.f.importance = strtod(txt, &end);
            e.f.about_user = strncmp(end, " t", 2) == 0;
            end = strchr(end + 1, ' ');
            e.f.created = end ? strtod(end, &end) : 0;
            while (end && *end == ' ')
                end++;
            e.f.confirmed = end && *end == '-' ? 0 : end ? strtod(end, &end) : 0;
            if (end && *end == '-')
                end++;
            e.f.confirmations = end ? strtod(end, &end) : 0;
            e.f.known = 1;
            int ntok = end ? (int)strtol(end, &end, 10) : 0;
            rowtf c = {q->lex, q->nlex, l, e.seq, ntok};
            rc = end ? pgpost_tsv_each(end, &w, row_lexeme, &c) : MNEMO_CORRUPT;
            if (!rc && nf == fcap) {
                size_t nc = fcap ? fcap * 2 : 1024;
                fentry *nw = realloc(fv, nc * sizeof *nw);
                if (!nw)
                    rc = MNEMO_NOMEM;
                else {
                    fv = nw;
                    fcap = nc;
                }
            }
            if (!rc)
                fv[nf++] = e;
        } else if (kind == 5) {
            if (!pgpost_unhex(pg_value(r, i, 3), &raw)) {
                rc = MNEMO_CORRUPT;
                break;
            }
            int ok = decode_factors((const unsigned char *)raw.data, raw.len, dead, ndead, &fv,
                                    &nf, &fcap);
            rc = ok < 0 ? MNEMO_NOMEM : ok == 0 ? MNEMO_CORRUPT : MNEMO_OK;
        }
    }
    for (size_t i = 1; !rc && i < nf; i++)
        if (fv[i].seq < fv[i - 1].seq) {
            qsort(fv, nf, sizeof *fv, by_fentry);
            break;
        }
    size_t fat = 0;
    /* Document at a time over the lists, the expired left out. */
    size_t at[BM25_MAX_PHRASES] = {0}, cap = 0;
    for (int k = 0; !rc && k < q->nlex; k++)
        if (l[k].unsorted && l[k].n > 1)
            qsort(l[k].v, l[k].n, sizeof *l[k].v, by_posting);
    while (!rc) {
        int64_t id = INT64_MAX;
        for (int k = 0; k < q->nlex; k++)
            if (at[k] < l[k].n && l[k].v[at[k]].id < id)
                id = l[k].v[at[k]].id;
        if (id == INT64_MAX)
            break;
        int keep = !in_sorted(exp, nexp, id);
        if (keep && out->n == cap) {
            size_t nc = cap ? cap * 2 : 1024;
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
            if (!s || !nt || !tf || !fa) {
                rc = MNEMO_NOMEM;
                break;
            }
            cap = nc;
        }
        uint8_t *tf = keep ? out->tf + out->n * BM25_MAX_PHRASES : NULL;
        if (tf)
            memset(tf, 0, BM25_MAX_PHRASES);
        for (int k = 0; k < q->nlex; k++) {
            if (at[k] < l[k].n && l[k].v[at[k]].id == id) {
                const pgposting *x = &l[k].v[at[k]++];
                if (tf) {
                    tf[k] = (uint8_t)x->tf;
                    out->ntok[out->n] = x->ntok;
                }
            }
        }
        if (keep) {
            while (fat < nf && fv[fat].seq < id)
                fat++;
            if (fat < nf && fv[fat].seq == id)
                out->f[out->n] = fv[fat].f;
            else
                memset(&out->f[out->n], 0, sizeof out->f[out->n]);
            out->seq[out->n++] = id;
        }
    }
done:
    for (int k = 0; k < BM25_MAX_PHRASES; k++)
        free(l[k].v);
    free(fv);
    free(dead);
    free(exp);
    buf_cleanup(&raw);
    buf_cleanup(&w);
    pg_rows_free(r);
    if (rc == MNEMO_NOTFOUND)
        return rc;
    if (rc == MNEMO_CORRUPT)
        return core_error(m, rc, "a segment of the memories' keyword index is damaged");
    return rc ? core_error(m, rc, "out of memory") : MNEMO_OK;
}
