/*
 * pgpost.c - the chunks' inverted index on PostgreSQL (see pgpost.h).
 *
 * A segment is one row per source and lexeme: the postings of the chunks
 * holding it, in id order, each as the id's distance from the previous one
 * (a varint, the first from 0), the lexeme's frequency in the chunk (one
 * byte, saturated at 255 as the tsvector's positions are) and the chunk's
 * length in tokens (a varint). `gen` is the merged mark the segment was
 * written at, so a lexeme's segments in gen order hold increasing ids.
 *
 * Writes. Sync adds each chunk it inserts; at a batch's commit, once enough
 * postings wait (and always at the last commit) they become one new segment
 * per lexeme and the mark moves to the largest id, in the batch's
 * transaction: the segments never disagree with the chunks committed. A
 * deleted chunk at or below the mark is recorded dead by the statement that
 * deletes it (PGPOST_DEAD). A lexeme with more than POST_GENS segments is
 * folded into one, dead chunks left out; when dead chunks pass a share of
 * the corpus, every lexeme is, and the dead list is emptied.
 *
 * Reads. One statement returns, in one snapshot, the query lexemes'
 * segments, the dead ids, the query's matches among chunks above the mark
 * (from their tsvectors) and the corpus statistics; the mark it read is
 * checked against the one the statement assumed (a sync may move it
 * between searches) and the statement repeated when they differ. Every
 * match is then scored (document at a time over the terms' lists, BM25 as
 * fts.c computes it): the pool is exact without bounds or rounds.
 */
#include "store/postgres/pgpost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/postgres/pgtext.h"
#include "util/utf8.h"


#define POST_FLUSH (4u << 20) /* postings waiting before a batch writes them */
#define POST_GENS 8           /* segments of a lexeme before they are folded */
#define POST_ROWS 2000        /* chunks read per statement when merging leftovers (the LIMIT) */
#define POST_WRITE (4u << 20) /* bytes of segments per INSERT statement */
#define POST_FOLD 256         /* lexemes folded per statement */
#define POST_KEYS 20000       /* keys written past which folding looks at every lexeme */
#define POST_DEAD_MIN 1024    /* dead chunks before every lexeme is folded ... */
#define POST_DEAD_SHARE 16    /* ... or more than 1/16 of the corpus */


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

typedef pgposting posting;

void pgpost_put(buf *b, int64_t *last, int64_t id, int tf, int ntok)
{
    pgpost_put_varint(b, (uint64_t)(id - *last));
    buf_putc(b, (char)(tf > 255 ? 255 : tf < 1 ? 1 : tf));
    pgpost_put_varint(b, (uint64_t)(ntok > 0 ? ntok : 0));
    *last = id;
}

/* The hex text of a bytea ("\x0a1b...") decoded into OUT. */
int pgpost_unhex(const char *s, buf *out)
{
    buf_reset(out);
    if (s[0] != '\\' || s[1] != 'x')
        return 0;
    size_t n = strlen(s + 2) / 2;
    if (buf_reserve(out, n + 1))
        return 0;
    long got = pg_unhex(s, out->data, n);
    if (got < 0)
        return 0;
    out->len = (size_t)got;
    out->data[got] = 0;
    return 1;
}

void pgpost_hex(buf *b, const char *s, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    buf_puts(b, "\\x");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        buf_putc(b, hx[c >> 4]);
        buf_putc(b, hx[c & 15]);
    }
}

/* Appends the postings of segment DATA[0..N) to V (growing *CAP), those of
 * the sorted DEAD[0..NDEAD) left out; 0 when the segment is damaged. */
int pgpost_decode(const unsigned char *p, size_t n, const int64_t *dead, size_t ndead,
                  posting **v, size_t *nv, size_t *cap)
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
        while (d < ndead && dead[d] < id)
            d++;
        if (d < ndead && dead[d] == id)
            continue;
        if (*nv == *cap) {
            size_t nc = *cap ? *cap * 2 : 256;
            posting *nw = realloc(*v, nc * sizeof *nw);
            if (!nw)
                return -1;
            *v = nw;
            *cap = nc;
        }
        (*v)[(*nv)++] = (posting){id, (int)len, tf};
    }
    return 1;
}

/* Calls FN for each lexeme of tsvector text T ('lex':1,5 'b''c':2) with its
 * unescaped bytes and its number of positions. */
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
 * Writing
 * -------------------------------------------------------------------- */


struct pgpost {
    mnemo *m;
    const char *tenant;
    int64_t merged, maxid; /* the mark; the largest id added */
    pgterms terms;
    size_t npost;
    /* scratch of the chunk being added */
    int64_t id;
    int ntok;
    const char *source;
    buf key, w;
};

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

pgterm *pgterms_get(pgterms *p, const char *key, size_t n)
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

void pgterms_cleanup(pgterms *p)
{
    for (size_t i = 0; i < p->cap; i++) {
        free(p->t[i].key);
        buf_cleanup(&p->t[i].data);
    }
    free(p->t);
    memset(p, 0, sizeof *p);
}

static void terms_clear(pgpost *p)
{
    pgterms_cleanup(&p->terms);
    p->npost = 0;
}

static int add_lexeme(void *ud, const char *lex, size_t n, int npos)
{
    pgpost *p = ud;
    buf_reset(&p->key);
    buf_puts(&p->key, p->source);
    buf_putc(&p->key, 0);
    buf_append(&p->key, lex, n);
    pgterm *e = buf_err(&p->key) ? NULL : pgterms_get(&p->terms, p->key.data, p->key.len);
    if (!e)
        return MNEMO_NOMEM;
    pgpost_put(&e->data, &e->last, p->id, npos, p->ntok);
    e->n++;
    p->npost++;
    return buf_err(&e->data) ? MNEMO_NOMEM : MNEMO_OK;
}

int pgpost_add(pgpost *p, int64_t id, const char *source, int ntok, const char *tsv)
{
    p->id = id;
    p->ntok = ntok;
    p->source = source;
    if (id > p->maxid)
        p->maxid = id;
    int rc = pgpost_tsv_each(tsv, &p->w, add_lexeme, p);
    return rc ? core_error(p->m, rc, "out of memory") : MNEMO_OK;
}

int pgpost_add_bin(pgpost *p, int64_t id, const char *source, int ntok, const unsigned char *t,
                   size_t n)
{
    p->id = id;
    p->ntok = ntok;
    p->source = source;
    if (id > p->maxid)
        p->maxid = id;
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

/* Sorted dead ids of the tenant into *V. */
static int dead_ids(mnemo *m, const char *tenant, int64_t **v, size_t *n)
{
    const char *prm[1] = {tenant};
    pg_rows *r = NULL;
    int rc = ps_q(m, "reading the index", "SELECT id FROM mnemo_post_dead WHERE tenant = $1 "
                  "ORDER BY id", 1, prm, &r);
    if (rc)
        return rc;
    *n = pg_nrows(r);
    *v = malloc((*n ? *n : 1) * sizeof **v);
    if (!*v) {
        pg_rows_free(r);
        return core_error(m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < *n; i++)
        (*v)[i] = ps_ll(r, i, 0);
    pg_rows_free(r);
    return MNEMO_OK;
}

/* A batch of segments as binary arrays (source, lexeme, gen, count, data). */
typedef struct segs {
    pg_barr a[5];
} segs;

static const uint32_t seg_oid[5] = {PG_TEXTOID, PG_TEXTOID, PG_INT8OID, PG_INT4OID,
                                    PG_BYTEAOID};

static void segs_start(segs *g)
{
    for (int i = 0; i < 5; i++)
        pg_barr_start(&g->a[i], seg_oid[i]);
}

static void segs_init(segs *g)
{
    for (int i = 0; i < 5; i++)
        pg_barr_init(&g->a[i]);
    segs_start(g);
}

static void segs_cleanup(segs *g)
{
    for (int i = 0; i < 5; i++)
        pg_barr_cleanup(&g->a[i]);
}

/* Adds segment DATA[0..LEN) of SOURCE and LEXEME (LLEN bytes) at GEN. */
static void segs_add(segs *g, const char *source, const char *lexeme, size_t llen, long long gen,
                     long long n, const char *data, size_t len)
{
    pg_barr_bytes(&g->a[0], source, strlen(source));
    pg_barr_bytes(&g->a[1], lexeme, llen);
    pg_barr_int8(&g->a[2], gen);
    pg_barr_int4(&g->a[3], (int32_t)n);
    pg_barr_bytes(&g->a[4], data, len);
}

static size_t segs_bytes(const segs *g) { return g->a[4].b.len; }

/* Inserts the segments of G, and starts it again. */
static int segs_write(pgpost *p, segs *g)
{
    if (!g->a[0].n)
        return MNEMO_OK;
    const char *prm[6] = {p->tenant};
    int lens[6] = {0}, fmt[6] = {0};
    for (int i = 0; i < 5; i++) {
        pg_barr_end(&g->a[i]);
        if (buf_err(&g->a[i].b))
            return core_error(p->m, MNEMO_NOMEM, "out of memory");
        prm[1 + i] = g->a[i].b.data;
        lens[1 + i] = (int)g->a[i].b.len;
        fmt[1 + i] = 1;
    }
    int rc = ps_send(p->m, "writing the index",
                     "INSERT INTO mnemo_postings(tenant, source, lexeme, gen, n, data) SELECT $1, "
                     "x.s, x.l, x.g, x.n, x.d FROM unnest($2::text[], $3::text[], $4::bigint[], "
                     "$5::int[], $6::bytea[]) AS x(s, l, g, n, d)",
                     6, prm, lens, fmt);
    if (!rc)
        rc = ps_collect(p->m, "writing the index", NULL);
    segs_start(g);
    return rc;
}

/* Folds each listed lexeme's segments into one (at the largest gen), the
 * dead chunks left out: KEYS holds (source, lexeme) pairs as two text
 * array literals. */
static int fold_keys(pgpost *p, const char *srcs, const char *lexs, const int64_t *dead,
                     size_t ndead)
{
    const char *prm[3] = {p->tenant, srcs, lexs};
    pg_rows *r = NULL;
    int rc = ps_q(p->m, "folding the index",
                  "DELETE FROM mnemo_postings p USING unnest($2::text[], $3::text[]) AS k(s, l) "
                  "WHERE p.tenant = $1 AND p.source = k.s AND p.lexeme = k.l "
                  "RETURNING p.source, p.lexeme, p.gen, p.data::text",
                  3, prm, &r);
    if (rc)
        return rc;
    size_t rows = pg_nrows(r);
    /* Rows by key, then gen: a lexeme's ids in order. */
    size_t *ord = malloc((rows ? rows : 1) * sizeof *ord);
    if (!ord) {
        pg_rows_free(r);
        return core_error(p->m, MNEMO_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < rows; i++)
        ord[i] = i;
    /* Insertion sort by (source, lexeme, gen): the rows are few per call. */
    for (size_t i = 1; i < rows; i++) {
        size_t x = ord[i], j = i;
        while (j > 0) {
            size_t y = ord[j - 1];
            int c = strcmp(pg_value(r, y, 0), pg_value(r, x, 0));
            if (!c)
                c = strcmp(pg_value(r, y, 1), pg_value(r, x, 1));
            if (!c)
                c = ps_ll(r, y, 2) > ps_ll(r, x, 2) ? 1 : -1;
            if (c <= 0)
                break;
            ord[j] = y;
            j--;
        }
        ord[j] = x;
    }
    buf raw, seg;
    buf_init(&raw, 0);
    buf_init(&seg, 0);
    segs g;
    segs_init(&g);
    posting *v = NULL;
    size_t nv = 0, cap = 0;
    for (size_t i = 0; !rc && i < rows;) {
        size_t j = i;
        long long gen = 0;
        nv = 0;
        for (; j < rows && !strcmp(pg_value(r, ord[j], 0), pg_value(r, ord[i], 0)) &&
               !strcmp(pg_value(r, ord[j], 1), pg_value(r, ord[i], 1));
             j++) {
            gen = ps_ll(r, ord[j], 2);
            int ok = pgpost_unhex(pg_value(r, ord[j], 3), &raw)
                         ? pgpost_decode((const unsigned char *)raw.data, raw.len, dead, ndead,
                                         &v, &nv, &cap)
                         : 0;
            if (ok < 0)
                rc = core_error(p->m, MNEMO_NOMEM, "out of memory");
            else if (!ok)
                rc = core_error(p->m, MNEMO_CORRUPT, "a segment of the keyword index is damaged "
                                "(run `mnemo index --force`)");
        }
        if (!rc && nv) {
            buf_reset(&seg);
            int64_t last = 0;
            for (size_t k = 0; k < nv; k++)
                pgpost_put(&seg, &last, v[k].id, v[k].tf, v[k].ntok);
            const char *lx = pg_value(r, ord[i], 1);
            segs_add(&g, pg_value(r, ord[i], 0), lx, strlen(lx), gen, (long long)nv,
                     seg.data ? seg.data : "", seg.len);
            if (segs_bytes(&g) >= POST_WRITE)
                rc = segs_write(p, &g);
        }
        i = j;
    }
    if (!rc)
        rc = segs_write(p, &g);
    free(v);
    free(ord);
    pg_rows_free(r);
    buf_cleanup(&raw);
    buf_cleanup(&seg);
    segs_cleanup(&g);
    return rc;
}

/* Folds the lexemes with more than POST_GENS segments (among the keys in
 * the array literals KSRC and KLEX when not NULL), or every lexeme (then
 * empties the dead list) when ALL. */
static int fold(pgpost *p, int all, const char *ksrc, const char *klex)
{
    int64_t *dead = NULL;
    size_t ndead = 0;
    int rc = dead_ids(p->m, p->tenant, &dead, &ndead);
    char gens[16];
    snprintf(gens, sizeof gens, "%d", all ? 0 : POST_GENS);
    const char *prm[4] = {p->tenant, gens, ksrc, klex};
    pg_rows *r = NULL;
    if (!rc && (all || !ksrc))
        rc = ps_q(p->m, "folding the index",
                  "SELECT source, lexeme FROM mnemo_postings WHERE tenant = $1 GROUP BY 1, 2 "
                  "HAVING count(*) > $2::int",
                  2, prm, &r);
    else if (!rc)
        rc = ps_q(p->m, "folding the index",
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
            ps_arr_add(&srcs, pg_value(r, j, 0), strlen(pg_value(r, j, 0)));
            ps_arr_add(&lexs, pg_value(r, j, 1), strlen(pg_value(r, j, 1)));
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
        rc = ps_q(p->m, "folding the index", "DELETE FROM mnemo_post_dead WHERE tenant = $1", 1,
                  p1, NULL);
    }
    pg_rows_free(r);
    buf_cleanup(&srcs);
    buf_cleanup(&lexs);
    free(dead);
    return rc;
}

int pgpost_due(const pgpost *p)
{
    return p && p->npost >= POST_FLUSH;
}

int pgpost_pending(const pgpost *p)
{
    return p && (p->terms.used || p->maxid > p->merged);
}

int pgpost_flush(pgpost *p, int final)
{
    if (!p)
        return MNEMO_OK;
    if (!final && p->npost < POST_FLUSH)
        return MNEMO_OK;
    /* A last commit with nothing to write still looks at the dead. */
    int wrote = pgpost_pending(p);
    int64_t gen = p->maxid > p->merged ? p->maxid : p->merged;
    char g[32];
    snprintf(g, sizeof g, "%lld", (long long)gen);
    segs sg;
    segs_init(&sg);
    /* The keys written, to look for lexemes with too many segments among
     * them (all of them past a size: one scan is cheaper then). */
    buf ksrc, klex;
    buf_init(&ksrc, 0);
    buf_init(&klex, 0);
    int keys = p->terms.used <= POST_KEYS;
    buf_putc(&ksrc, '{');
    buf_putc(&klex, '{');
    int rc = MNEMO_OK;
    for (size_t i = 0; !rc && wrote && i < p->terms.cap; i++) {
        pgterm *e = &p->terms.t[i];
        if (!e->key)
            continue;
        size_t sl = strlen(e->key);
        if (keys) {
            ps_arr_add(&ksrc, e->key, sl);
            ps_arr_add(&klex, e->key + sl + 1, e->klen - sl - 1);
        }
        segs_add(&sg, e->key, e->key + sl + 1, e->klen - sl - 1, (long long)gen, e->n,
                 e->data.data ? e->data.data : "", e->data.len);
        if (segs_bytes(&sg) >= POST_WRITE)
            rc = segs_write(p, &sg);
    }
    if (!rc)
        rc = segs_write(p, &sg);
    segs_cleanup(&sg);
    if (!rc && wrote) {
        const char *prm[2] = {p->tenant, g};
        rc = ps_q(p->m, "writing the index",
                  "INSERT INTO mnemo_post_state(tenant, merged) VALUES ($1, $2::bigint) "
                  "ON CONFLICT (tenant) DO UPDATE SET merged = excluded.merged",
                  2, prm, NULL);
    }
    buf_putc(&ksrc, '}');
    buf_putc(&klex, '}');
    if (!rc && (buf_err(&ksrc) || buf_err(&klex)))
        rc = core_error(p->m, MNEMO_NOMEM, "out of memory");
    if (rc) {
        buf_cleanup(&ksrc);
        buf_cleanup(&klex);
        return rc;
    }
    p->merged = gen;
    terms_clear(p);
    /* Too many segments, or too many dead chunks in them. */
    const char *prm[1] = {p->tenant};
    pg_rows *r = NULL;
    rc = ps_q(p->m, "writing the index",
              "SELECT (SELECT count(*) FROM mnemo_post_dead WHERE tenant = $1), "
              "(SELECT nchunks FROM mnemo_corpus WHERE tenant = $1)",
              1, prm, &r);
    if (!rc) {
        long long ndead = ps_ll(r, 0, 0), nchunks = ps_ll(r, 0, 1);
        pg_rows_free(r);
        int all = ndead > POST_DEAD_MIN && ndead > nchunks / POST_DEAD_SHARE;
        if (all || wrote)
            rc = fold(p, all, keys ? ksrc.data : NULL, keys ? klex.data : NULL);
    }
    buf_cleanup(&ksrc);
    buf_cleanup(&klex);
    return rc;
}

int pgpost_reset(mnemo *m, const char *tenant)
{
    const char *prm[1] = {tenant};
    int rc = ps_q(m, "rebuilding", "DELETE FROM mnemo_postings WHERE tenant = $1", 1, prm, NULL);
    if (!rc)
        rc = ps_q(m, "rebuilding", "DELETE FROM mnemo_post_dead WHERE tenant = $1", 1, prm, NULL);
    if (!rc)
        rc = ps_q(m, "rebuilding",
                  "INSERT INTO mnemo_post_state(tenant, merged) VALUES ($1, 0) ON CONFLICT "
                  "(tenant) DO UPDATE SET merged = 0",
                  1, prm, NULL);
    return rc;
}

void pgpost_free(pgpost *p)
{
    if (!p)
        return;
    terms_clear(p);
    buf_cleanup(&p->key);
    buf_cleanup(&p->w);
    free(p);
}

/* What waits, written in a transaction of its own. */
static int flush_alone(pgpost *p)
{
    if (p->merged < 0)
        p->merged = 0;
    int rc = ps_q(p->m, "merging the index", "BEGIN", 0, NULL, NULL);
    if (!rc)
        rc = pgpost_flush(p, 1);
    if (!rc)
        return ps_q(p->m, "merging the index", "COMMIT", 0, NULL, NULL);
    ps_q(p->m, "merging the index", "ROLLBACK", 0, NULL, NULL);
    return rc;
}

int pgpost_open(mnemo *m, const char *tenant, pgpost **out)
{
    *out = NULL;
    pgpost *p = calloc(1, sizeof *p);
    if (!p)
        return core_error(m, MNEMO_NOMEM, "out of memory");
    p->m = m;
    p->tenant = tenant;
    buf_init(&p->key, 0);
    buf_init(&p->w, 0);
    const char *prm[2] = {tenant, NULL};
    pg_rows *r = NULL;
    int rc = ps_q(m, "reading the index",
                  "SELECT coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1)",
                  1, prm, &r);
    if (!rc) {
        p->merged = ps_ll(r, 0, 0);
        pg_rows_free(r);
    }
    /* Chunks above the mark: a batch an earlier sync did not merge, or
     * chunks stored before the index existed. */
    int64_t after = p->merged;
    int any = 0;
    while (!rc) {
        char a[32];
        snprintf(a, sizeof a, "%lld", (long long)after);
        prm[1] = a;
        r = NULL;
        rc = ps_q(m, "merging the index",
                  "SELECT id, source, ntok, tsv::text FROM mnemo_chunks WHERE tenant = $1 AND "
                  "id > $2::bigint ORDER BY id LIMIT 2000",
                  2, prm, &r);
        if (rc)
            break;
        size_t n = pg_nrows(r);
        for (size_t i = 0; !rc && i < n; i++)
            rc = pgpost_add(p, ps_ll(r, i, 0), pg_value(r, i, 1), (int)ps_ll(r, i, 2),
                            pg_value(r, i, 3));
        if (n)
            after = ps_ll(r, n - 1, 0);
        pg_rows_free(r);
        any |= n > 0;
        if (n < POST_ROWS)
            break;
        /* A large backlog (a database indexed before the postings) is
         * written as it is read, not held. */
        if (!rc && p->npost >= POST_FLUSH) {
            rc = flush_alone(p);
        }
    }
    if (!rc && (any || p->merged < 0)) {
        rc = flush_alone(p);
        if (!rc) {
            /* The state row exists now even when there was nothing. */
            const char *p2[2] = {tenant, "0"};
            rc = ps_q(m, "merging the index",
                      "INSERT INTO mnemo_post_state(tenant, merged) VALUES ($1, $2::bigint) "
                      "ON CONFLICT (tenant) DO NOTHING",
                      2, p2, NULL);
        }
    }
    if (rc) {
        pgpost_free(p);
        return rc;
    }
    *out = p;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

typedef struct tlist {
    posting *v;
    size_t n, cap, at;
    int sources; /* segments of more than one source were read */
    const char *last_src;
} tlist;

typedef struct topc {
    double score;
    hitrow h;
} topc;

/* Whether A ranks before B: score, then id (as the SQLite pool). */
static int better(const topc *a, const topc *b)
{
    return a->score > b->score || (a->score == b->score && a->h.id < b->h.id);
}

/* The heap of the POOL best (POOL > 0), its root the worst kept: each
 * node ranks after its children. */
static void heap_push(topc *h, size_t *n, size_t pool, const topc *c)
{
    size_t i;
    if (*n < pool) {
        for (i = (*n)++; i > 0; i = (i - 1) / 2) {
            size_t up = (i - 1) / 2;
            if (!better(&h[up], c))
                break;
            h[i] = h[up];
        }
        h[i] = *c;
        return;
    }
    if (!better(c, &h[0]))
        return;
    for (i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, w = l;
        if (l >= *n)
            break;
        if (r < *n && better(&h[l], &h[r]))
            w = r;
        if (!better(c, &h[w]))
            break;
        h[i] = h[w];
        i = w;
    }
    h[i] = *c;
}

static int by_posting(const void *a, const void *b)
{
    const posting *x = a, *y = b;
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
    struct pgstore *st = ps_state(s->m);
    if (st && !st->post_seen) {
        st->post_mark = -1;
        st->post_seen = 1;
    }
    return st ? &st->post_mark : NULL;
}

/* One snapshot of what the leg needs for the mark MARK: rows (kind, source,
 * lexeme, gen or id, text). */
static int read_snapshot(pgsearch *s, const pgquery *pq, const char *source, int64_t mark,
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
    return ps_qp(s->m, "search", sql, 5, prm, out);
}

typedef struct tfctx {
    const pgquery *pq;
    uint8_t *tf;
} tfctx;

static int tf_one(void *ud, const char *lex, size_t n, int npos)
{
    tfctx *c = ud;
    for (int k = 0; k < c->pq->npos; k++) {
        const char *q = c->pq->words.data + c->pq->woff[k];
        if (strlen(q) == n && !memcmp(q, lex, n))
            c->tf[k] = (uint8_t)(npos > 255 ? 255 : npos);
    }
    return MNEMO_OK;
}

/* The frequencies of the query's terms in T, a chunk's tsvector text
 * filtered to query lexemes. */
static void tf_into(const pgquery *pq, const char *t, uint8_t *tf, buf *w)
{
    memset(tf, 0, (size_t)pq->npos);
    tfctx c = {pq, tf};
    pgpost_tsv_each(t, w, tf_one, &c);
}

/* Drops the postings of V[0..*N) whose ids are in the sorted OUT[0..NOUT). */
static void drop_ids(posting *v, size_t *n, const int64_t *out, size_t nout)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; nout && i < *n; i++) {
        while (j < nout && out[j] < v[i].id)
            j++;
        if (j < nout && out[j] == v[i].id)
            continue;
        v[k++] = v[i];
    }
    if (nout)
        *n = k;
}

/* The ids, sorted, of the merged chunks that hold an excluded phrase of
 * PQ, as SQLite counts them: the postings of each one's lexemes, and where
 * a phrase has more than one, the rows holding them all checked. */
static int excluded_ids(pgsearch *s, const pgquery *pq, const char *source, int64_t **out,
                        size_t *nout)
{
    int64_t mark;
    int rc = pgpost_candidates(s, pq, pq->npos, pq->np, source, out, nout, &mark);
    if (rc || !pq->negmulti || !*nout)
        return rc;
    buf ids;
    buf_init(&ids, 0);
    ps_ids_literal(&ids, *out, *nout);
    free(*out);
    *out = NULL;
    *nout = 0;
    if (buf_err(&ids)) {
        buf_cleanup(&ids);
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    }
    const char *prm[3] = {s->tenant, ids.data, pq->neg.data};
    pg_rows *r = NULL;
    rc = ps_qp(s->m, "search",
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
        (*out)[i] = ps_ll(r, i, 0);
    *nout = n;
    pg_rows_free(r);
    return MNEMO_OK;
}

struct pgpost_lists {
    tlist t[BM25_MAX_PHRASES];
};

void pgpost_lists_free(pgpost_lists *l)
{
    if (!l)
        return;
    for (int k = 0; k < BM25_MAX_PHRASES; k++)
        free(l->t[k].v);
    free(l);
}

int pgpost_read(pgsearch *s, const pgquery *pq, const char *source, pgpost_lists **out,
                double *sum_idf)
{
    *out = NULL;
    int64_t *mark = s_mark(s);
    if (!mark)
        return core_error(s->m, MNEMO_NOMEM, "out of memory");
    pg_rows *r = NULL;
    int rc = MNEMO_OK;
    if (*mark < 0) {
        const char *prm[1] = {s->tenant};
        rc = ps_q(s->m, "search",
                  "SELECT coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1)",
                  1, prm, &r);
        if (rc)
            return rc;
        *mark = ps_ll(r, 0, 0);
        pg_rows_free(r);
        r = NULL;
        if (*mark < 0)
            return MNEMO_NOTFOUND;
    }
    /* The mark may have moved since: read again at the new one. */
    for (int tries = 0;; tries++) {
        if ((rc = read_snapshot(s, pq, source, *mark, &r)))
            return rc;
        size_t n = pg_nrows(r);
        int64_t now = n && ps_ll(r, n - 1, 0) == 3 ? ps_ll(r, n - 1, 3) : -1;
        if (now == *mark)
            break;
        pg_rows_free(r);
        r = NULL;
        *mark = now;
        if (now < 0 || tries == 3)
            return MNEMO_NOTFOUND; /* none yet, or a sync merging now */
    }
    /* The merged chunks the excluded phrases remove (the ones above the
     * mark came filtered by the whole query). */
    int64_t *negs = NULL;
    size_t nneg = 0;
    if (pq->neg.len && (rc = excluded_ids(s, pq, source, &negs, &nneg))) {
        pg_rows_free(r);
        return rc;
    }
    size_t rows = pg_nrows(r);
    pgpost_lists *l = calloc(1, sizeof *l);
    tlist *t = l ? l->t : NULL;
    int64_t *dead = NULL;
    size_t ndead = 0, i = 0;
    double N = 0;
    s->avgdl = 1.0;
    buf raw, w;
    buf_init(&raw, 0);
    buf_init(&w, 0);
    if (!l)
        rc = MNEMO_NOMEM;
    /* Dead ids first (kind 1 sorts after kind 0: find them). */
    size_t d0 = 0;
    while (d0 < rows && ps_ll(r, d0, 0) == 0)
        d0++;
    size_t d1 = d0;
    while (d1 < rows && ps_ll(r, d1, 0) == 1)
        d1++;
    if (!rc && !(dead = malloc((d1 - d0 + 1) * sizeof *dead)))
        rc = MNEMO_NOMEM;
    for (size_t j = d0; !rc && j < d1; j++)
        dead[ndead++] = ps_ll(r, j, 3);
    /* Segments: each into the lists of the terms with its lexeme. */
    for (i = 0; !rc && i < d0; i++) {
        const char *lex = pg_value(r, i, 2), *src = pg_value(r, i, 1);
        if (!pgpost_unhex(pg_value(r, i, 4), &raw)) {
            rc = MNEMO_CORRUPT;
            break;
        }
        for (int k = 0; !rc && k < pq->npos; k++) {
            if (strcmp(pq->words.data + pq->woff[k], lex))
                continue;
            if (t[k].last_src && strcmp(t[k].last_src, src))
                t[k].sources = 1;
            t[k].last_src = src;
            int ok = pgpost_decode((const unsigned char *)raw.data, raw.len, dead, ndead, &t[k].v,
                            &t[k].n, &t[k].cap);
            rc = ok < 0 ? MNEMO_NOMEM : ok == 0 ? MNEMO_CORRUPT : MNEMO_OK;
        }
    }
    for (int k = 0; !rc && k < pq->npos; k++) {
        if (t[k].sources && t[k].n > 1)
            qsort(t[k].v, t[k].n, sizeof *t[k].v, by_posting);
        drop_ids(t[k].v, &t[k].n, negs, nneg);
    }
    free(negs);
    /* Chunks above the mark (ids above every segment's), then the
     * statistics. */
    for (i = d1; !rc && i < rows; i++) {
        if (ps_ll(r, i, 0) == 3) {
            N = strtod(pg_value(r, i, 2), NULL);
            s->avgdl = strtod(pg_value(r, i, 4), NULL);
            /* The corpus row is updated by every sync commit: its
             * version stamps what the search sees. */
            snprintf(s->stamp, sizeof s->stamp, "%s", pg_value(r, i, 1));
            continue;
        }
        char *end;
        const char *txt = pg_value(r, i, 4);
        long ntok = strtol(txt, &end, 10);
        uint8_t tf[BM25_MAX_PHRASES];
        tf_into(pq, end, tf, &w);
        for (int k = 0; !rc && k < pq->npos; k++) {
            if (!tf[k])
                continue;
            if (t[k].n == t[k].cap) {
                size_t nc = t[k].cap ? t[k].cap * 2 : 64;
                posting *nv = realloc(t[k].v, nc * sizeof *nv);
                if (!nv) {
                    rc = MNEMO_NOMEM;
                    break;
                }
                t[k].v = nv;
                t[k].cap = nc;
            }
            t[k].v[t[k].n++] = (posting){ps_ll(r, i, 3), (int)ntok, tf[k]};
        }
    }
    pg_rows_free(r);
    r = NULL;
    free(dead);
    buf_cleanup(&raw);
    buf_cleanup(&w);
    if (rc) {
        pgpost_lists_free(l);
        if (rc == MNEMO_CORRUPT)
            return core_error(s->m, rc, "a segment of the keyword index is damaged (run `mnemo "
                              "index --force`)");
        return core_error(s->m, rc, "out of memory");
    }
    /* BM25's statistics, as keyword_all() counts them. */
    s->np = pq->npos;
    double sum = 0;
    for (int k = 0; k < s->np; k++) {
        s->idf[k] = bm25_idf(N, (double)t[k].n);
        sum += s->idf[k];
    }
    *sum_idf = sum > 0 ? sum : 1.0;
    *out = l;
    return MNEMO_OK;
}

int pgpost_walk(pgsearch *s, const pgquery *pq, pgpost_lists *l, size_t pool,
                const int64_t *extra, size_t nextra)
{
    tlist *t = l->t;
    topc *heap = NULL, *xs = NULL;
    size_t nheap = 0, nxs = 0;
    int rc = MNEMO_OK;
    /* Walked again (with the extra ids known by then): from the start. */
    for (int k = 0; k < BM25_MAX_PHRASES; k++)
        t[k].at = 0;
    free(s->hits);
    s->hits = NULL;
    s->nhits = 0;
    uint64_t req = s->qy->required & (pq->npos >= 64 ? ~(uint64_t)0
                                                     : (((uint64_t)1 << pq->npos) - 1));
    if (!rc && !(heap = malloc((pool + 1) * sizeof *heap)))
        rc = MNEMO_NOMEM;
    if (!rc && !(xs = malloc((nextra + 1) * sizeof *xs)))
        rc = MNEMO_NOMEM;
    /* The extra ids in order, to be met while the lists are walked. */
    int64_t *ex = NULL;
    if (!rc && !(ex = malloc((nextra + 1) * sizeof *ex)))
        rc = MNEMO_NOMEM;
    size_t nex = 0, xat = 0;
    if (!rc) {
        if (nextra)
            memcpy(ex, extra, nextra * sizeof *ex);
        nex = nextra;
        for (size_t a = 1; a < nex; a++) { /* few: insertion sort */
            int64_t x = ex[a];
            size_t b = a;
            while (b > 0 && ex[b - 1] > x) {
                ex[b] = ex[b - 1];
                b--;
            }
            ex[b] = x;
        }
    }
    /* Document at a time: the smallest id at the lists' heads. */
    while (!rc) {
        int64_t id = INT64_MAX;
        for (int k = 0; k < s->np; k++)
            if (t[k].at < t[k].n && t[k].v[t[k].at].id < id)
                id = t[k].v[t[k].at].id;
        if (id == INT64_MAX)
            break;
        topc c;
        memset(&c, 0, sizeof c);
        c.h.id = id;
        uint64_t mask = 0;
        for (int k = 0; k < s->np; k++) {
            if (t[k].at < t[k].n && t[k].v[t[k].at].id == id) {
                const posting *q = &t[k].v[t[k].at++];
                c.h.tf[k] = (uint8_t)q->tf;
                c.h.ntok = q->ntok;
                mask |= (uint64_t)1 << k;
            }
        }
        if ((mask & req) != req)
            continue;
        c.score = ps_hit_bm25(s, &c.h);
        heap_push(heap, &nheap, pool, &c);
        while (xat < nex && ex[xat] < id)
            xat++;
        if (xat < nex && ex[xat] == id)
            xs[nxs++] = c;
    }
    if (!rc) {
        s->hits = calloc(nheap + nxs + 1, sizeof *s->hits);
        if (!s->hits)
            rc = MNEMO_NOMEM;
    }
    if (!rc) {
        for (size_t a = 0; a < nheap; a++)
            s->hits[s->nhits++] = heap[a].h;
        for (size_t a = 0; a < nxs; a++)
            s->hits[s->nhits++] = xs[a].h;
        if (s->nhits > 1)
            qsort(s->hits, s->nhits, sizeof *s->hits, by_hitid);
        size_t k = 0;
        for (size_t a = 0; a < s->nhits; a++)
            if (!k || s->hits[k - 1].id != s->hits[a].id)
                s->hits[k++] = s->hits[a];
        s->nhits = k;
    }
    free(ex);
    free(xs);
    free(heap);
    return rc ? core_error(s->m, rc, "out of memory") : MNEMO_OK;
}

int pgpost_leg(pgsearch *s, const pgquery *pq, const char *source, size_t pool,
               const int64_t *extra, size_t nextra, double *sum_idf)
{
    pgpost_lists *l;
    int rc = pgpost_read(s, pq, source, &l, sum_idf);
    if (rc)
        return rc;
    rc = pgpost_walk(s, pq, l, pool, extra, nextra);
    pgpost_lists_free(l);
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
            buf_append(hi, e, (size_t)utf8_encode(cp, e));
            return !buf_err(hi);
        }
        n = at;
    }
    return 0;
}

typedef struct cslot {
    int part;
    size_t off; /* of its lexeme (NUL-terminated) in the copy */
    posting *v;
    size_t n, cap;
} cslot;

static void ids_unique(posting *v, size_t *n)
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
static void ids_and(posting *a, size_t *na, const posting *b, size_t nb)
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

int pgpost_candidates(pgsearch *s, const pgquery *pq, int k0, int k1, const char *source,
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
        ps_arr_add(&srcs, source, strlen(source));
    else {
        ps_arr_add(&srcs, "memory", 6);
        ps_arr_add(&srcs, "sessions", 8);
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
                ps_arr_add(&los, t, len);
                ps_arr_add(&his, hi.data, hi.len);
                ps_arr_int(&ks, (long long)ns);
            } else
                ps_arr_add(&words, t, len);
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
        rc = qrc = ps_qp(s->m, "search",
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
        long long k = ps_ll(r, i, 0);
        if (k < 0) {
            *mark = ps_ll(r, i, 2);
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
    posting *all = NULL;
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
            posting *nv = realloc(all, nc * sizeof *nv);
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
