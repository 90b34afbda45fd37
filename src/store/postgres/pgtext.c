/*
 * pgtext.c - PostgreSQL's text forms (see pgint.h).
 */
#include "store/postgres/pgint.h"

#include <stdlib.h>
#include <string.h>

void pgtext_lexeme(buf *b, const char *s, size_t n)
{
    buf_putc(b, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'' || s[i] == '\\')
            buf_putc(b, s[i]);
        buf_putc(b, s[i]);
    }
    buf_putc(b, '\'');
}

void pgtext_vector_literal(buf *b, const float *v, int dims)
{
    buf_putc(b, '[');
    for (int i = 0; i < dims; i++)
        buf_printf(b, i ? ",%.9g" : "%.9g", (double)v[i]);
    buf_putc(b, ']');
}

/* ----------------------------------------------------------------------
 * Binary arrays: int32 ndim, int32 has-nulls, oid element type, then per
 * dimension int32 size and int32 lower bound; then each element as an
 * int32 byte count and its bytes (all integers big-endian).
 * -------------------------------------------------------------------- */

static void put64(buf *b, uint64_t v)
{
    pgtext_put32(b, (uint32_t)(v >> 32));
    pgtext_put32(b, (uint32_t)v);
}

void pgtext_barr_init(pgtext_barr *a)
{
    memset(a, 0, sizeof *a);
    buf_init(&a->b, 0);
}

void pgtext_barr_cleanup(pgtext_barr *a) { buf_cleanup(&a->b); }

void pgtext_barr_start(pgtext_barr *a, uint32_t elem_oid)
{
    buf_reset(&a->b);
    a->n = 0;
    pgtext_put32(&a->b, 1);
    pgtext_put32(&a->b, 0);
    pgtext_put32(&a->b, elem_oid);
    pgtext_put32(&a->b, 0); /* the size, at 12 (pgtext_barr_end) */
    pgtext_put32(&a->b, 1);
}

void pgtext_barr_int4(pgtext_barr *a, int32_t v)
{
    pgtext_put32(&a->b, 4);
    pgtext_put32(&a->b, (uint32_t)v);
    a->n++;
}

void pgtext_barr_int8(pgtext_barr *a, int64_t v)
{
    pgtext_put32(&a->b, 8);
    put64(&a->b, (uint64_t)v);
    a->n++;
}

void pgtext_barr_float8(pgtext_barr *a, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    pgtext_put32(&a->b, 8);
    put64(&a->b, u);
    a->n++;
}

void pgtext_barr_bytes(pgtext_barr *a, const void *p, size_t n)
{
    pgtext_put32(&a->b, (uint32_t)n);
    buf_append(&a->b, p, n);
    a->n++;
}

void pgtext_barr_open(pgtext_barr *a)
{
    a->open = a->b.len;
    pgtext_put32(&a->b, 0);
}

static void patch32(buf *b, size_t at, uint32_t v)
{
    if (b->err || at + 4 > b->len)
        return;
    unsigned char *x = (unsigned char *)b->data + at;
    x[0] = (unsigned char)(v >> 24);
    x[1] = (unsigned char)(v >> 16);
    x[2] = (unsigned char)(v >> 8);
    x[3] = (unsigned char)v;
}

void pgtext_barr_close(pgtext_barr *a)
{
    patch32(&a->b, a->open, (uint32_t)(a->b.len - a->open - 4));
    a->n++;
}

void pgtext_barr_end(pgtext_barr *a)
{
    if (a->n == 0) {
        /* An empty array has no dimensions. */
        patch32(&a->b, 0, 0);
        if (!a->b.err && a->b.len >= 12)
            a->b.len = 12;
        return;
    }
    patch32(&a->b, 12, a->n);
}

/* Each byte's value as a hex digit, 16 for a byte that is not one. */
static const unsigned char hexval[256] = {
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 16, 16, 16, 16, 16, 16,
    16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
};

size_t pgtext_float_array(const char *s, double *out, size_t max)
{
    size_t n = 0;
    if (*s == '{')
        s++;
    while (*s && *s != '}' && n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s)
            break;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

long pgtext_unhex(const char *s, void *out, size_t cap)
{
    if (s[0] == '\\' && s[1] == 'x')
        s += 2;
    size_t len = strlen(s), n = len / 2;
    if (len % 2 || n > cap)
        return -1;
    const unsigned char *p = (const unsigned char *)s;
    unsigned char *o = out;
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned hi = hexval[p[2 * i]], lo = hexval[p[2 * i + 1]];
        bad |= hi | lo;
        o[i] = (unsigned char)(hi << 4 | lo);
    }
    return bad & 16 ? -1 : (long)n;
}
