/*
 * recover.c - salvaging memories from a damaged file (see recover.h).
 *
 * Two readers, one writer. The SQL reader opens the file read-only and
 * reads one memory at a time in rowid order; when a read fails (a damaged
 * page) it seeks past it in growing steps, so a damaged page costs the rows
 * on it, not the rest. When SQLite cannot read the schema at all, or
 * skipped damaged places, the page reader walks the file's pages itself
 * (the SQLite file format: table b-tree leaf pages, cells, overflow chains,
 * records) and keeps every record shaped like a memory or a history event.
 * Every value is untrusted: text that is not UTF-8 is repaired (U+FFFD),
 * a missing required value gets its column's default, a record that does
 * not fit the shape is not used.
 */
#include "store/sqlite/recover.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/hash.h"
#include "util/utf8.h"

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

typedef struct writer {
    sqlite3 *dst;
    sqlite3_stmt *ins, *fts, *hist, *mid_of;
    int64_t first_new; /* mids from here on were written by this salvage */
    buf scratch;
    salvage_report *r;
} writer;

static double num(const sval *v)
{
    return v->type == SQLITE_INTEGER ? (double)v->i : v->type == SQLITE_FLOAT ? v->d : 0;
}

/* Binds text V to parameter P of ST, repaired to UTF-8 without NULs. */
static int bind_text(writer *w, sqlite3_stmt *st, int p, const sval *v, int *repaired)
{
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

/* Writes one memory (V: its 18 columns). Returns its new mid in *MID, 0
 * when it was already stored. */
static int put_memory(writer *w, const sval *v, int64_t *mid)
{
    *mid = 0;
    if (v[0].type != SQLITE_TEXT || v[0].n == 0)
        return SQLITE_OK; /* no id: nothing to tell it by */
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
            rc = sqlite3_bind_int64(st, c + 1, x->type == SQLITE_INTEGER ? x->i : (int64_t)num(x));
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
        /* Stored before, or by this salvage from the other reader. */
        sqlite3_reset(w->mid_of);
        if (bind_text(w, w->mid_of, 1, &v[0], &(int){0}) == SQLITE_OK &&
            sqlite3_step(w->mid_of) == SQLITE_ROW &&
            sqlite3_column_int64(w->mid_of, 0) < w->first_new)
            w->r->present++;
        return SQLITE_OK;
    }
    *mid = sqlite3_last_insert_rowid(w->dst);
    w->r->recovered++;
    if (bad)
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
                           "SELECT event, old_text, new_text, at, detail FROM memory_history "
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
            col_val(q, c, &v[c]);
        rc = put_history(w, id, v);
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
            w->r->unreadable_reads++;
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
            w->r->unreadable_reads++;
            break;
        }
        last = mid_read;
        sval v[NCOLS];
        for (int c = 0; c < NCOLS; c++)
            col_val(q, c + 1, &v[c]);
        int64_t mid;
        if ((rc = put_memory(w, v, &mid)) != SQLITE_OK)
            break;
        if (mid && v[0].type == SQLITE_TEXT && (rc = copy_history(src, w, &v[0])) != SQLITE_OK)
            break;
    }
    sqlite3_finalize(q);
    return rc;
}

/* ----------------------------------------------------------------------
 * The page reader
 * -------------------------------------------------------------------- */

typedef struct file {
    const uint8_t *p;
    size_t size;
    uint32_t page, usable;
} file;

static int varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 9; i++) {
        if (p + i >= end)
            return 0;
        if (i == 8) {
            *v = (x << 8) | p[i];
            return 9;
        }
        x = (x << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

static uint32_t be(const uint8_t *p, int n)
{
    uint32_t x = 0;
    for (int i = 0; i < n; i++)
        x = x << 8 | p[i];
    return x;
}

/* The payload of the cell at C (page bounds END): local part and overflow
 * chain, assembled in OUT when it spills. 0 when malformed. */
static int payload(const file *f, const uint8_t *c, const uint8_t *end, buf *out,
                   const uint8_t **data, uint64_t *len, int64_t *rowid)
{
    uint64_t n, id;
    int k = varint(c, end, &n);
    if (!k || n > f->size) /* no payload is larger than the file */
        return 0;
    c += k;
    if (!(k = varint(c, end, &id)))
        return 0;
    c += k;
    *rowid = (int64_t)id;
    uint32_t u = f->usable, x = u - 35;
    if (n <= x) {
        if (c + n > end)
            return 0;
        *data = c;
        *len = n;
        return 1;
    }
    uint32_t mn = ((u - 12) * 32 / 255) - 23, kk = mn + (uint32_t)((n - mn) % (u - 4));
    uint32_t local = kk <= x ? kk : mn;
    if (c + local + 4 > end)
        return 0;
    buf_reset(out);
    buf_append(out, (const char *)c, local);
    uint32_t next = be(c + local, 4), hops = 0;
    while (out->len < n && next && hops++ < (1u << 20)) {
        size_t off = (size_t)(next - 1) * f->page;
        if (next == 0 || off + f->page > f->size)
            return 0;
        const uint8_t *o = f->p + off;
        size_t take = n - out->len < u - 4 ? n - out->len : u - 4;
        buf_append(out, (const char *)o + 4, take);
        next = be(o, 4);
    }
    if (buf_err(out) || out->len != n)
        return 0;
    *data = (const uint8_t *)out->data;
    *len = n;
    return 1;
}

/* Decodes a record into at most MAX values; returns their count, -1 when
 * malformed. Text and blobs point into the record. */
static int record(const uint8_t *p, uint64_t len, sval *v, int max)
{
    const uint8_t *end = p + len;
    uint64_t hlen;
    int k = varint(p, end, &hlen);
    if (!k || hlen > len || hlen < (uint64_t)k)
        return -1;
    const uint8_t *h = p + k, *hend = p + hlen, *b = hend;
    int n = 0;
    while (h < hend) {
        uint64_t t;
        if (!(k = varint(h, hend, &t)))
            return -1;
        h += k;
        if (n == max)
            return -1;
        sval *x = &v[n++];
        memset(x, 0, sizeof *x);
        static const int ilen[] = {0, 1, 2, 3, 4, 6, 8};
        if (t == 0) {
            x->type = SQLITE_NULL;
        } else if (t <= 6) {
            int l = ilen[t];
            if (b + l > end)
                return -1;
            uint64_t u = b[0] & 0x80 ? ~(uint64_t)0 : 0;
            for (int i = 0; i < l; i++)
                u = u << 8 | b[i];
            x->type = SQLITE_INTEGER;
            x->i = (int64_t)u;
            b += l;
        } else if (t == 7) {
            if (b + 8 > end)
                return -1;
            uint64_t u = 0;
            for (int i = 0; i < 8; i++)
                u = u << 8 | b[i];
            memcpy(&x->d, &u, 8);
            x->type = SQLITE_FLOAT;
            b += 8;
        } else if (t == 8 || t == 9) {
            x->type = SQLITE_INTEGER;
            x->i = (int64_t)(t - 8);
        } else if (t >= 12) {
            uint64_t l = (t - 12) / 2;
            if (l > (uint64_t)(end - b))
                return -1;
            x->type = t & 1 ? SQLITE_TEXT : SQLITE_BLOB;
            x->s = (const char *)b;
            x->n = (size_t)l;
            b += l;
        } else {
            return -1;
        }
    }
    return b == end ? n : -1;
}

static int is_num(const sval *v) { return v->type == SQLITE_INTEGER || v->type == SQLITE_FLOAT; }
static int is_text(const sval *v) { return v->type == SQLITE_TEXT; }
static int text_or_null(const sval *v) { return v->type == SQLITE_TEXT || v->type == SQLITE_NULL; }
static int num_or_null(const sval *v) { return is_num(v) || v->type == SQLITE_NULL; }

/* A memories row: mid (NULL: the rowid), then the 18 columns. */
static int memory_shaped(const sval *v, int n)
{
    if (n != NCOLS + 1 || v[0].type != SQLITE_NULL || !is_text(&v[1]) || v[1].n == 0 ||
        v[1].n > 256 || !is_text(&v[2]))
        return 0;
    for (int c = 0; c < NCOLS; c++) {
        char k = mem_kinds[c];
        const sval *x = &v[c + 1];
        if ((k == 'T' && !is_text(x)) || (k == 't' && !text_or_null(x)) ||
            ((k == 'R' || k == 'I') && !is_num(x)) || ((k == 'r') && !num_or_null(x)))
            return 0;
    }
    return 1;
}

/* A memory_history row: hid (NULL), memory_id, event, old, new, at, detail. */
static int history_shaped(const sval *v, int n)
{
    if (n != HCOLS + 1 || v[0].type != SQLITE_NULL || !is_text(&v[1]) || v[1].n == 0 ||
        v[1].n > 256 || !is_text(&v[2]) || v[2].n == 0 || v[2].n > 32 || !text_or_null(&v[3]) ||
        !text_or_null(&v[4]) || !is_num(&v[5]) || !text_or_null(&v[6]))
        return 0;
    for (size_t i = 0; i < v[2].n; i++)
        if ((v[2].s[i] < 'A' || v[2].s[i] > 'Z') && v[2].s[i] != '_')
            return 0;
    return 1;
}

typedef struct hrow {
    int64_t hid;
    char *id;
    size_t idn;
    sval v[5];
    char *hold; /* owns the texts of v */
} hrow;

static int by_hid(const void *a, const void *b)
{
    const hrow *x = a, *y = b;
    return x->hid < y->hid ? -1 : x->hid > y->hid;
}

static int page_reader(const char *path, writer *w)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SQLITE_CANTOPEN;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 512) {
        close(fd);
        return SQLITE_NOTFOUND;
    }
    file f = {NULL, (size_t)st.st_size, 0, 0};
    void *map = mmap(NULL, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return SQLITE_IOERR;
    f.p = map;
    int rc = SQLITE_NOTFOUND;
    if (memcmp(f.p, "SQLite format 3", 16) != 0)
        goto out;
    f.page = be(f.p + 16, 2);
    if (f.page == 1)
        f.page = 65536;
    if (f.page < 512 || (f.page & (f.page - 1)) || f.p[20] >= f.page - 480)
        goto out;
    f.usable = f.page - f.p[20];
    rc = SQLITE_OK;
    int64_t first_mine = INT64_MAX;
    sqlite3_stmt *mx = NULL;
    if (sqlite3_prepare_v2(w->dst, "SELECT coalesce(max(mid), 0) + 1 FROM mem.memories", -1, &mx,
                           NULL) == SQLITE_OK &&
        sqlite3_step(mx) == SQLITE_ROW)
        first_mine = sqlite3_column_int64(mx, 0);
    sqlite3_finalize(mx);
    buf over;
    buf_init(&over, 1u << 30);
    hrow *hist = NULL;
    size_t nh = 0, caph = 0;
    size_t pages = f.size / f.page;
    for (size_t pg = 1; pg <= pages && rc == SQLITE_OK; pg++) {
        const uint8_t *base = f.p + (pg - 1) * f.page, *hdr = base + (pg == 1 ? 100 : 0);
        const uint8_t *end = base + f.usable;
        if (hdr[0] != 0x0d)
            continue; /* only table leaves hold rows */
        uint32_t ncells = be(hdr + 3, 2);
        if (8 + 2 * (size_t)ncells > (size_t)(end - hdr))
            continue;
        for (uint32_t i = 0; i < ncells && rc == SQLITE_OK; i++) {
            uint32_t off = be(hdr + 8 + 2 * i, 2);
            if (off < 8 || off >= f.usable)
                continue;
            const uint8_t *data;
            uint64_t len;
            int64_t rowid;
            if (!payload(&f, base + off, end, &over, &data, &len, &rowid))
                continue;
            sval v[NCOLS + 1];
            int n = record(data, len, v, NCOLS + 1);
            if (memory_shaped(v, n)) {
                w->r->found = 1;
                int64_t mid;
                rc = put_memory(w, v + 1, &mid);
            } else if (history_shaped(v, n)) {
                /* Kept until every memory is in: history follows the memories
                 * written by this salvage. Texts are copied (OVER is reused). */
                if (nh == caph) {
                    caph = caph ? 2 * caph : 64;
                    hrow *g = realloc(hist, caph * sizeof *g);
                    if (!g) {
                        rc = SQLITE_NOMEM;
                        break;
                    }
                    hist = g;
                }
                hrow *h = &hist[nh];
                size_t total = v[1].n + 1;
                for (int c = 2; c <= 6; c++)
                    total += v[c].n + 1;
                if (!(h->hold = malloc(total))) {
                    rc = SQLITE_NOMEM;
                    break;
                }
                char *p = h->hold;
                memcpy(p, v[1].s, v[1].n);
                h->id = p;
                h->idn = v[1].n;
                p += v[1].n + 1;
                for (int c = 0; c < 5; c++) {
                    h->v[c] = v[c + 2];
                    if (v[c + 2].type == SQLITE_TEXT) {
                        memcpy(p, v[c + 2].s, v[c + 2].n);
                        h->v[c].s = p;
                        p += v[c + 2].n + 1;
                    }
                }
                h->hid = rowid;
                nh++;
            }
        }
    }
    if (nh)
        qsort(hist, nh, sizeof *hist, by_hid);
    /* History goes with the memories this reader wrote (the SQL reader
     * copied the history of its own). */
    sqlite3_stmt *fresh = NULL;
    if (rc == SQLITE_OK &&
        sqlite3_prepare_v2(w->dst, "SELECT 1 FROM mem.memories WHERE id = ?1 AND mid >= ?2", -1,
                           &fresh, NULL) != SQLITE_OK)
        rc = sqlite3_errcode(w->dst);
    for (size_t i = 0; i < nh; i++) {
        if (rc == SQLITE_OK) {
            sval id = {SQLITE_TEXT, 0, 0, hist[i].id, hist[i].idn};
            sqlite3_reset(fresh);
            sqlite3_bind_text(fresh, 1, id.s, (int)id.n, SQLITE_STATIC);
            sqlite3_bind_int64(fresh, 2, first_mine);
            if (sqlite3_step(fresh) == SQLITE_ROW)
                rc = put_history(w, &id, hist[i].v);
        }
        free(hist[i].hold);
    }
    sqlite3_finalize(fresh);
    free(hist);
    buf_cleanup(&over);
out:
    munmap(map, f.size);
    return rc;
}

/* ----------------------------------------------------------------------
 * Both
 * -------------------------------------------------------------------- */

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
    int s = sqlite3_open_v2(path, &src, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (s == SQLITE_OK)
        sqlite3_exec(src, "PRAGMA writable_schema = ON", NULL, NULL, NULL);
    int sq = s == SQLITE_OK ? sql_reader(src, &w) : SQLITE_NOTFOUND;
    sqlite3_close_v2(src);
    if (sq != SQLITE_OK && sq != SQLITE_NOTFOUND) {
        rc = sq;
        buf_printf(err, "writing the memory store: %s", sqlite3_errmsg(dst));
        goto done;
    }
    /* SQLite could not read it all: read the pages themselves. */
    if (sq == SQLITE_NOTFOUND || r->unreadable_reads) {
        r->page_scan = 1;
        rc = page_reader(path, &w);
        if (rc == SQLITE_NOTFOUND)
            rc = SQLITE_OK;
        else if (rc != SQLITE_OK)
            buf_printf(err, "reading %s: %s", path, sqlite3_errstr(rc));
    }
    if (rc == SQLITE_OK && !r->found) {
        rc = SQLITE_NOTFOUND;
        buf_printf(err, "%s holds no memories mnemo can read", path);
    }
done:
    sqlite3_finalize(w.ins);
    sqlite3_finalize(w.fts);
    sqlite3_finalize(w.hist);
    sqlite3_finalize(w.mid_of);
    buf_cleanup(&w.scratch);
    return rc;
}
