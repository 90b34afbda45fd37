/*
 * pgpost.c - the inverted index on PostgreSQL (see pgint.h): what the
 * notes' chunks (pgnpost.c) and the memories (pgmpost.c) index the same way.
 *
 * A segment is one row per key (tenant, scope, lexeme): the postings of the
 * documents holding the lexeme, in id order, each as the id's distance
 * from the previous one (a varint, the first from 0), the lexeme's
 * frequency in the document (one byte, saturated at 255 as the tsvector's
 * positions are) and the document's length in tokens (a varint). `gen`
 * orders a key's segments: in gen order they hold increasing ids. The
 * memories' factor segments frame their entries the same way (the id's
 * distance, then a tail of their own), so folding serves them too.
 *
 * What both indexes share, here:
 *   - the encoding, and reading a tsvector's lexemes;
 *   - the table of postings being written, by key (pgterms);
 *   - writing segments, a batch per INSERT in binary arrays;
 *   - folding a key's segments into one, the dead documents left out: the
 *     entries' tails are copied, their ids' distances written again;
 *   - reading the documents above the mark a page at a time, to merge them;
 *   - the dead list, sorted;
 *   - a query term's list from segments and rows, and the walk over the
 *     lists document at a time.
 *
 * What differs, in each index's file:
 *
 *                notes' chunks (pgnpost.c)      memories (pgmpost.c)
 *   tables       mnemo_postings, _post_state,   mnemo_memory_postings, _factors,
 *                _post_dead                     _post_state, _post_dead
 *   scope        source (memory, sessions)      user, agent, run, type
 *   document     chunk id                       seq
 *   gen          the mark the segment was       a generation, one per merge
 *                written at
 *   merging      by the sync, at a batch's      by the write that finds 2,000
 *                commit once 4M postings wait   memories above the mark, on a
 *                (and at its last), in its      thread, in a transaction of its
 *                transaction                    own under the merge lock
 *   folding      after each merge, the keys     every 8 generations, every key
 *                written with more than 8       with more than 8 segments
 *                segments
 *   many dead    every key folded (past 1/16    the index built again (past
 *                of the chunks)                 1/16 of the memories)
 *   factors      none                           per scope, each memory's score
 *                                               factor inputs
 *   a search     the POOL best by BM25 (a       every match in scope, with its
 *                heap), its statistics; the     factors, the expired left out;
 *                candidates of phrases and      pgmsearch.c ranks them
 *                prefixes
 *
 * Neither walk bounds scores to stop early (MaxScore): a search reads only
 * its terms' lists, and scoring every document on them is exact. MaxScore's
 * rounds over the GIN index (pgmaxscore.c) serve the memory searches these
 * lists do not.
 */
#include "store/postgres/pgint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define PGPOST_WRITE (4u << 20) /* bytes of segments per INSERT statement */

/* ----------------------------------------------------------------------
 * Encoding
 * -------------------------------------------------------------------- */

void pgpost_put_varint(buf *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (unsigned char)v;
    buf_append(b, (const char *)t, n);
}

int pgpost_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned c = *(*p)++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

void pgpost_put(buf *b, int64_t *last, int64_t id, int tf, int ntok)
{
    pgpost_put_varint(b, (uint64_t)(id - *last));
    buf_putc(b, (char)(tf > 255 ? 255 : tf < 1 ? 1 : tf));
    pgpost_put_varint(b, (uint64_t)(ntok > 0 ? ntok : 0));
    *last = id;
}

int pgpost_tail(const unsigned char **p, const unsigned char *end)
{
    uint64_t len;
    if (*p >= end)
        return 0;
    (*p)++; /* the frequency */
    return pgpost_get_varint(p, end, &len);
}

int pgpost_decode(const unsigned char *p, size_t n, const int64_t *dead, size_t ndead,
                  pgposting **v, size_t *nv, size_t *cap)
{
    const unsigned char *end = p + n;
    int64_t id = 0;
    size_t d = 0;
    while (p < end) {
        uint64_t delta, len;
        if (!pgpost_get_varint(&p, end, &delta) || p >= end)
            return 0;
        int tf = *p++;
        if (!pgpost_get_varint(&p, end, &len))
            return 0;
        id += (int64_t)delta;
        if (pgpost_is_dead(dead, ndead, &d, id))
            continue;
        if (*nv == *cap) {
            size_t nc = *cap ? *cap * 2 : 256;
            pgposting *nw = realloc(*v, nc * sizeof *nw);
            if (!nw)
                return -1;
            *v = nw;
            *cap = nc;
        }
        (*v)[(*nv)++] = (pgposting){id, (int)len, tf};
    }
    return 1;
}

int pgpost_unhex(const char *s, buf *out)
{
    buf_reset(out);
    if (s[0] != '\\' || s[1] != 'x')
        return 0;
    size_t n = strlen(s + 2) / 2;
    if (buf_reserve(out, n + 1))
        return 0;
    long got = pgtext_unhex(s, out->data, n);
    if (got < 0)
        return 0;
    out->len = (size_t)got;
    out->data[got] = 0;
    return 1;
}

int pgpost_tsv_each(const char *t, buf *w,
                    int (*fn)(void *ud, const char *lex, size_t n, int npos), void *ud)
{
    while (*t == ' ')
        t++;
    while (*t == '\'') {
        buf_reset(w);
        for (t++; *t; t++) {
            if (*t == '\'' && t[1] != '\'')
                break;
            if ((*t == '\'' || *t == '\\') && t[1] == *t)
                t++;
            buf_putc(w, *t);
        }
        if (*t == '\'')
            t++;
        int npos = 0;
        if (*t == ':')
            for (npos = 1, t++; *t && *t != ' '; t++)
                npos += *t == ',';
        if (buf_err(w))
            return MNEMO_NOMEM;
        int rc = fn(ud, w->data ? w->data : "", w->len, npos ? npos : 1);
        if (rc)
            return rc;
        while (*t == ' ')
            t++;
    }
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Postings being written
 * -------------------------------------------------------------------- */

static uint32_t fnv(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static int terms_grow(pgterms *p)
{
    size_t nc = p->cap ? p->cap * 2 : 4096;
    pgterm *nt = calloc(nc, sizeof *nt);
    if (!nt)
        return MNEMO_NOMEM;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->t[i].key)
            continue;
        size_t j = p->t[i].hash & (nc - 1);
        while (nt[j].key)
            j = (j + 1) & (nc - 1);
        nt[j] = p->t[i];
    }
    free(p->t);
    p->t = nt;
    p->cap = nc;
    return MNEMO_OK;
}

pgterm *pgpost_terms_get(pgterms *p, const char *key, size_t n)
{
    if ((p->used + 1) * 2 > p->cap && terms_grow(p))
        return NULL;
    uint32_t h = fnv(key, n);
    size_t j = h & (p->cap - 1);
    while (p->t[j].key &&
           (p->t[j].hash != h || p->t[j].klen != n || memcmp(p->t[j].key, key, n)))
        j = (j + 1) & (p->cap - 1);
    pgterm *e = &p->t[j];
    if (!e->key) {
        if (!(e->key = malloc(n ? n : 1)))
            return NULL;
        memcpy(e->key, key, n);
        e->klen = n;
        e->hash = h;
        buf_init(&e->data, 0);
        p->used++;
    }
    return e;
}

void pgpost_terms_cleanup(pgterms *p)
{
    for (size_t i = 0; i < p->cap; i++) {
        free(p->t[i].key);
        buf_cleanup(&p->t[i].data);
    }
    free(p->t);
    memset(p, 0, sizeof *p);
}

int pgpost_terms_post(pgterms *p, buf *key, size_t scope, const char *lex, size_t n, int64_t id,
                      int npos, int ntok)
{
    key->len = scope;
    buf_append(key, lex, n);
    buf_putc(key, 0);
    pgterm *e = buf_err(key) ? NULL : pgpost_terms_get(p, key->data, key->len);
    if (!e)
        return MNEMO_NOMEM;
    pgpost_put(&e->data, &e->last, id, npos, ntok);
    e->n++;
    p->posts++;
    return buf_err(&e->data) ? MNEMO_NOMEM : MNEMO_OK;
}

void pgpost_key_parts(const char *key, int n, const char **part)
{
    for (int i = 0; i < n; i++) {
        part[i] = key;
        key += strlen(key) + 1;
    }
}

/* ----------------------------------------------------------------------
 * Segments
 * -------------------------------------------------------------------- */

/* Column I's element type: the key's texts, then gen, n and data. */
static uint32_t seg_oid(const pgpost_table *t, int i)
{
    return i < t->nkey ? PG_TEXTOID : i == t->nkey ? PG_INT8OID
                                 : i == t->nkey + 1 ? PG_INT4OID : PG_BYTEAOID;
}

static void segs_start(pgpost_segs *g)
{
    for (int i = 0; i < g->t->nkey + 3; i++)
        pgtext_barr_start(&g->a[i], seg_oid(g->t, i));
}

void pgpost_segs_init(pgpost_segs *g, const pgpost_table *t, const char *tenant)
{
    g->t = t;
    g->tenant = tenant;
    for (int i = 0; i < t->nkey + 3; i++)
        pgtext_barr_init(&g->a[i]);
    segs_start(g);
}

void pgpost_segs_cleanup(pgpost_segs *g)
{
    for (int i = 0; i < g->t->nkey + 3; i++)
        pgtext_barr_cleanup(&g->a[i]);
}

int pgpost_segs_write(mnemo *m, pgpost_segs *g)
{
    int na = g->t->nkey + 3;
    if (!g->a[0].n)
        return MNEMO_OK;
    const char *prm[PGPOST_MAX_KEY + 4] = {g->tenant};
    int lens[PGPOST_MAX_KEY + 4] = {0}, fmt[PGPOST_MAX_KEY + 4] = {0};
    for (int i = 0; i < na; i++) {
        pgtext_barr_end(&g->a[i]);
        if (buf_err(&g->a[i].b))
            return core_error(m, MNEMO_NOMEM, "out of memory");
        prm[1 + i] = g->a[i].b.data;
        lens[1 + i] = (int)g->a[i].b.len;
        fmt[1 + i] = 1;
    }
    int rc = pgquery_send(m, g->t->write, g->t->insert, 1 + na, prm, lens, fmt);
    if (!rc)
        rc = pgquery_collect(m, g->t->write, NULL);
    segs_start(g);
    return rc;
}

int pgpost_segs_add(mnemo *m, pgpost_segs *g, const char *const *part, long long gen,
                    long long n, const char *data, size_t len)
{
    int k = g->t->nkey;
    for (int i = 0; i < k; i++)
        pgtext_barr_bytes(&g->a[i], part[i], strlen(part[i]));
    pgtext_barr_int8(&g->a[k], gen);
    pgtext_barr_int4(&g->a[k + 1], (int32_t)n);
    pgtext_barr_bytes(&g->a[k + 2], data, len);
    return g->a[k + 2].b.len >= PGPOST_WRITE ? pgpost_segs_write(m, g) : MNEMO_OK;
}

int pgpost_segs_terms(mnemo *m, pgpost_segs *g, const pgterms *terms, long long gen)
{
    int rc = MNEMO_OK;
    for (size_t i = 0; !rc && i < terms->cap; i++) {
        const pgterm *e = &terms->t[i];
        const char *part[PGPOST_MAX_KEY];
        if (!e->key)
            continue;
        pgpost_key_parts(e->key, g->t->nkey, part);
        rc = pgpost_segs_add(m, g, part, gen, e->n, e->data.data ? e->data.data : "",
                             e->data.len);
    }
    return rc ? rc : pgpost_segs_write(m, g);
}

int pgpost_pages(mnemo *m, const char *what, const char *sql, int n, const char **prm,
                 int64_t *after, int (*fn)(void *ud, const pg_rows *r, int more), void *ud)
{
    char from[32];
    int rc = MNEMO_OK;
    for (size_t got = PGPOST_ROWS; !rc && got == PGPOST_ROWS;) {
        snprintf(from, sizeof from, "%lld", (long long)*after);
        prm[1] = from;
        pg_rows *r = NULL;
        if ((rc = pgquery_q(m, what, sql, n, prm, &r)))
            break;
        got = pg_nrows(r);
        if (got)
            *after = strtoll(pg_value(r, got - 1, 0), NULL, 10);
        rc = fn(ud, r, got == PGPOST_ROWS);
        pg_rows_free(r);
    }
    return rc;
}

int pgpost_ids(mnemo *m, const char *what, const char *sql, const char *tenant, int64_t **v,
               size_t *n)
{
    const char *prm[1] = {tenant};
    pg_rows *r = NULL;
    int rc = pgquery_q(m, what, sql, 1, prm, &r);
    if (rc)
        return rc;
    *n = pg_nrows(r);
    *v = malloc((*n ? *n : 1) * sizeof **v);
    if (!*v) {
        pg_rows_free(r);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < *n; i++)
        (*v)[i] = strtoll(pg_value(r, i, 0), NULL, 10);
    pg_rows_free(r);
    return MNEMO_OK;
}

/* A segment row to fold: its key's columns, gen, and its row. */
typedef struct frow {
    const char *col[PGPOST_MAX_KEY];
    int ncol;
    int64_t gen;
    size_t row;
} frow;

/* Key, then gen: a key's ids in order. */
static int by_key(const void *a, const void *b)
{
    const frow *x = a, *y = b;
    for (int c = 0; c < x->ncol; c++) {
        int d = strcmp(x->col[c], y->col[c]);
        if (d)
            return d;
    }
    return (x->gen > y->gen) - (x->gen < y->gen);
}

static int same_key(const frow *x, const frow *y)
{
    for (int c = 0; c < x->ncol; c++)
        if (strcmp(x->col[c], y->col[c]))
            return 0;
    return 1;
}

/* Appends the entries of segment P[0..N) to OUT after the one of id *LAST,
 * the dead left out, counting them in *KEPT: an entry's tail does not
 * depend on its place, so it is copied and only the id's distance written
 * again. 0 when the segment is damaged. */
static int copy_live(const pgpost_table *t, const unsigned char *p, size_t n,
                     const int64_t *dead, size_t ndead, buf *out, int64_t *last, long long *kept)
{
    const unsigned char *end = p + n;
    int64_t id = 0;
    size_t d = 0;
    while (p < end) {
        uint64_t delta;
        if (!pgpost_get_varint(&p, end, &delta))
            return 0;
        const unsigned char *tail = p;
        if (!t->tail(&p, end))
            return 0;
        id += (int64_t)delta;
        if (pgpost_is_dead(dead, ndead, &d, id))
            continue;
        pgpost_put_varint(out, (uint64_t)(id - *last));
        buf_append(out, tail, (size_t)(p - tail));
        *last = id;
        (*kept)++;
    }
    return 1;
}

int pgpost_fold(mnemo *m, const pgpost_table *t, const char *tenant, const pg_rows *r, int gen,
                const int64_t *dead, size_t ndead)
{
    size_t rows = pg_nrows(r);
    frow *ord = malloc((rows ? rows : 1) * sizeof *ord);
    if (!ord)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    for (size_t i = 0; i < rows; i++) {
        for (int c = 0; c < t->nkey; c++)
            ord[i].col[c] = pg_value(r, i, c);
        ord[i].ncol = t->nkey;
        ord[i].gen = strtoll(pg_value(r, i, gen), NULL, 10);
        ord[i].row = i;
    }
    if (rows > 1)
        qsort(ord, rows, sizeof *ord, by_key);
    buf raw, seg;
    buf_init(&raw, 0);
    buf_init(&seg, 0);
    pgpost_segs g;
    pgpost_segs_init(&g, t, tenant);
    int rc = MNEMO_OK;
    for (size_t i = 0; !rc && i < rows;) {
        size_t j = i;
        int64_t last = 0;
        long long kept = 0;
        buf_reset(&seg);
        for (; !rc && j < rows && same_key(&ord[i], &ord[j]); j++) {
            if (!pgpost_unhex(pg_value(r, ord[j].row, gen + 1), &raw) ||
                !copy_live(t, (const unsigned char *)raw.data, raw.len, dead, ndead, &seg, &last,
                           &kept))
                rc = core_error(m, MNEMO_CORRUPT, "%s", t->damaged);
        }
        if (!rc && buf_err(&seg))
            rc = core_error(m, MNEMO_NOMEM, "out of memory");
        if (!rc && kept)
            rc = pgpost_segs_add(m, &g, ord[i].col, ord[j - 1].gen, kept,
                                 seg.data ? seg.data : "", seg.len);
        i = j;
    }
    if (!rc)
        rc = pgpost_segs_write(m, &g);
    pgpost_segs_cleanup(&g);
    buf_cleanup(&raw);
    buf_cleanup(&seg);
    free(ord);
    return rc;
}

/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

int pgpost_list_push(pgpost_list *l, int64_t id, int ntok, int tf)
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

int pgpost_lists_segment(pgpost_list *l, const char *const *lex, int nlex, const char *lexeme,
                         const char *hex, buf *raw, const int64_t *dead, size_t ndead)
{
    int decoded = 0;
    for (int k = 0; k < nlex; k++) {
        if (strcmp(lex[k], lexeme))
            continue;
        if (!decoded && !pgpost_unhex(hex, raw))
            return MNEMO_CORRUPT;
        decoded = 1;
        size_t before = l[k].n;
        int ok = pgpost_decode((const unsigned char *)raw->data, raw->len, dead, ndead, &l[k].v,
                               &l[k].n, &l[k].cap);
        if (ok <= 0)
            return ok < 0 ? MNEMO_NOMEM : MNEMO_CORRUPT;
        if (before && l[k].n > before && l[k].v[before].id < l[k].v[before - 1].id)
            l[k].unsorted = 1;
    }
    return MNEMO_OK;
}

typedef struct tsvrow {
    pgpost_list *l;
    const char *const *lex;
    int nlex;
    int64_t id;
    int ntok;
} tsvrow;

static int tsv_lexeme(void *ud, const char *lex, size_t n, int npos)
{
    tsvrow *c = ud;
    int rc = MNEMO_OK;
    for (int k = 0; !rc && k < c->nlex; k++)
        if (strlen(c->lex[k]) == n && !memcmp(c->lex[k], lex, n))
            rc = pgpost_list_push(&c->l[k], c->id, c->ntok, npos > 255 ? 255 : npos);
    return rc;
}

int pgpost_lists_tsv(pgpost_list *l, const char *const *lex, int nlex, int64_t id, int ntok,
                     const char *t, buf *w)
{
    tsvrow c = {l, lex, nlex, id, ntok};
    return pgpost_tsv_each(t, w, tsv_lexeme, &c);
}

static int by_posting(const void *a, const void *b)
{
    const pgposting *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

void pgpost_lists_sort(pgpost_list *l, int n)
{
    for (int k = 0; k < n; k++) {
        if (l[k].unsorted && l[k].n > 1)
            qsort(l[k].v, l[k].n, sizeof *l[k].v, by_posting);
        l[k].unsorted = 0;
    }
}

int64_t pgpost_next(pgpost_list *l, int n, uint8_t *tf, int *ntok, uint64_t *mask)
{
    int64_t id = INT64_MAX;
    for (int k = 0; k < n; k++)
        if (l[k].at < l[k].n && l[k].v[l[k].at].id < id)
            id = l[k].v[l[k].at].id;
    *mask = 0;
    if (id == INT64_MAX)
        return id;
    for (int k = 0; k < n; k++) {
        tf[k] = 0;
        if (l[k].at < l[k].n && l[k].v[l[k].at].id == id) {
            const pgposting *q = &l[k].v[l[k].at++];
            tf[k] = (uint8_t)q->tf;
            *ntok = q->ntok;
            *mask |= (uint64_t)1 << k;
        }
    }
    return id;
}

void pgpost_lists_free(pgpost_list *l, int n)
{
    for (int k = 0; k < n; k++)
        free(l[k].v);
}
