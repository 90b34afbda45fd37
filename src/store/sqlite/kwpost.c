/*
 * kwpost.c - the chunks' postings in blocks with score bounds (see
 * kwpost.h).
 *
 * A segment (kw_seg.data): varints. The number of blocks; per block the
 * distance of its first id from the previous block's last (from 0 for the
 * first), its last id's from its first, its postings, its bound's pairs
 * and the pairs (frequency, length), the size of its postings. Then the
 * blocks' postings one after the other, each block: per posting the
 * distance of its id from the previous one (0 for the first, the block's
 * first id); the frequencies, a byte each (255 and more as 255, as BM25
 * counts them); a byte 0 and the lengths as 16-bit little-endian, or 1 and
 * the lengths as varints when one is longer. Frequencies and lengths are
 * thus read without decoding.
 */
#include "store/sqlite/kwpost.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mnemo.h"
#include "store/sqlite/idrange.h"
#include "text/tok.h"
#include "util/hash.h"

#define FLUSH_BYTES (64u << 20) /* chunks' tokens added before a sync writes their postings */
#define ARENA_BLOCK (64u << 10)

static const int64_t range_lo[KWPOST_RANGES] = {0, STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE};
static const int64_t range_hi[KWPOST_RANGES] = {STORE_SESSION_ID_BASE, STORE_MEDIA_ID_BASE,
                                                INT64_MAX};

int kwpost_range(int64_t id)
{
    return id < STORE_SESSION_ID_BASE ? 0 : id < STORE_MEDIA_ID_BASE ? 1 : 2;
}

/* Reads a varint at *P (before END) into *V; 0 when it runs past END. */
static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char c = *(*p)++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* Appends ID to the growing array *V of *N (room for *CAP). */
static int ids_push(int64_t **v, size_t *n, size_t *cap, int64_t id)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        int64_t *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return MNEMO_NOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = id;
    return MNEMO_OK;
}

/* Prepares FMT into *ST with its %s the database SCHEMA ("main", "mem"). */
static int prep(sqlite3 *db, const char *schema, const char *fmt, sqlite3_stmt **st)
{
    *st = NULL;
    char *sql = sqlite3_mprintf(fmt, schema);
    if (!sql)
        return SQLITE_NOMEM;
    int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
    sqlite3_free(sql);
    return rc;
}

int kwpost_marks(sqlite3 *db, const char *schema, int64_t mark[KWPOST_RANGES])
{
    for (int r = 0; r < KWPOST_RANGES; r++)
        mark[r] = range_lo[r] - 1;
    sqlite3_stmt *st = NULL;
    if (prep(db, schema, "SELECT range, mark FROM %s.kw_mark", &st) != SQLITE_OK)
        return MNEMO_NOTFOUND;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        int r = sqlite3_column_int(st, 0);
        if (r >= 0 && r < KWPOST_RANGES)
            mark[r] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? MNEMO_OK : MNEMO_CORRUPT;
}

/* ----------------------------------------------------------------------
 * Writing
 * -------------------------------------------------------------------- */

typedef struct post {
    int64_t id;
    int32_t dl;
    uint32_t tf;
} post;

typedef struct acc {
    const char *term;
    int len;
    post *v;
    size_t n, cap;
} acc;

/* The terms' table: open addressing by hash, IDX is the term's acc + 1. */
typedef struct slot {
    uint64_t h;
    size_t idx;
} slot;

/* A token of the chunk being added: at OFF in the tokens' buffer, at P
 * once they are all read. */
typedef struct dtok {
    const char *p;
    size_t off;
    int len;
} dtok;

/* A chunk's tokens as they are read, and its length. */
typedef struct doc {
    tok *tk;
    buf prefix; /* what the chunk's terms are keyed under (a memory's scope), or empty */
    buf text; /* the tokens that had to be copied, back to back */
    dtok *dt;
    size_t ndt, capdt;
    int dl;
} doc;

/* What waits for the accumulating thread: per chunk its id, the length of
 * its pre-tokenized form (tok.h) and that form. */
typedef struct queue {
    char *data;
    size_t len, cap;
} queue;

/* A term's segment encoded for a flush: its row and where its bytes are
 * in its batch's data. */
typedef struct segrow {
    const char *term;
    int len, range;
    int64_t last;
    size_t n, off, size;
} segrow;

/* Segments encoded, in term order, to be written by the sync thread. */
typedef struct batch {
    segrow *v;
    size_t n, cap;
    buf data;
    int full; /* encoded, until written */
} batch;

/* A segment set aside in a run (kwpost_defer): this header, the term's
 * bytes, the segment's. */
typedef struct runhead {
    int64_t last;
    uint64_t n, size;
    int64_t len;
} runhead;

/* A run read back for the merge: the bytes at [POS, END) of the file not
 * yet read, AT the current segment's header in BUF. */
typedef struct run {
    off_t pos, end;
    char *buf;
    size_t cap, len, at;
    runhead h;
    size_t used; /* the current segment's bytes in BUF, 0 before the first */
    const char *term, *data;
} run;

struct kwpost {
    sqlite3 *db;
    const char *schema; /* the tables' database */
    const char *source; /* the texts above a mark (kwpost_open) */
    sqlite3_stmt *fold[4]; /* fold_term's statements */
    int64_t mark[KWPOST_RANGES];
    int64_t top[KWPOST_RANGES]; /* the largest id added per range */
    int seen[KWPOST_RANGES];    /* chunks above the mark were read back */
    slot *tab;                  /* term -> index in v */
    size_t captab;
    acc *v;
    size_t nv, capv;
    char **arena;               /* the terms' bytes, in blocks that never move */
    size_t narena, arena_used;
    int64_t *gone; /* ids added, then deleted before the flush */
    size_t ngone, capgone;
    size_t nposts;
    doc fg; /* the sync thread's chunk (texts read back, deletions) */
    /* The accumulating thread: the sync thread queues the chunks it
     * writes, the thread adds their postings; the sync thread reads the
     * postings only once the thread is idle and the queue empty. */
    doc bg;
    pthread_t th;
    int started, stop, busy, err;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    queue q, taken;
    size_t queued; /* bytes queued since the last flush */
    /* A flush: the terms' segments are encoded (by the thread, when there
     * is one) into two batches in turn while the sync thread writes the
     * other: in its transaction, on its connection. */
    batch bt[2];
    buf edir, epost; /* the encoder's */
    buf fdir, fpost; /* fold_term's (the sync thread's) */
    sqlite3_stmt *seg; /* the flush's insert */
    int small;         /* the flush folds the terms it writes */
    int encode, encoded, abort_enc;
    /* Deferring (kwpost_defer): flushes for kwpost_full write their
     * segments as a run, in term order, to a file of their own (removed
     * once open); the last flush merges the runs into the table. */
    const char *defer; /* the index's path, beside which the file goes */
    int fd;            /* the runs' file, or -1 */
    int spilling;      /* this flush's batches go to the file */
    buf out;           /* what waits to be appended to it */
    off_t *runs;       /* where each run starts; the file's end after */
    size_t nruns;
    off_t end;
    size_t flush_bytes; /* tokens' bytes queued before kwpost_full */
};

static void *accumulate(void *arg);

/* The bytes of tokens a flush waits for; MNEMO_KW_FLUSH_BYTES sets fewer,
 * for tests of large builds on small workspaces. */
static size_t flush_bytes(void)
{
    const char *e = getenv("MNEMO_KW_FLUSH_BYTES");
    long long n = e ? atoll(e) : 0;
    return n > 0 && (unsigned long long)n < FLUSH_BYTES ? (size_t)n : FLUSH_BYTES;
}

int kwpost_open(sqlite3 *db, const char *schema, const char *source, const char *language,
                kwpost **out)
{
    *out = NULL;
    kwpost *k = calloc(1, sizeof *k);
    if (!k)
        return MNEMO_NOMEM;
    k->db = db;
    k->schema = schema;
    k->source = source;
    buf_init(&k->fg.text, 1 << 20);
    buf_init(&k->bg.text, 1 << 20);
    buf_init(&k->fg.prefix, KWPOST_PREFIX_MAX);
    buf_init(&k->bg.prefix, KWPOST_PREFIX_MAX);
    for (int i = 0; i < 2; i++)
        buf_init(&k->bt[i].data, 1u << 30);
    buf_init(&k->edir, 1u << 30);
    buf_init(&k->epost, 1u << 30);
    buf_init(&k->fdir, 1u << 30);
    buf_init(&k->fpost, 1u << 30);
    buf_init(&k->out, 1u << 30);
    k->fd = -1;
    k->flush_bytes = flush_bytes();
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->work, NULL);
    pthread_cond_init(&k->idle, NULL);
    const char *lang = language ? language : "english";
    int rc = kwpost_marks(db, schema, k->mark);
    if (!rc && ((rc = tok_new(lang, 0, &k->fg.tk)) || (rc = tok_new(lang, 0, &k->bg.tk))))
        rc = rc == MNEMO_NOMEM ? MNEMO_NOMEM : MNEMO_INVALID;
    if (rc) {
        kwpost_free(k);
        return rc;
    }
    *out = k;
    return MNEMO_OK;
}

static void acc_reset(kwpost *k)
{
    for (size_t i = 0; i < k->nv; i++)
        free(k->v[i].v);
    k->nv = 0;
    if (k->tab)
        memset(k->tab, 0, k->captab * sizeof *k->tab);
    for (size_t i = 0; i < k->narena; i++)
        free(k->arena[i]);
    k->narena = 0;
    k->arena_used = 0;
    k->ngone = 0;
    k->nposts = 0;
    k->queued = 0;
}

static void doc_cleanup(doc *d)
{
    buf_cleanup(&d->prefix);
    free(d->dt);
    buf_cleanup(&d->text);
    tok_free(d->tk);
}

void kwpost_free(kwpost *k)
{
    if (!k)
        return;
    if (k->started) {
        pthread_mutex_lock(&k->mu);
        k->stop = 1;
        pthread_cond_signal(&k->work);
        pthread_mutex_unlock(&k->mu);
        pthread_join(k->th, NULL);
    }
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->work);
    pthread_cond_destroy(&k->idle);
    free(k->q.data);
    free(k->taken.data);
    acc_reset(k);
    free(k->tab);
    free(k->v);
    free(k->arena);
    free(k->gone);
    doc_cleanup(&k->fg);
    doc_cleanup(&k->bg);
    for (int i = 0; i < 2; i++) {
        free(k->bt[i].v);
        buf_cleanup(&k->bt[i].data);
    }
    buf_cleanup(&k->edir);
    buf_cleanup(&k->epost);
    buf_cleanup(&k->fdir);
    buf_cleanup(&k->fpost);
    buf_cleanup(&k->out);
    if (k->fd >= 0)
        close(k->fd);
    free(k->runs);
    for (int i = 0; i < 4; i++)
        sqlite3_finalize(k->fold[i]);
    free(k);
}

/* A copy of TERM (LEN bytes) that stays put until the next flush. */
static const char *intern(kwpost *k, const char *term, int len)
{
    if (!k->narena || k->arena_used + (size_t)len + 1 > ARENA_BLOCK) {
        char **a = realloc(k->arena, (k->narena + 1) * sizeof *a);
        if (!a)
            return NULL;
        k->arena = a;
        if (!(a[k->narena] = malloc(ARENA_BLOCK)))
            return NULL;
        k->narena++;
        k->arena_used = 0;
    }
    char *s = k->arena[k->narena - 1] + k->arena_used;
    memcpy(s, term, (size_t)len);
    s[len] = 0;
    k->arena_used += (size_t)len + 1;
    return s;
}

/* Appends a token of the chunk, counting its length as FTS5 does: a token
 * at the previous one's position does not lengthen it. A token at P stays
 * where it is (the chunk's pre-tokenized form); else it is copied. */
static int doc_token(doc *d, const char *token, int len, int colocated, const char *p)
{
    if (!colocated || d->dl == 0)
        d->dl++;
    if (d->ndt == d->capdt) {
        size_t cap = d->capdt ? d->capdt * 2 : 256;
        dtok *v = realloc(d->dt, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        d->dt = v;
        d->capdt = cap;
    }
    d->dt[d->ndt++] = (dtok){p, d->text.len, len};
    if (p)
        return MNEMO_OK;
    buf_append(&d->text, token, (size_t)len);
    return buf_err(&d->text) ? MNEMO_NOMEM : MNEMO_OK;
}

static int doc_tok_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    return doc_token(ud, token, len, (flags & TOKF_COLOCATED) != 0, NULL);
}

static int dtok_cmp(const void *a, const void *b)
{
    const dtok *x = a, *y = b;
    int n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, (size_t)n);
    return c ? c : x->len - y->len;
}

/* Whether the chunk's tokens I and J are the same. */
static int same_tok(const doc *d, size_t i, size_t j)
{
    return d->dt[i].len == d->dt[j].len &&
           memcmp(d->dt[i].p, d->dt[j].p, (size_t)d->dt[i].len) == 0;
}

/* The tokens of a chunk: from TOKS when given, else TEXT tokenized as FTS5
 * tokenizes a document. */
static int doc_tokens(doc *d, const char *text, size_t len, const char *toks, size_t toks_len)
{
    d->ndt = 0;
    d->dl = 0;
    buf_reset(&d->text);
    int rc = MNEMO_OK;
    if (!toks) {
        rc = tok_run(d->tk, text, len, 0, doc_tok_fn, d);
    } else {
        const char *p = toks, *end = toks + toks_len;
        tok_pre t;
        while (!rc && tok_pre_next(&p, end, &t))
            rc = doc_token(d, t.token, t.len, t.colocated, t.token);
    }
    /* Where each token is, now that the copies have stopped moving. */
    for (size_t i = 0; !rc && i < d->ndt; i++)
        if (!d->dt[i].p)
            d->dt[i].p = d->text.data + d->dt[i].off;
    return rc;
}

/* Doubles the terms' table. */
static int tab_grow(kwpost *k)
{
    size_t cap = k->captab ? k->captab * 2 : 1 << 14;
    slot *t = calloc(cap, sizeof *t);
    if (!t)
        return MNEMO_NOMEM;
    for (size_t i = 0; i < k->captab; i++) {
        if (!k->tab[i].idx)
            continue;
        size_t j = (size_t)k->tab[i].h & (cap - 1);
        while (t[j].idx)
            j = (j + 1) & (cap - 1);
        t[j] = k->tab[i];
    }
    free(k->tab);
    k->tab = t;
    k->captab = cap;
    return MNEMO_OK;
}

/* The postings of the term P[0..LEN), made when new. */
static acc *term_acc(kwpost *k, const char *p, int len)
{
    if (2 * (k->nv + 1) > k->captab && tab_grow(k))
        return NULL;
    uint64_t h = hash64(p, (size_t)len);
    size_t i = (size_t)h & (k->captab - 1);
    for (; k->tab[i].idx; i = (i + 1) & (k->captab - 1)) {
        acc *a = &k->v[k->tab[i].idx - 1];
        if (k->tab[i].h == h && a->len == len && memcmp(a->term, p, (size_t)len) == 0)
            return a;
    }
    if (k->nv == k->capv) {
        size_t cap = k->capv ? k->capv * 2 : 4096;
        acc *v = realloc(k->v, cap * sizeof *v);
        if (!v)
            return NULL;
        k->v = v;
        k->capv = cap;
    }
    const char *s = intern(k, p, len);
    if (!s)
        return NULL;
    k->tab[i] = (slot){h, k->nv + 1};
    k->v[k->nv] = (acc){s, len, NULL, 0, 0};
    return &k->v[k->nv++];
}

/* Adds chunk ID's postings from D's tokens, one per distinct token: a
 * token whose term's last posting is this chunk's counts in it. */
/* Token I of D as its term: keyed under D's prefix, if it has one, in KEY
 * (*LEN bytes). */
static const char *doc_term(const doc *d, size_t i, char *key, int *len)
{
    int n = d->dt[i].len > TOK_MAX_BYTES ? TOK_MAX_BYTES : d->dt[i].len;
    if (!d->prefix.len) {
        *len = n;
        return d->dt[i].p;
    }
    memcpy(key, d->prefix.data, d->prefix.len);
    memcpy(key + d->prefix.len, d->dt[i].p, (size_t)n);
    *len = (int)d->prefix.len + n;
    return key;
}

static int doc_add(kwpost *k, const doc *d, int64_t id)
{
    char key[KWPOST_PREFIX_MAX + TOK_MAX_BYTES];
    for (size_t i = 0; i < d->ndt; i++) {
        int len;
        const char *term = doc_term(d, i, key, &len);
        acc *a = term_acc(k, term, len);
        if (!a)
            return MNEMO_NOMEM;
        if (a->n && a->v[a->n - 1].id == id) {
            a->v[a->n - 1].tf++;
            continue;
        }
        if (a->n == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 4;
            post *v = realloc(a->v, cap * sizeof *v);
            if (!v)
                return MNEMO_NOMEM;
            a->v = v;
            a->cap = cap;
        }
        a->v[a->n++] = (post){id, d->dl, 1};
        k->nposts++;
    }
    int r = kwpost_range(id);
    if (id > k->top[r])
        k->top[r] = id;
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * The accumulating thread
 * -------------------------------------------------------------------- */

#define QUEUE_MAX (8u << 20)    /* bytes queued before the sync thread waits */
#define QUEUE_BATCH (256u << 10) /* bytes queued before the thread is woken */

/* A queued chunk: id, length, pre-tokenized form. */
typedef struct qhead {
    int64_t id;
    size_t len;
} qhead;

static int encode_terms(kwpost *k, int (*ship)(kwpost *, batch **));
static int ship_written(kwpost *k, batch **b);

static void *accumulate(void *arg)
{
    kwpost *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->q.len && !k->stop && !k->encode)
            pthread_cond_wait(&k->work, &k->mu);
        if (k->encode) {
            /* A flush (the queue is empty): its segments. */
            k->encode = 0;
            pthread_mutex_unlock(&k->mu);
            int rc = encode_terms(k, ship_written);
            pthread_mutex_lock(&k->mu);
            if (rc && !k->err)
                k->err = rc;
            k->encoded = 1;
            pthread_cond_broadcast(&k->idle);
            continue;
        }
        if (!k->q.len)
            break;
        queue t = k->taken;
        k->taken = k->q;
        k->q = t;
        k->q.len = 0;
        k->busy = 1;
        pthread_cond_broadcast(&k->idle);
        pthread_mutex_unlock(&k->mu);
        int rc = MNEMO_OK;
        for (size_t at = 0; !rc && at < k->taken.len;) {
            qhead h;
            memcpy(&h, k->taken.data + at, sizeof h);
            const char *toks = k->taken.data + at + sizeof h;
            if (!(rc = doc_tokens(&k->bg, NULL, 0, toks, h.len)))
                rc = doc_add(k, &k->bg, h.id);
            at += sizeof h + h.len;
        }
        pthread_mutex_lock(&k->mu);
        if (rc && !k->err)
            k->err = rc;
        k->busy = 0;
        pthread_cond_broadcast(&k->idle);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* Waits until the thread has added every queued chunk: the postings are
 * the sync thread's until it queues again. */
static int drain(kwpost *k)
{
    if (!k->started)
        return MNEMO_OK;
    pthread_mutex_lock(&k->mu);
    if (k->q.len)
        pthread_cond_signal(&k->work);
    while (k->q.len || k->busy)
        pthread_cond_wait(&k->idle, &k->mu);
    int rc = k->err;
    pthread_mutex_unlock(&k->mu);
    return rc;
}

/* Queues chunk ID's pre-tokenized form TOKS. */
static int enqueue(kwpost *k, int64_t id, const char *toks, size_t len)
{
    if (!k->started) {
        if (pthread_create(&k->th, NULL, accumulate, k) != 0)
            return MNEMO_NOMEM;
        k->started = 1;
    }
    size_t need = sizeof(qhead) + len;
    pthread_mutex_lock(&k->mu);
    while (k->q.len && k->q.len + need > QUEUE_MAX && !k->err)
        pthread_cond_wait(&k->idle, &k->mu);
    int rc = k->err;
    if (!rc && k->q.len + need > k->q.cap) {
        size_t cap = k->q.cap ? k->q.cap : 1 << 16;
        while (cap < k->q.len + need)
            cap *= 2;
        char *v = realloc(k->q.data, cap);
        if (v) {
            k->q.data = v;
            k->q.cap = cap;
        } else {
            rc = MNEMO_NOMEM;
        }
    }
    if (!rc) {
        qhead h = {id, len};
        memcpy(k->q.data + k->q.len, &h, sizeof h);
        memcpy(k->q.data + k->q.len + sizeof h, toks, len);
        k->q.len += need;
        /* Woken for batches, not for each chunk. */
        if (k->q.len >= QUEUE_BATCH && k->q.len - need < QUEUE_BATCH)
            pthread_cond_signal(&k->work);
    }
    pthread_mutex_unlock(&k->mu);
    k->queued += need;
    return rc;
}

/* ----------------------------------------------------------------------
 * What a sync calls
 * -------------------------------------------------------------------- */

/* Keys D's terms under P (N bytes; at most KWPOST_PREFIX_MAX). */
static int set_prefix(doc *d, const char *p, size_t n)
{
    buf_reset(&d->prefix);
    if (n > KWPOST_PREFIX_MAX)
        return MNEMO_INVALID;
    buf_append(&d->prefix, p ? p : "", p ? n : 0);
    return buf_err(&d->prefix) ? MNEMO_NOMEM : MNEMO_OK;
}

/* Reads back the chunks of RANGE above the mark and below BELOW: written
 * by a sync that did not get to write their postings. */
static int catch_up(kwpost *k, int range, int64_t below)
{
    k->seen[range] = 1;
    int rc = drain(k);
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(k->db, k->source, -1, &st, NULL) != SQLITE_OK)
        return MNEMO_DB;
    int64_t hi = below < range_hi[range] ? below : range_hi[range];
    sqlite3_bind_int64(st, 1, k->mark[range] < range_lo[range] ? range_lo[range] - 1
                                                                 : k->mark[range]);
    sqlite3_bind_int64(st, 2, hi);
    int s = SQLITE_DONE;
    int keyed = sqlite3_column_count(st) > 2;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        if (keyed)
            rc = set_prefix(&k->fg, (const char *)sqlite3_column_text(st, 2),
                            (size_t)sqlite3_column_bytes(st, 2));
        if (!rc && !(rc = doc_tokens(&k->fg, text ? text : "", len, NULL, 0)))
            rc = doc_add(k, &k->fg, sqlite3_column_int64(st, 0));
    }
    buf_reset(&k->fg.prefix);
    if (!rc && s != SQLITE_DONE)
        rc = s == SQLITE_NOMEM ? MNEMO_NOMEM : MNEMO_DB;
    sqlite3_finalize(st);
    return rc;
}

int kwpost_count(tok *t, const char *text, size_t len, const char *const *terms, int nt,
                 uint8_t *tf, int32_t *dl)
{
    doc d;
    memset(&d, 0, sizeof d);
    d.tk = t;
    buf_init(&d.text, 1 << 20);
    int rc = doc_tokens(&d, text, len, NULL, 0);
    memset(tf, 0, (size_t)nt);
    for (size_t i = 0; !rc && i < d.ndt; i++) {
        int n = d.dt[i].len > TOK_MAX_BYTES ? TOK_MAX_BYTES : d.dt[i].len;
        for (int j = 0; j < nt; j++)
            if ((size_t)n == strlen(terms[j]) && memcmp(d.dt[i].p, terms[j], (size_t)n) == 0 &&
                tf[j] < 255)
                tf[j]++;
    }
    *dl = d.dl;
    free(d.dt);
    buf_cleanup(&d.text);
    return rc;
}

int kwpost_read_back(kwpost *k, int64_t below)
{
    int rc = MNEMO_OK;
    for (int r = 0; r < KWPOST_RANGES && !rc; r++)
        if (!k->seen[r])
            rc = catch_up(k, r, below);
    return rc;
}

int kwpost_add(kwpost *k, int64_t id, const char *text, size_t len, const char *toks,
               size_t toks_len)
{
    int r = kwpost_range(id), rc;
    if (!k->seen[r] && (rc = catch_up(k, r, id)))
        return rc;
    if (toks)
        return enqueue(k, id, toks, toks_len);
    /* Without a pre-tokenized form: tokenized here, in chunk order. */
    if ((rc = drain(k)) || (rc = doc_tokens(&k->fg, text, len, NULL, 0)))
        return rc;
    k->queued += len;
    return doc_add(k, &k->fg, id);
}

int kwpost_remove(kwpost *k, int64_t id, const char *text, size_t len, const char *prefix)
{
    int r = kwpost_range(id);
    if (id > k->mark[r]) {
        if (!k->seen[r])
            return MNEMO_OK; /* neither in the postings nor waiting */
        return ids_push(&k->gone, &k->ngone, &k->capgone, id);
    }
    doc *d = &k->fg;
    int rc = set_prefix(d, prefix, prefix ? strlen(prefix) : 0);
    if (!rc)
        rc = doc_tokens(d, text, len, NULL, 0);
    if (rc)
        return rc;
    if (d->ndt > 1)
        qsort(d->dt, d->ndt, sizeof *d->dt, dtok_cmp);
    char key[KWPOST_PREFIX_MAX + TOK_MAX_BYTES];
    sqlite3_stmt *st = NULL;
    if (prep(k->db, k->schema, "INSERT OR IGNORE INTO %s.kw_dead(term, id) VALUES(?1, ?2)", &st) != SQLITE_OK)
        return MNEMO_DB;
    for (size_t i = 0; !rc && i < d->ndt; i++) {
        if (i && same_tok(d, i - 1, i))
            continue;
        int n;
        const char *term = doc_term(d, i, key, &n);
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, term, n, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, id);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = MNEMO_DB;
    }
    sqlite3_finalize(st);
    buf_reset(&d->prefix);
    return rc;
}

int64_t kwpost_floor(kwpost *k, int range) { return k->mark[range] + 1; }

int kwpost_full(const kwpost *k) { return k->queued >= k->flush_bytes; }

static int by_term(const void *a, const void *b)
{
    return strcmp(((const acc *)a)->term, ((const acc *)b)->term);
}

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const post *)a)->id, y = ((const post *)b)->id;
    return x < y ? -1 : x > y;
}

/* Whether ID is among the sorted V[0..N). */
static int sorted_has(const int64_t *v, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == id;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Writes V as a varint at Q; the byte after it. */
static unsigned char *varint_at(unsigned char *q, uint64_t v)
{
    while (v > 0x7f) {
        *q++ = (unsigned char)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    *q++ = (unsigned char)v;
    return q;
}

#define VARINT_MAX 10

/* Encodes P[0..N) (ids ascending, one range) as a segment into DIR: its
 * blocks' directory, then their postings (built in DATA). Each block's
 * bytes are written in place into room reserved for its largest
 * encoding: a flush encodes millions of postings. */
static int encode_seg(const post *p, size_t n, buf *dir, buf *data)
{
    buf_reset(dir);
    buf_reset(data);
    size_t nblocks = (n + KWPOST_BLOCK - 1) / KWPOST_BLOCK;
    if (buf_reserve(dir, VARINT_MAX * (1 + nblocks * (5 + 2 * BLOCKMAX_BOUNDS))))
        return MNEMO_NOMEM;
    unsigned char *dq = (unsigned char *)dir->data;
    dq = varint_at(dq, nblocks);
    int64_t prev_last = 0;
    for (size_t from = 0; from < n; from += KWPOST_BLOCK) {
        size_t to = from + KWPOST_BLOCK < n ? from + KWPOST_BLOCK : n;
        if (buf_reserve(data, (to - from) * (2 * VARINT_MAX + 1) + 1))
            return MNEMO_NOMEM;
        unsigned char *start = (unsigned char *)data->data + data->len, *q = start;
        blockmax_bound bb = {0};
        int64_t prev = p[from].id;
        int wide = 0;
        for (size_t i = from; i < to; i++) {
            q = varint_at(q, (uint64_t)(p[i].id - prev));
            prev = p[i].id;
            blockmax_bound_add(&bb, p[i].tf, (uint32_t)p[i].dl);
            wide |= p[i].dl > 0xffff;
        }
        for (size_t i = from; i < to; i++)
            *q++ = (unsigned char)(p[i].tf > 255 ? 255 : p[i].tf);
        *q++ = (unsigned char)wide;
        for (size_t i = from; i < to; i++) {
            if (wide) {
                q = varint_at(q, (uint64_t)p[i].dl);
            } else {
                *q++ = (unsigned char)(p[i].dl & 0xff);
                *q++ = (unsigned char)(p[i].dl >> 8);
            }
        }
        data->len += (size_t)(q - start);
        dq = varint_at(dq, (uint64_t)(p[from].id - prev_last));
        dq = varint_at(dq, (uint64_t)(p[to - 1].id - p[from].id));
        dq = varint_at(dq, to - from);
        dq = varint_at(dq, (uint64_t)bb.n);
        for (int i = 0; i < bb.n; i++) {
            dq = varint_at(dq, bb.tf[i]);
            dq = varint_at(dq, bb.dl[i]);
        }
        dq = varint_at(dq, (uint64_t)(q - start));
        prev_last = p[to - 1].id;
    }
    dir->len = (size_t)(dq - (unsigned char *)dir->data);
    buf_append(dir, data->data, data->len);
    return buf_err(dir) || buf_err(data) ? MNEMO_NOMEM : MNEMO_OK;
}

/* Inserts TERM's segment of N postings up to id LAST, DATA[0..SIZE), with
 * ST (the flush's insert). */
static int insert_seg(sqlite3_stmt *st, const char *term, int len, int64_t last, size_t n,
                      const char *data, size_t size)
{
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, term, len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, last);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    sqlite3_bind_blob(st, 4, data, (int)size, SQLITE_STATIC);
    int s = sqlite3_step(st);
    return s == SQLITE_DONE ? MNEMO_OK : s == SQLITE_FULL ? MNEMO_IO : MNEMO_DB;
}

/* Writes P[0..N) (ids ascending, one range) as a segment of TERM, one
 * row; DIR and DATA are room to encode it. */
static int write_seg(sqlite3_stmt *st, const char *term, int len, const post *p, size_t n,
                     buf *dir, buf *data)
{
    int rc = encode_seg(p, n, dir, data);
    return rc ? rc : insert_seg(st, term, len, p[n - 1].id, n, dir->data, dir->len);
}

/* ----------------------------------------------------------------------
 * Folding: a term's segments made one again
 * -------------------------------------------------------------------- */

#define SEG_MAX 8          /* segments after a term's largest before they are folded */
#define FOLD_POSTS (2u << 20) /* flushes this small (a sync's changes) fold what they touch */

static int read_seg(kwread_term *t, const unsigned char *p, size_t len, int64_t *df);
static int decode_block(const kwread_term *t, size_t b, post *out, size_t *n);
static void term_free(kwread_term *t);

/* TERM's segments of range R, folded into one when there are more than
 * SEG_MAX after its largest (those are folded), or when its dead ids pass
 * a quarter of its postings (all are, without them): few segments to
 * read, and the dead ids' rows go with their postings. Segments are
 * folded in runs of consecutive ids, so blocks stay in id order. */
static int fold_term(kwpost *k, const char *term, int len, int r, sqlite3_stmt *seg, buf *dir,
                     buf *data)
{
    int64_t *lasts = NULL, *ns = NULL, *gone = NULL;
    size_t nseg = 0, cap = 0, ngone = 0, capg = 0, big = 0, from = 0;
    int64_t total = 0;
    post *v = NULL;
    kwread_term t;
    memset(&t, 0, sizeof t);
    int rc = MNEMO_OK, s;
    /* Prepared once per writer: a flush folds thousands of terms. */
    if (!k->fold[0] &&
        (prep(k->db, k->schema, "SELECT last, n FROM %s.kw_seg WHERE term = ?1 AND last >= ?2 "
                                "AND last < ?3 ORDER BY last", &k->fold[0]) != SQLITE_OK ||
         prep(k->db, k->schema, "SELECT id FROM %s.kw_dead WHERE term = ?1 AND id >= ?2 AND "
                                "id <= ?3 ORDER BY id", &k->fold[1]) != SQLITE_OK ||
         prep(k->db, k->schema, "DELETE FROM %s.kw_seg WHERE term = ?1 AND last = ?2 "
                                "RETURNING data", &k->fold[2]) != SQLITE_OK ||
         prep(k->db, k->schema, "DELETE FROM %s.kw_dead WHERE term = ?1 AND id = ?2",
              &k->fold[3]) != SQLITE_OK)) {
        for (int i = 0; i < 4; i++) {
            sqlite3_finalize(k->fold[i]);
            k->fold[i] = NULL;
        }
        return MNEMO_DB;
    }
    sqlite3_stmt *ls = k->fold[0], *dead = k->fold[1], *del = k->fold[2], *undead = k->fold[3];
    sqlite3_bind_text(ls, 1, term, len, SQLITE_STATIC);
    sqlite3_bind_int64(ls, 2, range_lo[r]);
    sqlite3_bind_int64(ls, 3, range_hi[r]);
    while ((s = sqlite3_step(ls)) == SQLITE_ROW) {
        if (nseg == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *a = realloc(lasts, cap * sizeof *a);
            int64_t *b = a ? realloc(ns, cap * sizeof *b) : NULL;
            if (a)
                lasts = a;
            if (b)
                ns = b;
            if (!a || !b) {
                rc = MNEMO_NOMEM;
                goto done;
            }
        }
        lasts[nseg] = sqlite3_column_int64(ls, 0);
        ns[nseg] = sqlite3_column_int64(ls, 1);
        total += ns[nseg];
        if (ns[nseg] > ns[big])
            big = nseg;
        nseg++;
    }
    if (s != SQLITE_DONE) {
        rc = MNEMO_DB;
        goto done;
    }
    if (nseg < 2)
        goto done;
    /* Its dead ids, all of the range's. */
    sqlite3_bind_text(dead, 1, term, len, SQLITE_STATIC);
    sqlite3_bind_int64(dead, 2, range_lo[r]);
    sqlite3_bind_int64(dead, 3, lasts[nseg - 1]);
    while ((s = sqlite3_step(dead)) == SQLITE_ROW)
        if ((rc = ids_push(&gone, &ngone, &capg, sqlite3_column_int64(dead, 0))))
            goto done;
    if (s != SQLITE_DONE) {
        rc = MNEMO_DB;
        goto done;
    }
    if (4 * (int64_t)ngone >= total && ngone >= 64)
        from = 0;
    else if (nseg - big - 1 > SEG_MAX)
        from = big + 1;
    else
        goto done;
    /* The run's postings, its segments deleted. */
    int64_t df = 0;
    for (size_t i = from; !rc && i < nseg; i++) {
        sqlite3_reset(del);
        sqlite3_bind_text(del, 1, term, len, SQLITE_STATIC);
        sqlite3_bind_int64(del, 2, lasts[i]);
        if ((s = sqlite3_step(del)) != SQLITE_ROW) {
            rc = MNEMO_DB;
            break;
        }
        size_t n = (size_t)sqlite3_column_bytes(del, 0);
        unsigned char *copy = n ? malloc(n) : NULL;
        unsigned char **segs = copy ? realloc(t.segs, (t.nsegs + 1) * sizeof *segs) : NULL;
        if (!segs) {
            free(copy);
            rc = MNEMO_NOMEM;
            break;
        }
        t.segs = segs;
        memcpy(copy, sqlite3_column_blob(del, 0), n);
        t.segs[t.nsegs++] = copy;
        int ok = read_seg(&t, copy, n, &df);
        if (ok <= 0)
            rc = ok < 0 ? MNEMO_NOMEM : MNEMO_CORRUPT;
        while (!rc && (s = sqlite3_step(del)) == SQLITE_ROW)
            ;
    }
    if (rc)
        goto done;
    if (!(v = malloc(((size_t)df + 1) * sizeof *v))) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    size_t nv = 0, g = 0;
    for (size_t b = 0; !rc && b < t.nblocks; b++) {
        size_t n = 0;
        rc = decode_block(&t, b, v + nv, &n);
        nv += n;
    }
    /* Without the dead, whose rows go. */
    size_t keep = 0;
    for (size_t i = 0; !rc && i < nv; i++) {
        while (g < ngone && gone[g] < v[i].id)
            g++;
        if (g < ngone && gone[g] == v[i].id) {
            sqlite3_reset(undead);
            sqlite3_bind_text(undead, 1, term, len, SQLITE_STATIC);
            sqlite3_bind_int64(undead, 2, v[i].id);
            if (sqlite3_step(undead) != SQLITE_DONE)
                rc = MNEMO_DB;
            continue;
        }
        v[keep++] = v[i];
    }
    if (!rc && keep)
        rc = write_seg(seg, term, len, v, keep, dir, data);
done:
    for (int i = 0; i < 4; i++) {
        sqlite3_reset(k->fold[i]);
        sqlite3_clear_bindings(k->fold[i]);
    }
    free(lasts);
    free(ns);
    free(gone);
    free(v);
    term_free(&t);
    return rc;
}

/* ----------------------------------------------------------------------
 * Flushing: the terms' segments encoded into batches and written
 * -------------------------------------------------------------------- */

#define BATCH_BYTES (1u << 20) /* segments' bytes encoded before they are written */

/* Encodes term A's postings (those not gone since) as a segment per id
 * range into B. Its postings are freed: their bytes are in B. */
static int encode_term(kwpost *k, acc *a, batch *b)
{
    int sorted = 1;
    for (size_t j = 1; j < a->n && sorted; j++)
        sorted = a->v[j - 1].id < a->v[j].id;
    if (!sorted)
        qsort(a->v, a->n, sizeof *a->v, by_id);
    size_t n = 0;
    for (size_t j = 0; j < a->n; j++)
        if (!sorted_has(k->gone, k->ngone, a->v[j].id))
            a->v[n++] = a->v[j];
    int rc = MNEMO_OK;
    for (size_t from = 0; from < n && !rc;) {
        size_t to = from + 1;
        int r = kwpost_range(a->v[from].id);
        while (to < n && kwpost_range(a->v[to].id) == r)
            to++;
        if (b->n == b->cap) {
            size_t cap = b->cap ? b->cap * 2 : 4096;
            segrow *v = realloc(b->v, cap * sizeof *v);
            if (!v)
                return MNEMO_NOMEM;
            b->v = v;
            b->cap = cap;
        }
        if (!(rc = encode_seg(a->v + from, to - from, &k->edir, &k->epost))) {
            b->v[b->n++] = (segrow){a->term, a->len, r, a->v[to - 1].id, to - from,
                                    b->data.len, k->edir.len};
            if (buf_append(&b->data, k->edir.data, k->edir.len))
                rc = MNEMO_NOMEM;
        }
        from = to;
    }
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
    return rc;
}

/* Writes B's segments (and folds their terms' in a small flush); B is
 * empty after. The sync thread's. */
static int spill_batch(kwpost *k, batch *b);

static int write_batch(kwpost *k, batch *b)
{
    if (k->spilling)
        return spill_batch(k, b);
    int rc = MNEMO_OK;
    for (size_t i = 0; i < b->n && !rc; i++) {
        const segrow *w = &b->v[i];
        rc = insert_seg(k->seg, w->term, w->len, w->last, w->n, b->data.data + w->off,
                        w->size);
        if (!rc && k->small)
            rc = fold_term(k, w->term, w->len, w->range, k->seg, &k->fdir, &k->fpost);
    }
    b->n = 0;
    buf_reset(&b->data);
    return rc;
}

/* Encodes every term's segments in term order, handing each batch to SHIP
 * once it is full, which gives the batch to fill next (NULL: stop). */
static int encode_terms(kwpost *k, int (*ship)(kwpost *, batch **))
{
    if (k->nv > 1)
        qsort(k->v, k->nv, sizeof *k->v, by_term);
    batch *b = &k->bt[0];
    int rc = MNEMO_OK;
    for (size_t i = 0; i < k->nv && b && !rc; i++) {
        rc = encode_term(k, &k->v[i], b);
        if (!rc && (b->data.len >= BATCH_BYTES || i + 1 == k->nv))
            rc = ship(k, &b);
    }
    return rc;
}

/* Without the thread: each batch written as it fills. */
static int ship_now(kwpost *k, batch **b) { return write_batch(k, *b); }

/* On the thread: the batch handed to the sync thread, the other filled
 * once written (or not, when the flush failed). */
static int ship_written(kwpost *k, batch **b)
{
    batch *next = *b == &k->bt[0] ? &k->bt[1] : &k->bt[0];
    pthread_mutex_lock(&k->mu);
    (*b)->full = 1;
    pthread_cond_broadcast(&k->idle);
    while (next->full && !k->abort_enc)
        pthread_cond_wait(&k->work, &k->mu);
    *b = k->abort_enc ? NULL : next;
    pthread_mutex_unlock(&k->mu);
    return MNEMO_OK;
}

/* Has the thread encode the segments and writes each batch it fills,
 * in turn, while it fills the other. */
static int write_encoded(kwpost *k)
{
    int rc = MNEMO_OK, m = 0;
    pthread_mutex_lock(&k->mu);
    k->encode = 1;
    k->encoded = 0;
    pthread_cond_signal(&k->work);
    for (;;) {
        while (!k->bt[m].full && !k->encoded)
            pthread_cond_wait(&k->idle, &k->mu);
        if (!k->bt[m].full)
            break;
        pthread_mutex_unlock(&k->mu);
        rc = write_batch(k, &k->bt[m]);
        pthread_mutex_lock(&k->mu);
        k->bt[m].full = 0;
        if (rc)
            k->abort_enc = 1;
        pthread_cond_broadcast(&k->work);
        if (rc)
            break;
        m ^= 1;
    }
    while (!k->encoded)
        pthread_cond_wait(&k->idle, &k->mu);
    if (!rc)
        rc = k->err;
    k->abort_enc = 0;
    pthread_mutex_unlock(&k->mu);
    for (int i = 0; i < 2; i++) {
        k->bt[i].full = 0;
        k->bt[i].n = 0;
        buf_reset(&k->bt[i].data);
    }
    return rc;
}

/* ----------------------------------------------------------------------
 * Runs set aside (kwpost_defer)
 * -------------------------------------------------------------------- */

#define OUT_BYTES (1u << 20) /* a run's bytes appended to its file at a time */
#define RUN_READ (64u << 10) /* a run's bytes read back at a time */

void kwpost_defer(kwpost *k, const char *path) { k->defer = path; }

/* Appends what waits to the runs' file. */
static int out_write(kwpost *k)
{
    const char *p = k->out.data;
    size_t n = k->out.len;
    while (n) {
        ssize_t w = pwrite(k->fd, p, n, k->end);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return MNEMO_IO;
        p += w;
        n -= (size_t)w;
        k->end += w;
    }
    buf_reset(&k->out);
    return MNEMO_OK;
}

/* Appends B's segments to the run being written; B is empty after. */
static int spill_batch(kwpost *k, batch *b)
{
    int rc = MNEMO_OK;
    for (size_t i = 0; i < b->n && !rc; i++) {
        const segrow *w = &b->v[i];
        runhead h = {w->last, w->n, w->size, w->len};
        buf_append(&k->out, &h, sizeof h);
        buf_append(&k->out, w->term, (size_t)w->len);
        buf_append(&k->out, b->data.data + w->off, w->size);
        if (buf_err(&k->out))
            rc = MNEMO_NOMEM;
        else if (k->out.len >= OUT_BYTES)
            rc = out_write(k);
    }
    b->n = 0;
    buf_reset(&b->data);
    return rc;
}

/* Opens the runs' file beside the index, removed at once: a killed sync
 * leaves nothing behind. */
static int runs_open(kwpost *k)
{
    size_t n = strlen(k->defer);
    char *path = malloc(n + 16);
    if (!path)
        return MNEMO_NOMEM;
    memcpy(path, k->defer, n);
    memcpy(path + n, "-kwrun-XXXXXX", 14);
    k->fd = mkostemp(path, O_CLOEXEC);
    if (k->fd >= 0)
        unlink(path);
    free(path);
    return k->fd >= 0 ? MNEMO_OK : MNEMO_IO;
}

/* Makes the next segment of R (whose bytes are in the file FD) current;
 * 0 at its end, -1 on an error. */
static int run_next(int fd, run *r)
{
    r->at += r->used;
    r->used = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t have = r->len - r->at;
        if (have >= sizeof r->h) {
            memcpy(&r->h, r->buf + r->at, sizeof r->h);
            size_t need = sizeof r->h + (size_t)r->h.len + r->h.size;
            if (have >= need) {
                r->used = need;
                r->term = r->buf + r->at + sizeof r->h;
                r->data = r->term + r->h.len;
                return 1;
            }
            if (need > r->cap) {
                char *v = realloc(r->buf, need);
                if (!v)
                    return -1;
                r->buf = v;
                r->cap = need;
            }
        } else if (!have && r->pos == r->end) {
            return 0;
        }
        /* What is left of the buffer moved to its start, then filled. */
        memmove(r->buf, r->buf + r->at, have);
        r->len = have;
        r->at = 0;
        while (r->len < r->cap && r->pos < r->end) {
            size_t want = r->cap - r->len;
            if ((off_t)want > r->end - r->pos)
                want = (size_t)(r->end - r->pos);
            ssize_t got = pread(fd, r->buf + r->len, want, r->pos);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return -1;
            r->len += (size_t)got;
            r->pos += got;
        }
    }
    return -1; /* a segment that runs past its run's end */
}

/* Whether run A's segment comes before B's: by term, then last id, as the
 * table orders them. */
static int run_before(const run *a, const run *b)
{
    size_t n = a->h.len < b->h.len ? (size_t)a->h.len : (size_t)b->h.len;
    int c = memcmp(a->term, b->term, n);
    if (c)
        return c < 0;
    if (a->h.len != b->h.len)
        return a->h.len < b->h.len;
    return a->h.last < b->h.last;
}

/* Restores the heap order of HEAP[0..N) (runs, the first first) below I. */
static void heap_down(run **heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && run_before(heap[l], heap[m]))
            m = l;
        if (r < n && run_before(heap[r], heap[m]))
            m = r;
        if (m == i)
            return;
        run *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* Writes the runs' segments into the table, merged in its order: the
 * table is written in one pass. */
static int runs_merge(kwpost *k)
{
    int rc = MNEMO_OK;
    if ((rc = out_write(k)))
        return rc;
    run *v = calloc(k->nruns, sizeof *v);
    run **heap = calloc(k->nruns, sizeof *heap);
    size_t n = 0;
    if (!v || !heap)
        rc = MNEMO_NOMEM;
    for (size_t i = 0; i < k->nruns && !rc; i++) {
        v[i].pos = k->runs[i];
        v[i].end = i + 1 < k->nruns ? k->runs[i + 1] : k->end;
        if (!(v[i].buf = malloc(RUN_READ))) {
            rc = MNEMO_NOMEM;
            break;
        }
        v[i].cap = RUN_READ;
        int got = run_next(k->fd, &v[i]);
        if (got < 0)
            rc = MNEMO_IO;
        else if (got)
            heap[n++] = &v[i];
    }
    for (size_t i = n / 2; i-- > 0;)
        heap_down(heap, n, i);
    while (!rc && n) {
        run *r = heap[0];
        rc = insert_seg(k->seg, r->term, (int)r->h.len, r->h.last, r->h.n, r->data,
                        r->h.size);
        int got = rc ? 0 : run_next(k->fd, r);
        if (got < 0)
            rc = MNEMO_IO;
        else if (!got)
            heap[0] = heap[--n];
        heap_down(heap, n, 0);
    }
    for (size_t i = 0; v && i < k->nruns; i++)
        free(v[i].buf);
    free(v);
    free(heap);
    close(k->fd);
    k->fd = -1;
    k->nruns = 0;
    k->end = 0;
    return rc;
}

/* ----------------------------------------------------------------------
 * Flushing
 * -------------------------------------------------------------------- */

/* Writes what waits: into the table (LAST, or a flush that folds), else
 * as a run set aside when deferring. */
static int flush(kwpost *k, int last)
{
    int rc = drain(k);
    for (int r = 0; r < KWPOST_RANGES && !rc; r++)
        if (!k->seen[r])
            rc = catch_up(k, r, INT64_MAX);
    if (rc)
        return rc;
    if (k->ngone > 1)
        qsort(k->gone, k->ngone, sizeof *k->gone, cmp_i64);
    /* Small for the flush threshold (scaled with it in tests). */
    k->small = k->nposts < (uint64_t)FOLD_POSTS * k->flush_bytes / FLUSH_BYTES;
    k->spilling = k->defer && !last && !k->small;
    sqlite3_stmt *mk = NULL;
    if (prep(k->db, k->schema, "INSERT INTO %s.kw_seg(term, last, n, data) "
                                  "VALUES(?1, ?2, ?3, ?4)", &k->seg) != SQLITE_OK ||
        prep(k->db, k->schema, "INSERT INTO %s.kw_mark(range, mark) VALUES(?1, ?2) "
                                  "ON CONFLICT(range) DO UPDATE SET mark = excluded.mark", &mk) != SQLITE_OK) {
        rc = MNEMO_DB;
        goto done;
    }
    if (k->spilling) {
        /* A new run, at the file's end. */
        off_t *v = realloc(k->runs, (k->nruns + 1) * sizeof *v);
        if (!v) {
            rc = MNEMO_NOMEM;
            goto done;
        }
        k->runs = v;
        if (k->fd < 0 && (rc = runs_open(k)))
            goto done;
        k->runs[k->nruns++] = k->end;
    } else if (k->nruns && (rc = runs_merge(k))) {
        /* The runs first: a fold reads a term's segments. */
        goto done;
    }
    /* The thread encodes while this thread writes; without it (no chunk
     * was queued), this thread does both. */
    rc = k->started ? write_encoded(k) : encode_terms(k, ship_now);
    if (!rc && k->spilling)
        rc = out_write(k);
    for (int r = 0; r < KWPOST_RANGES && !rc; r++) {
        if (k->top[r] > k->mark[r])
            k->mark[r] = k->top[r];
        if (k->spilling)
            continue; /* written with the runs' segments */
        sqlite3_reset(mk);
        sqlite3_bind_int(mk, 1, r);
        sqlite3_bind_int64(mk, 2, k->mark[r]);
        if (sqlite3_step(mk) != SQLITE_DONE)
            rc = MNEMO_DB;
    }
done:
    k->spilling = 0;
    sqlite3_finalize(k->seg);
    k->seg = NULL;
    sqlite3_finalize(mk);
    acc_reset(k);
    return rc;
}

int kwpost_flush(kwpost *k) { return flush(k, 1); }

int kwpost_flush_full(kwpost *k) { return flush(k, 0); }

/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

static int term_grow(kwread_term *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    int64_t *f = realloc(t->first, cap * sizeof *f);
    if (f)
        t->first = f;
    int64_t *l = realloc(t->last, cap * sizeof *l);
    if (l)
        t->last = l;
    blockmax_bound *b = realloc(t->bound, cap * sizeof *b);
    if (b)
        t->bound = b;
    const unsigned char **d = realloc(t->data, cap * sizeof *d);
    if (d)
        t->data = d;
    uint32_t *dl = realloc(t->dlen, cap * sizeof *dl);
    if (dl)
        t->dlen = dl;
    uint32_t *n = realloc(t->n, cap * sizeof *n);
    if (n)
        t->n = n;
    if (!f || !l || !b || !d || !dl || !n)
        return MNEMO_NOMEM;
    t->cap = cap;
    return MNEMO_OK;
}

/* Adds the blocks of segment P[0..LEN) (a copy T keeps) to T: 0 when it is
 * damaged. */
static int read_seg(kwread_term *t, const unsigned char *p, size_t len, int64_t *df)
{
    const unsigned char *end = p + len;
    uint64_t nb, first, span, n, nbound, dlen;
    if (!get_varint(&p, end, &nb) || nb == 0)
        return 0;
    size_t from = t->nblocks;
    int64_t prev = 0;
    for (uint64_t i = 0; i < nb; i++) {
        if (t->nblocks == t->cap && term_grow(t))
            return -1;
        size_t b = t->nblocks;
        if (!get_varint(&p, end, &first) || !get_varint(&p, end, &span) ||
            !get_varint(&p, end, &n) || !get_varint(&p, end, &nbound) || n == 0 ||
            n > KWPOST_BLOCK || nbound == 0 || nbound > BLOCKMAX_BOUNDS)
            return 0;
        t->bound[b].n = (int)nbound;
        for (uint64_t j = 0; j < nbound; j++) {
            uint64_t tf, dl;
            if (!get_varint(&p, end, &tf) || !get_varint(&p, end, &dl))
                return 0;
            t->bound[b].tf[j] = (uint32_t)tf;
            t->bound[b].dl[j] = (uint32_t)dl;
        }
        if (!get_varint(&p, end, &dlen))
            return 0;
        t->first[b] = prev + (int64_t)first;
        t->last[b] = t->first[b] + (int64_t)span;
        if ((b && t->first[b] <= t->last[b - 1]) || (i && first == 0))
            return 0;
        t->n[b] = (uint32_t)n;
        t->dlen[b] = (uint32_t)dlen;
        prev = t->last[b];
        *df += (int64_t)n;
        t->nblocks++;
    }
    /* The postings follow the directory. */
    for (size_t b = from; b < t->nblocks; b++) {
        if ((size_t)(end - p) < t->dlen[b])
            return 0;
        t->data[b] = p;
        p += t->dlen[b];
    }
    return p == end;
}

int kwread_load(kwread *r, sqlite3 *db, const char *schema, const char *const *terms, int nt,
                int64_t lo, int64_t hi, int64_t *df)
{
    memset(r, 0, sizeof *r);
    r->db = db;
    r->nt = nt;
    sqlite3_stmt *seg = NULL, *dead = NULL;
    int rc = MNEMO_OK;
    if (prep(db, schema, "SELECT data FROM %s.kw_seg WHERE term = ?1 AND last >= ?2 AND "
                               "last < ?3 ORDER BY last", &seg) != SQLITE_OK ||
        prep(db, schema, "SELECT id FROM %s.kw_dead WHERE term = ?1 AND id >= ?2 AND id < ?3", &dead) != SQLITE_OK) {
        rc = MNEMO_DB;
        goto done;
    }
    for (int i = 0; i < nt && !rc; i++) {
        kwread_term *t = &r->t[i];
        if (!(t->term = strdup(terms[i]))) {
            rc = MNEMO_NOMEM;
            break;
        }
        df[i] = 0;
        sqlite3_reset(seg);
        sqlite3_bind_text(seg, 1, terms[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(seg, 2, lo);
        sqlite3_bind_int64(seg, 3, hi);
        int s;
        while ((s = sqlite3_step(seg)) == SQLITE_ROW) {
            size_t len = (size_t)sqlite3_column_bytes(seg, 0);
            const void *blob = sqlite3_column_blob(seg, 0);
            unsigned char **v = realloc(t->segs, (t->nsegs + 1) * sizeof *v);
            if (v)
                t->segs = v;
            unsigned char *copy = v && len ? malloc(len) : NULL;
            if (!copy) {
                rc = MNEMO_NOMEM;
                break;
            }
            memcpy(copy, blob, len);
            t->segs[t->nsegs++] = copy;
            int ok = read_seg(t, copy, len, &df[i]);
            if (ok <= 0) {
                rc = ok < 0 ? MNEMO_NOMEM : MNEMO_CORRUPT;
                r->damaged = ok == 0;
                break;
            }
        }
        if (!rc && s != SQLITE_DONE)
            rc = s == SQLITE_NOMEM ? MNEMO_NOMEM : s == SQLITE_CORRUPT ? MNEMO_CORRUPT : MNEMO_DB;
        sqlite3_reset(dead);
        sqlite3_bind_text(dead, 1, terms[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(dead, 2, lo);
        sqlite3_bind_int64(dead, 3, hi);
        while (!rc && (s = sqlite3_step(dead)) == SQLITE_ROW) {
            df[i]--;
            rc = ids_push(&r->gone, &r->ngone, &r->capgone, sqlite3_column_int64(dead, 0));
        }
        if (!rc && s != SQLITE_DONE)
            rc = s == SQLITE_NOMEM ? MNEMO_NOMEM : MNEMO_DB;
    }
    if (!rc && r->ngone > 1) {
        qsort(r->gone, r->ngone, sizeof *r->gone, cmp_i64);
        size_t n = 0;
        for (size_t i = 0; i < r->ngone; i++)
            if (!n || r->gone[n - 1] != r->gone[i])
                r->gone[n++] = r->gone[i];
        r->ngone = n;
    }
done:
    sqlite3_finalize(seg);
    sqlite3_finalize(dead);
    return rc;
}

/* Block B of T into ID, TF and DL (room for KWPOST_BLOCK each): 0 when
 * it is damaged. */
static int unpack(const kwread_term *t, size_t b, int64_t *id, uint8_t *tf, int32_t *dl)
{
    const unsigned char *p = t->data[b], *end = p + t->dlen[b];
    size_t n = t->n[b];
    int64_t at = t->first[b];
    for (size_t i = 0; i < n; i++) {
        uint64_t d;
        if (p < end && *p < 0x80) /* most gaps fit a byte */
            d = *p++;
        else if (!get_varint(&p, end, &d))
            return 0;
        if (i && d == 0)
            return 0;
        at += (int64_t)d;
        id[i] = at;
    }
    if (at != t->last[b] || (size_t)(end - p) < n + 1)
        return 0;
    memcpy(tf, p, n);
    p += n;
    int wide = *p++;
    if (!wide) {
        if ((size_t)(end - p) != 2 * n)
            return 0;
        for (size_t i = 0; i < n; i++)
            dl[i] = p[2 * i] | p[2 * i + 1] << 8;
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        if (!get_varint(&p, end, &v))
            return 0;
        dl[i] = (int32_t)v;
    }
    return p == end;
}

/* Block B of T's postings into OUT (room for KWPOST_BLOCK), *N of them:
 * MNEMO_CORRUPT when it is damaged. */
static int decode_block(const kwread_term *t, size_t b, post *out, size_t *n)
{
    int64_t id[KWPOST_BLOCK];
    uint8_t tf[KWPOST_BLOCK];
    int32_t dl[KWPOST_BLOCK];
    if (!unpack(t, b, id, tf, dl))
        return MNEMO_CORRUPT;
    *n = t->n[b];
    for (size_t i = 0; i < *n; i++)
        out[i] = (post){id[i], dl[i], tf[i]};
    return MNEMO_OK;
}

int kwread_block(void *ud, const blockmax_term *bt, size_t b, blockmax_posts *out)
{
    kwread *r = ud;
    kwread_term *t = &r->t[bt->list];
    if (!t->ncap) {
        t->id = malloc(KWPOST_BLOCK * sizeof *t->id);
        t->tf = malloc(KWPOST_BLOCK);
        t->dl = malloc(KWPOST_BLOCK * sizeof *t->dl);
        if (!t->id || !t->tf || !t->dl)
            return MNEMO_NOMEM;
        t->ncap = KWPOST_BLOCK;
    }
    if (!unpack(t, b, t->id, t->tf, t->dl)) {
        r->damaged = 1;
        return MNEMO_CORRUPT;
    }
    size_t n = t->n[b];
    *out = (blockmax_posts){t->id, t->tf, t->dl, n};
    return MNEMO_OK;
}

int kwread_gone(void *ud, int64_t id)
{
    const kwread *r = ud;
    return sorted_has(r->gone, r->ngone, id);
}

static void term_free(kwread_term *t)
{
    free(t->term);
    free(t->first);
    free(t->last);
    free(t->bound);
    free(t->ub);
    free(t->data);
    free(t->dlen);
    free(t->n);
    for (size_t j = 0; j < t->nsegs; j++)
        free(t->segs[j]);
    free(t->segs);
    free(t->id);
    free(t->tf);
    free(t->dl);
}

void kwread_cleanup(kwread *r)
{
    for (int i = 0; i < r->nt; i++)
        term_free(&r->t[i]);
    free(r->gone);
    memset(r, 0, sizeof *r);
}
