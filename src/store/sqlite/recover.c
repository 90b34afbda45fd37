/*
 * recover.c - salvaging memories from a damaged file (see recover.h).
 *
 * Two readers, one writer. The SQL reader opens the file read-only and
 * reads one memory at a time in rowid order, seeking past a damaged page in
 * growing steps; what it reads goes in first, as SQLite reads it. Then the
 * page reader reads every page of the file itself (the SQLite file format:
 * table b-tree leaf pages, cells, overflow chains, records), whatever the
 * tree above them says, and adds each record shaped like a memory whose id
 * is not in yet: a damaged interior page, a wrong rowid (which sends a seek
 * past every later row without an error) or a destroyed schema hides rows
 * from SQLite, not from it. Pages on the freelist are not read: what they
 * hold was deleted, and a purge must stay a purge. History events from both
 * readers go in last, once each, in their original order, for the memories
 * this salvage added.
 *
 * The page reader also counts what it could not read, the damaged places:
 * a page that is none of SQLite's kinds or whose header does not fit, a
 * page missing from a file cut short, a row whose cell does not decode,
 * whose overflow chain breaks (the part before the break is kept) or whose
 * header was damaged (the row is mended when its values can be placed: see
 * mend). Every value is untrusted: text that
 * is not UTF-8 is repaired (U+FFFD), a missing required value gets its
 * column's default, a record that does not fit the shape is not used.
 */
#include "store/sqlite/recover.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/hash.h"
#include "util/utf8.h"
#include "util/varint.h"

#define NCOLS 18 /* memories' columns after mid */
#define HCOLS 6  /* memory_history's columns after hid */

/* One value read back, borrowed from the reader. */
typedef struct sval {
    int type; /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB */
    int64_t i;
    double d;
    const char *s;
    size_t n;
} sval;

/* Column kinds of memories (after mid): T text, R real, I integer; lower
 * case: may be NULL. */
static const char mem_kinds[NCOLS + 1] = "TTTTRTTTTTTTRRrIrr";
static const char *const mem_default[NCOLS] = {
    "", "", "", "other", NULL, "fact", "user", "default", "", "", "{}", "[]",
};

static const char insert_sql[] =
    "INSERT OR IGNORE INTO mem.memories(id, text, hash, category, importance, type, subject, "
    "user_id, agent_id, run_id, metadata, triggers, created_at, updated_at, expires_at, "
    "confirmations, last_confirmed_at, deleted_at) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

/* A set of 64-bit hashes: the ids this salvage has seen. */
typedef struct idset {
    uint64_t *slot; /* 0: empty */
    size_t cap, n;
} idset;

/* A history event read back, kept until every memory is in. */
typedef struct hevent {
    int64_t hid; /* its rowid in the file */
    int sql;     /* read by SQLite: preferred to a page's copy */
    int drop;    /* another copy of an event kept */
    sval id;
    sval v[5]; /* event, old_text, new_text, at, detail; texts in hold */
    char *hold;
} hevent;

typedef struct writer {
    sqlite3 *dst;
    sqlite3_stmt *ins, *fts, *hist, *mid_of;
    int64_t first_new; /* mids from here on were written by this salvage */
    buf scratch;
    idset seen;
    hevent *ev;
    size_t nev, capev;
    long sql_errors; /* damaged places the SQL reader met */
    salvage_report *r;
} writer;

/* Adds H to S: 1 when it is new, 0 when it was there, -1 out of memory. */
static int idset_add(idset *s, uint64_t h)
{
    if (!h)
        h = 1;
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        uint64_t *g = calloc(cap, sizeof *g);
        if (!g)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slot[i])
                continue;
            size_t j = s->slot[i] & (cap - 1);
            while (g[j])
                j = (j + 1) & (cap - 1);
            g[j] = s->slot[i];
        }
        free(s->slot);
        s->slot = g;
        s->cap = cap;
    }
    size_t j = h & (s->cap - 1);
    while (s->slot[j]) {
        if (s->slot[j] == h)
            return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->slot[j] = h;
    s->n++;
    return 1;
}

/* A value as a number: 0 when it is none, or not finite (damage can make
 * a float of any 8 bytes). */
static double num(const sval *v)
{
    if (v->type == SQLITE_INTEGER)
        return (double)v->i;
    return v->type == SQLITE_FLOAT && isfinite(v->d) ? v->d : 0;
}

/* Binds text V to parameter P of ST, repaired to UTF-8 without NULs. */
static int bind_text(writer *w, sqlite3_stmt *st, int p, const sval *v, int *repaired)
{
    if (v->n == 0)
        return sqlite3_bind_text(st, p, "", 0, SQLITE_STATIC);
    if (utf8_valid(v->s, v->n) && !memchr(v->s, 0, v->n))
        return sqlite3_bind_text(st, p, v->s, (int)v->n, SQLITE_TRANSIENT);
    buf_reset(&w->scratch);
    utf8_repair(&w->scratch, v->s, v->n);
    if (buf_err(&w->scratch))
        return SQLITE_NOMEM;
    for (size_t i = 0; i < w->scratch.len; i++)
        if (w->scratch.data[i] == 0) /* an embedded NUL would cut the text */
            w->scratch.data[i] = ' ';
    (*repaired)++;
    return sqlite3_bind_text(st, p, w->scratch.data ? w->scratch.data : "",
                             (int)w->scratch.len, SQLITE_TRANSIENT);
}

/* Writes one memory (V: its 18 columns; CUT: some of it was lost). Returns
 * its new mid in *MID, 0 when it was stored already or read before. */
static int put_memory(writer *w, const sval *v, int cut, int64_t *mid)
{
    *mid = 0;
    if (v[0].type != SQLITE_TEXT || v[0].n == 0)
        return SQLITE_OK; /* no id: nothing to tell it by */
    int fresh = idset_add(&w->seen, hash64(v[0].s, v[0].n));
    if (fresh < 0)
        return SQLITE_NOMEM;
    if (!fresh)
        return SQLITE_OK; /* read by the other reader, or twice from pages */
    sqlite3_stmt *st = w->ins;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    int rc = SQLITE_OK, bad = 0;
    for (int c = 0; c < NCOLS && rc == SQLITE_OK; c++) {
        const sval *x = &v[c];
        char k = mem_kinds[c];
        if (x->type == SQLITE_NULL || ((k == 'T' || k == 't') && x->type != SQLITE_TEXT)) {
            if (k == 'T')
                rc = sqlite3_bind_text(st, c + 1, mem_default[c], -1, SQLITE_STATIC);
            else if (k == 'R' || k == 'I')
                rc = c == 4 ? sqlite3_bind_double(st, c + 1, 0.5) : sqlite3_bind_int(st, c + 1, 0);
            else
                rc = sqlite3_bind_null(st, c + 1);
        } else if (k == 'T' || k == 't') {
            rc = bind_text(w, st, c + 1, x, &bad);
        } else if (k == 'I') {
            double d = num(x); /* in range before the cast: a damaged float can be any */
            rc = sqlite3_bind_int64(st, c + 1, x->type == SQLITE_INTEGER ? x->i
                                               : fabs(d) < 9e18 ? (int64_t)d
                                                                : 0);
        } else {
            rc = sqlite3_bind_double(st, c + 1, num(x));
        }
    }
    if (rc == SQLITE_OK && v[2].type != SQLITE_TEXT) { /* the hash is derived */
        char h[HASH_HEX_LEN + 1];
        hash_hex(v[1].type == SQLITE_TEXT ? v[1].s : "", v[1].type == SQLITE_TEXT ? v[1].n : 0, h);
        rc = sqlite3_bind_text(st, 3, h, -1, SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK)
        return rc;
    if (sqlite3_step(st) != SQLITE_DONE)
        return sqlite3_errcode(w->dst);
    if (sqlite3_changes(w->dst) == 0) {
        sqlite3_reset(w->mid_of);
        if (bind_text(w, w->mid_of, 1, &v[0], &(int){0}) == SQLITE_OK &&
            sqlite3_step(w->mid_of) == SQLITE_ROW &&
            sqlite3_column_int64(w->mid_of, 0) < w->first_new)
            w->r->present++;
        return SQLITE_OK;
    }
    *mid = sqlite3_last_insert_rowid(w->dst);
    w->r->recovered++;
    if (bad || cut)
        w->r->repaired++;
    if (v[17].type == SQLITE_NULL) { /* not deleted: searchable */
        sqlite3_reset(w->fts);
        sqlite3_bind_int64(w->fts, 1, *mid);
        /* The text as stored: "" when it was not text at all. */
        static const sval empty = {SQLITE_TEXT, 0, 0, "", 0};
        const sval *t = v[1].type == SQLITE_TEXT ? &v[1] : &empty;
        if (bind_text(w, w->fts, 2, t, &bad) != SQLITE_OK || sqlite3_step(w->fts) != SQLITE_DONE)
            return sqlite3_errcode(w->dst);
    }
    return SQLITE_OK;
}

/* Writes one history event of memory ID (V: event, old, new, at, detail). */
static int put_history(writer *w, const sval *id, const sval *v)
{
    sqlite3_stmt *st = w->hist;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    int bad = 0, rc = bind_text(w, st, 1, id, &bad);
    for (int c = 0; c < 5 && rc == SQLITE_OK; c++) {
        if (c == 3)
            rc = sqlite3_bind_double(st, 5, num(&v[3]));
        else if (v[c].type == SQLITE_TEXT)
            rc = bind_text(w, st, c + 2, &v[c], &bad);
        else
            rc = c == 0 ? sqlite3_bind_text(st, 2, "UPDATE", -1, SQLITE_STATIC)
                        : sqlite3_bind_null(st, c + 2);
    }
    if (rc == SQLITE_OK && sqlite3_step(st) != SQLITE_DONE)
        rc = sqlite3_errcode(w->dst);
    if (rc == SQLITE_OK)
        w->r->history++;
    return rc;
}

/* Keeps a history event of memory ID (V: event, old, new, at, detail),
 * its texts copied: the readers' buffers are reused. */
static int keep_event(writer *w, int64_t hid, int sql, const sval *id, const sval *v)
{
    if (w->nev == w->capev) {
        size_t cap = w->capev ? 2 * w->capev : 64;
        hevent *g = realloc(w->ev, cap * sizeof *g);
        if (!g)
            return SQLITE_NOMEM;
        w->ev = g;
        w->capev = cap;
    }
    size_t total = id->n + 1;
    for (int c = 0; c < 5; c++)
        total += (v[c].type == SQLITE_TEXT ? v[c].n : 0) + 1;
    hevent *e = &w->ev[w->nev];
    memset(e, 0, sizeof *e);
    if (!(e->hold = malloc(total)))
        return SQLITE_NOMEM;
    char *p = e->hold;
    e->id = *id;
    if (id->n)
        memcpy(p, id->s, id->n);
    e->id.s = p;
    p += id->n + 1;
    for (int c = 0; c < 5; c++) {
        e->v[c] = v[c];
        if (v[c].type != SQLITE_TEXT)
            continue;
        if (v[c].n)
            memcpy(p, v[c].s, v[c].n);
        e->v[c].s = p;
        p += v[c].n + 1;
    }
    e->hid = hid;
    e->sql = sql;
    w->nev++;
    return SQLITE_OK;
}

/* Numbers by value: a REAL column keeps a whole number as an integer on
 * its page, and SQLite reads it back as a float. */
static int sval_cmp(const sval *a, const sval *b)
{
    int an = a->type == SQLITE_INTEGER || a->type == SQLITE_FLOAT;
    int bn = b->type == SQLITE_INTEGER || b->type == SQLITE_FLOAT;
    if (an && bn)
        return num(a) < num(b) ? -1 : num(a) > num(b);
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->type != SQLITE_TEXT)
        return 0;
    size_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->s, b->s, n) : 0;
    return c ? c : a->n < b->n ? -1 : a->n > b->n;
}

/* By rowid, SQLite's copy first. */
static int by_hid(const void *a, const void *b)
{
    const hevent *x = a, *y = b;
    if (x->hid != y->hid)
        return x->hid < y->hid ? -1 : 1;
    return y->sql - x->sql;
}

/* By what the event says. */
static int event_cmp(const hevent *x, const hevent *y)
{
    int c = sval_cmp(&x->id, &y->id);
    for (int i = 0; i < 5 && !c; i++)
        c = sval_cmp(&x->v[i], &y->v[i]);
    return c;
}

/* By what the event says, SQLite's copy first. */
static int by_content(const void *a, const void *b)
{
    const hevent *x = a, *y = b;
    int c = event_cmp(x, y);
    return c ? c : y->sql - x->sql;
}

/* Writes the events kept, each once, in their original order, for the
 * memories this salvage added (those already stored keep their history). */
static int write_events(writer *w)
{
    if (!w->nev)
        return SQLITE_OK;
    /* A row read by SQLite and again from its page: once. */
    qsort(w->ev, w->nev, sizeof *w->ev, by_hid);
    for (size_t i = 1; i < w->nev; i++)
        if (w->ev[i].hid == w->ev[i - 1].hid)
            w->ev[i].drop = 1;
    /* A page's copy with a damaged rowid, of an event SQLite read: once. */
    qsort(w->ev, w->nev, sizeof *w->ev, by_content);
    for (size_t i = 1, group = 0; i < w->nev; i++) {
        if (event_cmp(&w->ev[group], &w->ev[i]))
            group = i;
        else if (w->ev[group].sql && !w->ev[i].sql)
            w->ev[i].drop = 1;
    }
    qsort(w->ev, w->nev, sizeof *w->ev, by_hid);
    sqlite3_stmt *fresh = NULL;
    int rc = sqlite3_prepare_v2(w->dst, "SELECT 1 FROM mem.memories WHERE id = ?1 AND mid >= ?2",
                                -1, &fresh, NULL);
    for (size_t i = 0; i < w->nev && rc == SQLITE_OK; i++) {
        const hevent *e = &w->ev[i];
        if (e->drop)
            continue;
        sqlite3_reset(fresh);
        rc = bind_text(w, fresh, 1, &e->id, &(int){0});
        sqlite3_bind_int64(fresh, 2, w->first_new);
        if (rc == SQLITE_OK && sqlite3_step(fresh) == SQLITE_ROW)
            rc = put_history(w, &e->id, e->v);
    }
    sqlite3_finalize(fresh);
    return rc;
}

static void col_val(sqlite3_stmt *q, int c, sval *v)
{
    v->type = sqlite3_column_type(q, c);
    v->i = sqlite3_column_int64(q, c);
    v->d = sqlite3_column_double(q, c);
    v->s = NULL;
    v->n = 0;
    if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB) {
        v->s = (const char *)sqlite3_column_text(q, c);
        v->n = (size_t)sqlite3_column_bytes(q, c);
        v->type = v->s ? SQLITE_TEXT : SQLITE_NULL;
    }
}

/* ----------------------------------------------------------------------
 * The SQL reader
 * -------------------------------------------------------------------- */

static int copy_history(sqlite3 *src, writer *w, const sval *id)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(src,
                           "SELECT hid, event, old_text, new_text, at, detail FROM memory_history "
                           "WHERE memory_id = ?1 ORDER BY hid",
                           -1, &q, NULL) != SQLITE_OK) {
        w->r->history_lost++;
        return SQLITE_OK;
    }
    sqlite3_bind_text(q, 1, id->s, (int)id->n, SQLITE_STATIC);
    int s, rc = SQLITE_OK;
    while (rc == SQLITE_OK && (s = sqlite3_step(q)) == SQLITE_ROW) {
        sval v[5];
        for (int c = 0; c < 5; c++)
            col_val(q, c + 1, &v[c]);
        rc = keep_event(w, sqlite3_column_int64(q, 0), 1, id, v);
    }
    if (rc == SQLITE_OK && s != SQLITE_DONE)
        w->r->history_lost++;
    sqlite3_finalize(q);
    return rc;
}

/* SQLITE_NOTFOUND when SQLite cannot read a memories table in SRC. */
static int sql_reader(sqlite3 *src, writer *w)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(src,
                           "SELECT mid, id, text, hash, category, importance, type, subject, "
                           "user_id, agent_id, run_id, metadata, triggers, created_at, "
                           "updated_at, expires_at, confirmations, last_confirmed_at, "
                           "deleted_at FROM memories WHERE mid > ?1 ORDER BY mid LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK)
        return SQLITE_NOTFOUND;
    w->r->found = 1;
    int64_t last = INT64_MIN;
    int rc = SQLITE_OK;
    for (;;) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, last);
        int s = sqlite3_step(q);
        if (s == SQLITE_DONE)
            break;
        if (s != SQLITE_ROW) {
            /* A damaged page: seek past it in growing steps. */
            w->sql_errors++;
            int64_t base = last == INT64_MIN ? 0 : last, next = INT64_MIN;
            for (int64_t step = 1; step < ((int64_t)1 << 48); step *= 2) {
                sqlite3_reset(q);
                sqlite3_bind_int64(q, 1, base + step);
                int s2 = sqlite3_step(q);
                if (s2 == SQLITE_ROW) {
                    next = base + step;
                    break;
                }
                if (s2 == SQLITE_DONE)
                    break; /* nothing after it */
            }
            if (next == INT64_MIN)
                break;
            last = next;
            continue;
        }
        int64_t mid_read = sqlite3_column_int64(q, 0);
        if (last != INT64_MIN && mid_read <= last) {
            /* A damaged tree can answer out of order (or in a loop): stop here
             * and let the page reader have the rest. */
            w->sql_errors++;
            break;
        }
        last = mid_read;
        sval v[NCOLS];
        for (int c = 0; c < NCOLS; c++)
            col_val(q, c + 1, &v[c]);
        int64_t mid;
        if ((rc = put_memory(w, v, 0, &mid)) != SQLITE_OK)
            break;
        if (mid && (rc = copy_history(src, w, &v[0])) != SQLITE_OK)
            break;
    }
    sqlite3_finalize(q);
    return rc;
}

/* ----------------------------------------------------------------------
 * The page reader
 * -------------------------------------------------------------------- */

/* What a page was found to be. */
enum { PAGE_UNKNOWN, PAGE_BTREE, PAGE_FREE, PAGE_OVERFLOW, PAGE_OTHER };

typedef struct pages {
    const uint8_t *p; /* the file, mapped */
    size_t size;
    uint32_t page, usable;
    uint32_t n;        /* pages in the file, a last partial one included */
    uint8_t *last;     /* that partial page padded with zeros, or NULL */
    uint8_t *kind;     /* PAGE_* of pages 1..n */
    uint32_t *visit;   /* the overflow chain that last read each page */
    uint32_t chains;   /* chains followed so far */
    int header;        /* page 1's header can be believed */
} pages;

typedef struct scan {
    pages f;
    writer *w;
    buf over;     /* a payload assembled from its overflow chain */
    long damaged; /* places that could not be read */
} scan;

static uint32_t be(const uint8_t *p, int n)
{
    uint32_t x = 0;
    for (int i = 0; i < n; i++)
        x = x << 8 | p[i];
    return x;
}

static const uint8_t *page_at(const pages *f, uint32_t pg)
{
    if (f->last && pg == f->n)
        return f->last;
    return f->p + (size_t)(pg - 1) * f->page;
}

static int btree_type(uint8_t t) { return t == 0x02 || t == 0x05 || t == 0x0a || t == 0x0d; }

/* An overflow page starts with the next page's number, whose first byte is
 * 0 in any file of fewer than 2^24 pages: one that starts like a b-tree
 * page is not one. */
static int looks_btree(const pages *f, uint32_t pg)
{
    return f->n < (1u << 24) && btree_type(page_at(f, pg)[pg == 1 ? 100 : 0]);
}

/* A b-tree page header that agrees with itself (H at HOFF of its page of
 * USABLE bytes): its cell pointers end before its cell content starts. */
static int header_fits(const uint8_t *h, uint32_t hoff, uint32_t usable)
{
    uint32_t hsize = h[0] == 0x02 || h[0] == 0x05 ? 12 : 8;
    uint32_t start = be(h + 5, 2) ? be(h + 5, 2) : 65536;
    return btree_type(h[0]) && hoff + hsize + 2 * be(h + 3, 2) <= start && start <= usable;
}

/* The pages of F that look like b-tree pages holding cells if pages are
 * SIZE bytes. */
static long score(const pages *f, uint32_t size)
{
    long n = 0;
    for (size_t off = size; off + size <= f->size; off += size)
        n += header_fits(f->p + off, 0, size) && be(f->p + off + 3, 2) > 0;
    return n;
}

/* Page size and usable bytes from page 1's header, unless another page
 * size makes more pages look like b-tree pages: a header whose size was
 * damaged (a flip turns 4096 into 8192 as easily as into garbage) is not
 * believed, nor are its other fields. */
static int geometry(pages *f)
{
    uint32_t size = be(f->p + 16, 2), best = 0;
    if (size == 1)
        size = 65536;
    if (memcmp(f->p, "SQLite format 3", 16) == 0 && size >= 512 && !(size & (size - 1)) &&
        f->p[20] <= size - 480)
        best = size;
    long top = best ? score(f, best) : 0;
    for (uint32_t guess = 512; guess <= 65536; guess *= 2) {
        long sc = guess == best ? top : score(f, guess);
        if (sc > top || (!best && sc == top && guess == 4096)) {
            top = sc;
            best = guess;
        }
    }
    if (!best || (best != size && top == 0))
        return 0;
    f->page = best;
    f->usable = best == size ? size - f->p[20] : best;
    f->header = best == size;
    return 1;
}

/* Marks the lock-byte page and, in a file with auto-vacuum, the pointer
 * map pages: neither holds rows. */
static void mark_other(pages *f)
{
    uint32_t lock = 0x40000000u / f->page + 1;
    if (lock <= f->n)
        f->kind[lock] = PAGE_OTHER;
    if (!f->header || be(f->p + 52, 4) == 0)
        return;
    uint32_t per = f->usable / 5 + 1;
    for (uint32_t pg = 2; pg <= f->n && pg >= 2; pg += per) {
        uint32_t m = pg == lock ? pg + 1 : pg;
        if (m <= f->n)
            f->kind[m] = PAGE_OTHER;
    }
}

/* Marks the freelist's pages when page 1 can be believed and the list
 * agrees with the count it gives; a list that does not is not trusted at
 * all (a damaged pointer must not hide live pages). SAID: the pages the
 * header says the file has, past its end when it was cut short. */
static void mark_free(pages *f, uint32_t said)
{
    if (!f->header)
        return;
    uint32_t trunk = be(f->p + 32, 4), want = be(f->p + 36, 4), got = 0;
    uint32_t room = f->usable / 4 - 2, limit = said > f->n ? said : f->n;
    int ok = 1, cut = 0;
    while (trunk && ok) {
        if (trunk > limit || (trunk <= f->n && f->kind[trunk] != PAGE_UNKNOWN)) {
            ok = 0; /* out of the file, or a loop */
            break;
        }
        if (trunk > f->n) {
            cut = 1; /* the rest of the list was cut off */
            break;
        }
        f->kind[trunk] = PAGE_FREE;
        got++;
        const uint8_t *t = page_at(f, trunk);
        uint32_t leaves = be(t + 4, 4);
        if (leaves > room) {
            ok = 0;
            break;
        }
        for (uint32_t i = 0; i < leaves && ok; i++) {
            uint32_t l = be(t + 8 + 4 * i, 4);
            if (l == 0 || l > limit || (l <= f->n && f->kind[l] != PAGE_UNKNOWN))
                ok = 0;
            else if (l <= f->n)
                f->kind[l] = PAGE_FREE;
            got++;
        }
        trunk = be(t, 4);
    }
    if (ok && !cut && got != want)
        ok = 0;
    if (ok)
        return;
    for (uint32_t pg = 1; pg <= f->n; pg++)
        if (f->kind[pg] == PAGE_FREE)
            f->kind[pg] = PAGE_UNKNOWN;
}

/* Follows an overflow chain from page NEXT for REST bytes, marking its
 * pages and appending their content to OUT when OUT is not NULL. Stops
 * where it breaks: a page out of the file, seen before in this chain, or
 * known to be something else. Returns the bytes it could not find. */
static uint64_t chain(pages *f, uint32_t next, uint64_t rest, buf *out)
{
    uint32_t room = f->usable - 4, me = ++f->chains;
    while (rest > 0) {
        if (next == 0 || next > f->n || f->visit[next] == me ||
            (f->kind[next] != PAGE_UNKNOWN && f->kind[next] != PAGE_OVERFLOW) ||
            (f->kind[next] == PAGE_UNKNOWN && looks_btree(f, next)))
            break;
        const uint8_t *o = page_at(f, next);
        f->kind[next] = PAGE_OVERFLOW;
        f->visit[next] = me;
        uint32_t take = rest < room ? (uint32_t)rest : room;
        if (out)
            buf_append(out, o + 4, take);
        rest -= take;
        next = be(o, 4);
    }
    return rest;
}

/* Bytes of a payload of N bytes kept on its b-tree page. */
static uint32_t local_size(const pages *f, uint64_t n, int table)
{
    uint32_t u = f->usable;
    uint32_t x = table ? u - 35 : (u - 12) * 64 / 255 - 23, m = (u - 12) * 32 / 255 - 23;
    if (n <= x)
        return (uint32_t)n;
    uint32_t k = m + (uint32_t)((n - m) % (u - 4));
    return k <= x ? k : m;
}

/* Bytes of a value of serial type T (10 and 11 are not used). */
static uint64_t type_len(uint64_t t)
{
    static const uint8_t ilen[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0};
    return t >= 12 ? (t - 12) / 2 : ilen[t];
}

/* The number of values of the record of LEN bytes whose first HAVE bytes
 * are at P, -1 when its header is not whole in them or does not parse;
 * *FITS: the lengths the header gives add up to LEN. */
static int columns(const uint8_t *p, uint64_t have, uint64_t len, int *fits)
{
    uint64_t hlen, t, sum;
    int k = varint_sqlite(p, p + have, &hlen), n = 0;
    *fits = 0;
    if (!k || hlen > have || hlen > len || hlen < (uint64_t)k)
        return -1;
    sum = hlen;
    for (const uint8_t *h = p + k; h < p + hlen; h += k, n++) {
        if (!(k = varint_sqlite(h, p + hlen, &t)))
            return -1;
        if (sum <= len)
            sum += t == 10 || t == 11 ? len + 1 : type_len(t);
    }
    *fits = sum == len;
    return n;
}

/* Decodes value X of serial type T whose L bytes are at B, of which only
 * AVAIL are there (the rest was lost with an overflow chain; B is not read
 * when none is). Returns 1
 * when some was lost: a value lost whole is NULL, text or a blob lost in
 * part keeps its first bytes. */
static int value(uint64_t t, const uint8_t *b, uint64_t l, uint64_t avail, sval *x)
{
    memset(x, 0, sizeof *x);
    x->type = SQLITE_NULL;
    if (l > avail) {
        if (t >= 12 && avail > 0) {
            x->type = t & 1 ? SQLITE_TEXT : SQLITE_BLOB;
            x->s = (const char *)b;
            x->n = (size_t)avail;
        }
        return 1;
    }
    if (t >= 1 && t <= 6) {
        uint64_t u = b[0] & 0x80 ? ~(uint64_t)0 : 0;
        for (uint64_t i = 0; i < l; i++)
            u = u << 8 | b[i];
        x->type = SQLITE_INTEGER;
        x->i = (int64_t)u;
    } else if (t == 7) {
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = u << 8 | b[i];
        memcpy(&x->d, &u, 8);
        x->type = SQLITE_FLOAT;
    } else if (t == 8 || t == 9) {
        x->type = SQLITE_INTEGER;
        x->i = (int64_t)(t - 8);
    } else if (t >= 12) {
        x->type = t & 1 ? SQLITE_TEXT : SQLITE_BLOB;
        x->s = (const char *)b;
        x->n = (size_t)l;
    }
    return 0;
}

/* Decodes a record of LEN bytes of which the first HAVE are at P (the
 * rest was lost with its overflow chain) into at most MAX values; returns
 * their count, -1 when malformed. Text and blobs point into the record;
 * values lost, whole or in part, set their bit in *LOST. */
static int record(const uint8_t *p, uint64_t have, uint64_t len, sval *v, int max,
                  uint32_t *lost)
{
    uint64_t hlen, at;
    int k = varint_sqlite(p, p + have, &hlen), n = 0;
    *lost = 0;
    if (!k || hlen > have || hlen < (uint64_t)k)
        return -1;
    at = hlen;
    for (const uint8_t *h = p + k, *hend = p + hlen; h < hend; n++) {
        uint64_t t;
        if (!(k = varint_sqlite(h, hend, &t)) || n == max || t == 10 || t == 11)
            return -1;
        h += k;
        uint64_t l = type_len(t);
        if (l > len - at)
            return -1;
        if (value(t, p + (at < have ? at : have), l, at < have ? have - at : 0, &v[n]))
            *lost |= 1u << n;
        at += l;
    }
    return at == len ? n : -1;
}

static int is_num(const sval *v) { return v->type == SQLITE_INTEGER || v->type == SQLITE_FLOAT; }
static int is_text(const sval *v) { return v->type == SQLITE_TEXT || v->type == SQLITE_BLOB; }

/* Whether V fits column kind K (as mem_kinds); a lost value fits any. */
static int fits(char k, const sval *v, int lost)
{
    if (lost)
        return 1;
    if (k == 'T')
        return is_text(v);
    if (k == 't')
        return is_text(v) || v->type == SQLITE_NULL;
    if (k == 'R' || k == 'I')
        return is_num(v);
    return is_num(v) || v->type == SQLITE_NULL;
}

/* A memories row: mid (NULL: the rowid), then the 18 columns, with a whole
 * id of at most 256 bytes. Damage can change a value's type, so up to 3
 * may be off (their columns get defaults); another table's row of as many
 * values would be off in more. */
static int memory_shaped(const sval *v, int n, uint32_t lost)
{
    if (n != NCOLS + 1 || (lost & 2) || !is_text(&v[1]) || v[1].n == 0 || v[1].n > 256)
        return 0;
    int off = v[0].type != SQLITE_NULL && !(lost & 1);
    for (int c = 1; c < NCOLS; c++)
        off += !fits(mem_kinds[c], &v[c + 1], (lost >> (c + 1)) & 1);
    return off <= 3;
}

/* Whether V looks like a value of memories' column C (after mid), as
 * mnemo writes them: what tells a mended reading from a wrong one. */
static int looks_like(int c, const sval *v)
{
    int text = v->type == SQLITE_TEXT && utf8_valid(v->s, v->n);
    double d = num(v);
    switch (c) {
    case 0:
        return text && v->n > 0 && v->n <= 256;
    case 1:
        return text;
    case 2:
        if (!text || v->n != HASH_HEX_LEN)
            return 0;
        for (size_t i = 0; i < v->n; i++)
            if (!strchr("0123456789abcdef", v->s[i]))
                return 0;
        return 1;
    case 4:
        return is_num(v) && d >= 0 && d <= 1;
    case 10:
    case 11:
        return text && v->n >= 2 && v->s[0] == (c == 10 ? '{' : '[') &&
               v->s[v->n - 1] == (c == 10 ? '}' : ']');
    case 12:
    case 13:
        return is_num(v) && d > 0 && d < 1e11;
    case 14:
    case 16:
    case 17:
        return v->type == SQLITE_NULL || (is_num(v) && d > 0 && d < 1e11);
    case 15:
        return v->type == SQLITE_INTEGER && v->i >= 0;
    default:
        return text && v->n <= 256;
    }
}

/* Reads the values of a memory record of LEN bytes (HAVE of them at P)
 * whose header, of HLEN bytes, gives types T and lengths L that do not add
 * up, as if the type of value J were the damaged one: the values before it
 * are where the header says counting from the start, those after it where
 * it says counting back from the end, and J, between them, is kept when
 * its column holds text. J past the last value: the types are right and
 * the length was damaged. Returns 0 when that cannot be. */
static int mend_at(const uint8_t *p, uint64_t have, uint64_t len, uint64_t hlen,
                   const uint64_t *t, const uint64_t *l, int j, sval *v, uint32_t *lost)
{
    uint64_t head = hlen, tail = len; /* the values before and after J take these */
    *lost = 0;
    for (int i = 0; i < j && i <= NCOLS; i++) {
        if (j <= NCOLS && l[i] > len - head)
            return 0;
        uint64_t size = l[i] < len - head ? l[i] : len - head;
        uint64_t avail = head >= have ? 0 : size < have - head ? size : have - head;
        if (value(t[i], p + (head < have ? head : have), l[i], avail, &v[i]))
            *lost |= 1u << i;
        head += size;
    }
    if (j > NCOLS)
        return 1;
    for (int i = NCOLS; i > j; i--) {
        if (l[i] > tail - head)
            return 0;
        tail -= l[i];
        if (value(t[i], p + (tail < have ? tail : have), l[i], tail < have ? have - tail : 0, &v[i]))
            *lost |= 1u << i;
    }
    char k = j ? mem_kinds[j - 1] : 'r';
    uint64_t textual = (tail - head) * 2 + 13;
    if (value(k == 'T' || k == 't' ? textual : 0, p + (head < have ? head : have), tail - head,
              head < have ? have - head : 0, &v[j]) ||
        (k != 'T' && k != 't'))
        *lost |= 1u << j;
    return 1;
}

/* Reads the header H (of HLEN bytes, types from byte K) as a memory's 19
 * types, and tries mend_at for each place of the damage; keeps the reading
 * in which the most values look like their column when it beats BEST. */
static int mend_header(const uint8_t *h, int k, uint64_t hlen, const uint8_t *p, uint64_t have,
                       uint64_t len, sval *v, uint32_t *lost, int best)
{
    uint64_t t[NCOLS + 1], l[NCOLS + 1];
    int n = 0, step;
    for (uint64_t at = (uint64_t)k; at < hlen; at += (uint64_t)step, n++) {
        if (n > NCOLS || !(step = varint_sqlite(h + at, h + hlen, &t[n])))
            return best;
        l[n] = t[n] == 10 || t[n] == 11 ? len + 1 : type_len(t[n]);
    }
    if (n != NCOLS + 1)
        return best;
    for (int j = 0; j <= NCOLS + 1; j++) {
        sval c[NCOLS + 1];
        uint32_t cl;
        if (!mend_at(p, have, len, hlen, t, l, j, c, &cl) || (cl & 2))
            continue; /* the id is needed whole */
        int score = 0;
        for (int i = 0; i < NCOLS; i++)
            score += !((cl >> (i + 1)) & 1) && looks_like(i, &c[i + 1]);
        if (score > best) {
            best = score;
            memcpy(v, c, sizeof c);
            *lost = cl;
        }
    }
    return best;
}

/* A record shaped like a memory's whose types do not add up to its length:
 * one byte of its header (or its length) was damaged. A changed type is
 * read around (mend_at); a changed top bit joins two types into one or
 * splits one in two, so the header is also read with each byte's top bit
 * turned back. The reading in which the most values look like their
 * column is kept when all but two do. Returns NCOLS + 1 or -1. */
static int mend(const uint8_t *p, uint64_t have, uint64_t len, sval *v, uint32_t *lost)
{
    uint64_t hlen;
    uint8_t h[256];
    int k = varint_sqlite(p, p + have, &hlen), best = -1;
    if (!k || hlen > have || hlen > len || hlen < (uint64_t)k || hlen > sizeof h)
        return -1;
    memcpy(h, p, (size_t)hlen);
    best = mend_header(h, k, hlen, p, have, len, v, lost, best);
    for (uint64_t i = (uint64_t)k; i < hlen; i++) {
        h[i] ^= 0x80;
        best = mend_header(h, k, hlen, p, have, len, v, lost, best);
        h[i] ^= 0x80;
    }
    return best >= NCOLS - 2 ? NCOLS + 1 : -1;
}

/* A memory_history row: hid (NULL), memory_id, event, old, new, at,
 * detail; the id and the event (an upper-case word) whole. */
static int history_shaped(const sval *v, int n, uint32_t lost)
{
    if (n != HCOLS + 1 || (lost & 6) || !is_text(&v[1]) || v[1].n == 0 || v[1].n > 256 ||
        !is_text(&v[2]) || v[2].n == 0 || v[2].n > 32)
        return 0;
    for (size_t i = 0; i < v[2].n; i++)
        if ((v[2].s[i] < 'A' || v[2].s[i] > 'Z') && v[2].s[i] != '_')
            return 0;
    int off = v[0].type != SQLITE_NULL && !(lost & 1);
    off += !fits('t', &v[3], lost & 8) + !fits('t', &v[4], lost & 16);
    off += !fits('R', &v[5], lost & 32) + !fits('t', &v[6], lost & 64);
    return off <= 1;
}

/* Reads the row in the table leaf cell at C (its page ends at END). *BAD:
 * the cell does not decode, or lost the end of its overflow chain; *SIZE:
 * the bytes it takes on its page. */
static int leaf_row(scan *s, const uint8_t *c, const uint8_t *end, int *bad, size_t *size)
{
    pages *f = &s->f;
    const uint8_t *cell = c;
    uint64_t n, id;
    int k;
    *bad = 1;
    if (!(k = varint_sqlite(c, end, &n)) || n > (uint64_t)f->n * f->page)
        return SQLITE_OK;
    c += k;
    if (!(k = varint_sqlite(c, end, &id)))
        return SQLITE_OK;
    c += k;
    uint32_t local = local_size(f, n, 1);
    *size = (size_t)(c - cell) + local + (local < n ? 4 : 0);
    if (*size < 4)
        *size = 4; /* SQLite never makes a cell smaller */
    if (local > (size_t)(end - c) || (local < n && (size_t)(end - c) - local < 4))
        return SQLITE_OK;
    const uint8_t *data = c;
    uint64_t have = n;
    uint32_t next = local < n ? be(c + local, 4) : 0;
    int whole, cols = columns(c, local, n, &whole);
    if ((cols >= 0 && (cols < NCOLS || cols > NCOLS + 2) && cols != HCOLS + 1) || n > (1u << 26)) {
        /* Another table's row (no memory is that large), or a damaged one:
         * its chain is marked, not read. */
        *bad = (local < n && chain(f, next, n - local, NULL) > 0) || !whole;
        return SQLITE_OK;
    }
    if (local < n) {
        buf_reset(&s->over);
        buf_append(&s->over, c, local);
        have = n - chain(f, next, n - local, &s->over);
        if (buf_err(&s->over))
            return SQLITE_NOMEM;
        data = (const uint8_t *)s->over.data;
    }
    sval v[NCOLS + 1];
    uint32_t lost;
    int nv = record(data, have, n, v, NCOLS + 1, &lost), mended = 0;
    if (nv < 0 && cols >= NCOLS && cols <= NCOLS + 2) /* a damaged type: mended, maybe whole */
        mended = (nv = mend(data, have, n, v, &lost)) > 0;
    if (nv < 0)
        return SQLITE_OK;
    *bad = have < n || !whole;
    if (memory_shaped(v, nv, lost)) {
        s->w->r->found = 1;
        for (int i = 1; i < nv; i++)
            if (v[i].type == SQLITE_BLOB)
                v[i].type = SQLITE_TEXT; /* a damaged type: read as text, repaired */
        if (lost & 4)
            v[3].type = SQLITE_NULL; /* the text was cut: its hash is derived again */
        int64_t mid;
        return put_memory(s->w, v + 1, lost || mended, &mid);
    }
    if (history_shaped(v, nv, lost)) {
        for (int i = 1; i < nv; i++)
            if (v[i].type == SQLITE_BLOB)
                v[i].type = SQLITE_TEXT;
        return keep_event(s->w, (int64_t)id, 0, &v[1], &v[2]);
    }
    return SQLITE_OK;
}

/* Bytes in the free blocks of the page at BASE whose header is at H and
 * cell content starts at START; -1 when the list of blocks is broken. */
static long free_bytes(const uint8_t *base, const uint8_t *h, uint32_t start, uint32_t usable)
{
    long sum = 0;
    for (uint32_t fb = be(h + 1, 2), prev = 0; fb; prev = fb, fb = be(base + fb, 2)) {
        uint32_t size;
        if (fb < start || fb <= prev || fb + 4 > usable || (size = be(base + fb + 2, 2)) < 4 ||
            fb + size > usable)
            return -1;
        sum += size;
    }
    return sum;
}

/* Reads b-tree page PG: the rows of a table leaf; the overflow chains of
 * every cell are marked (they are not damaged places). A header that does
 * not fit is a damaged place whatever the page's kind (it may be a leaf
 * with a damaged kind); otherwise only rows count: index and interior
 * cells hold none. */
static int read_btree(scan *s, uint32_t pg)
{
    pages *f = &s->f;
    const uint8_t *base = page_at(f, pg), *end = base + f->usable;
    uint32_t hoff = pg == 1 ? 100 : 0;
    const uint8_t *h = base + hoff;
    uint8_t t = h[0];
    if (t == 0x05) { /* interior table cells hold a rowid and a child */
        s->damaged += !header_fits(h, hoff, f->usable);
        return SQLITE_OK;
    }
    uint32_t hsize = t == 0x02 ? 12 : 8, ncell = be(h + 3, 2);
    int quiet = 0, damaged = 0;
    if (!header_fits(h, hoff, f->usable)) {
        /* A damaged header: one place, then whatever cells can be read. */
        damaged = quiet = 1;
        uint32_t fit = (f->usable - hoff - hsize) / 2;
        if (ncell > fit)
            ncell = fit;
    }
    uint32_t first = hoff + hsize + 2 * ncell;
    size_t used = 0;
    for (uint32_t i = 0; i < ncell; i++) {
        uint32_t off = be(h + hsize + 2 * i, 2);
        int bad = 1, rc = SQLITE_OK;
        size_t size = 0;
        if (off >= first && off < f->usable) {
            const uint8_t *c = base + off + (t == 0x02 ? 4 : 0);
            uint64_t n;
            int k;
            if (t == 0x0d) {
                rc = leaf_row(s, c, end, &bad, &size);
            } else if (c < end && (k = varint_sqlite(c, end, &n)) != 0) {
                uint32_t local = local_size(f, n, 0);
                if (local < n && local + 4 <= (size_t)(end - c - k))
                    chain(f, be(c + k + local, 4), n - local, NULL);
            }
        }
        if (rc != SQLITE_OK)
            return rc;
        used += size;
        if (bad && !quiet)
            damaged++;
    }
    if (t != 0x0d) {
        s->damaged += quiet;
        return SQLITE_OK;
    }
    if (!damaged) {
        /* Cells, free blocks and fragments fill the content area exactly
         * (what integrity_check checks); bytes left over are cells the
         * page no longer lists: a damaged cell count or pointer. */
        uint32_t start = be(h + 5, 2) ? be(h + 5, 2) : 65536;
        long free = free_bytes(base, h, start, f->usable);
        damaged = free < 0 || used + (size_t)free + h[7] != f->usable - start;
    }
    s->damaged += damaged;
    return SQLITE_OK;
}

/* Maps PATH and reads every page; *RAN: the file could be read as pages
 * at all (then S->damaged counts what could not). */
static int page_reader(const char *path, writer *w, long *damaged, int *ran)
{
    *damaged = 0;
    *ran = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SQLITE_CANTOPEN;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 512) {
        close(fd);
        return SQLITE_NOTFOUND;
    }
    scan s;
    memset(&s, 0, sizeof s);
    s.w = w;
    pages *f = &s.f;
    f->size = (size_t)st.st_size;
    void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return SQLITE_IOERR;
    f->p = map;
    buf_init(&s.over, 1u << 30);
    int rc = SQLITE_NOTFOUND;
    if (!geometry(f))
        goto done;
    size_t whole = f->size / f->page, rest = f->size % f->page;
    if (whole + (rest != 0) > UINT32_MAX - 1)
        goto done;
    f->n = (uint32_t)(whole + (rest != 0));
    rc = SQLITE_NOMEM;
    if (rest) {
        /* A file cut inside a page: what is left of it, as SQLite would
         * read it (zeros past the end). */
        if (!(f->last = calloc(1, f->page)))
            goto done;
        memcpy(f->last, f->p + whole * f->page, rest);
        s.damaged++;
    }
    f->kind = calloc((size_t)f->n + 1, 1);
    f->visit = calloc((size_t)f->n + 1, sizeof *f->visit);
    if (!f->kind || !f->visit)
        goto done;
    /* The pages the header says the file has (believed when written by
     * the same change as the header): more than there are, it was cut. */
    uint32_t said = f->header && !memcmp(f->p + 24, f->p + 92, 4) ? be(f->p + 28, 4) : 0;
    if (said > f->n)
        s.damaged += said - f->n;
    mark_other(f);
    mark_free(f, said);
    *ran = 1;
    rc = SQLITE_OK;
    for (uint32_t pg = 1; pg <= f->n && rc == SQLITE_OK; pg++) {
        if (f->kind[pg] != PAGE_UNKNOWN || !btree_type(page_at(f, pg)[pg == 1 ? 100 : 0]))
            continue; /* free, taken by a chain, or not a b-tree page (decided below) */
        f->kind[pg] = PAGE_BTREE;
        rc = read_btree(&s, pg);
    }
    /* What no b-tree page, freelist or overflow chain accounts for was
     * overwritten, zeroed or cut loose: it may have held rows. */
    for (uint32_t pg = 1; pg <= f->n && rc == SQLITE_OK; pg++)
        s.damaged += f->kind[pg] == PAGE_UNKNOWN;
    *damaged = s.damaged;
done:
    buf_cleanup(&s.over);
    free(f->last);
    free(f->kind);
    free(f->visit);
    munmap(map, f->size);
    return rc;
}

/* ----------------------------------------------------------------------
 * Both
 * -------------------------------------------------------------------- */

/* Opens PATH for the SQL reader without writing beside it: immutable (no
 * lock, no -shm or -wal made), unless a -wal there holds writes to read. */
static int open_source(const char *path, sqlite3 **src)
{
    buf uri;
    buf_init(&uri, 0);
    buf_printf(&uri, "%s-wal", path);
    int wal = !buf_err(&uri) && access(uri.data, F_OK) == 0;
    buf_reset(&uri);
    buf_puts(&uri, "file:");
    for (const char *c = path; *c; c++) {
        if (*c == '%' || *c == '?' || *c == '#' || (unsigned char)*c < 0x20)
            buf_printf(&uri, "%%%02X", (unsigned char)*c);
        else
            buf_putc(&uri, *c);
    }
    buf_puts(&uri, wal ? "?mode=ro" : "?mode=ro&immutable=1");
    int rc = buf_err(&uri) ? SQLITE_NOMEM
                           : sqlite3_open_v2(uri.data, src,
                                             SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX |
                                                 SQLITE_OPEN_URI,
                                             NULL);
    buf_cleanup(&uri);
    return rc;
}

int salvage_memories(const char *path, sqlite3 *dst, salvage_report *r, buf *err)
{
    memset(r, 0, sizeof *r);
    writer w;
    memset(&w, 0, sizeof w);
    w.dst = dst;
    w.r = r;
    buf_init(&w.scratch, 1u << 30);
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(dst, "SELECT coalesce(max(mid), 0) + 1 FROM mem.memories", -1, &q,
                                NULL);
    if (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        w.first_new = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(dst, insert_sql, -1, &w.ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(dst, "INSERT INTO mem.memories_fts(rowid, text) VALUES(?1, ?2)",
                                -1, &w.fts, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(dst,
                                "INSERT INTO mem.memory_history(memory_id, event, old_text, "
                                "new_text, at, detail) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                                -1, &w.hist, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(dst, "SELECT mid FROM mem.memories WHERE id = ?1", -1, &w.mid_of,
                                NULL);
    if (rc != SQLITE_OK) {
        buf_printf(err, "the memory store: %s", sqlite3_errmsg(dst));
        goto done;
    }
    sqlite3 *src = NULL;
    int s = open_source(path, &src);
    if (s == SQLITE_OK)
        sqlite3_exec(src, "PRAGMA writable_schema = ON", NULL, NULL, NULL);
    int sq = s == SQLITE_OK ? sql_reader(src, &w) : SQLITE_NOTFOUND;
    sqlite3_close_v2(src);
    if (sq != SQLITE_OK && sq != SQLITE_NOTFOUND) {
        rc = sq;
        buf_printf(err, "writing the memory store: %s", sqlite3_errmsg(dst));
        goto done;
    }
    /* Always: SQLite can miss rows without an error (a damaged rowid sends
     * its seek past them). */
    long damaged;
    rc = page_reader(path, &w, &damaged, &r->page_scan);
    if (rc == SQLITE_NOTFOUND) {
        rc = SQLITE_OK;
    } else if (rc != SQLITE_OK) {
        buf_printf(err, "reading %s: %s", path, sqlite3_errstr(rc));
        goto done;
    }
    /* The page reader saw every row that was not lost; SQLite's count is
     * the only one there is when the file is not pages at all. */
    r->unreadable_reads = r->page_scan ? damaged : w.sql_errors;
    if (r->page_scan && damaged == 0)
        r->history_lost = 0; /* every history row was read from its page */
    if ((rc = write_events(&w)) != SQLITE_OK) {
        buf_printf(err, "writing the memory store: %s", sqlite3_errmsg(dst));
        goto done;
    }
    if (!r->found) {
        rc = SQLITE_NOTFOUND;
        buf_printf(err, "%s holds no memories mnemo can read", path);
    }
done:
    sqlite3_finalize(w.ins);
    sqlite3_finalize(w.fts);
    sqlite3_finalize(w.hist);
    sqlite3_finalize(w.mid_of);
    buf_cleanup(&w.scratch);
    for (size_t i = 0; i < w.nev; i++)
        free(w.ev[i].hold);
    free(w.ev);
    free(w.seen.slot);
    return rc;
}
