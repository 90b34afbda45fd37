/*
 * pgtext.h - PostgreSQL's text forms that the backend writes: tsvector and
 * tsquery lexemes, and pgvector literals. One place for each, so that the
 * note index, the memory store and the sourceTable reader agree. And the
 * binary forms of one-dimensional arrays (array_recv's input), which the
 * server takes without parsing text: a sync's large batches go that way.
 */
#ifndef MNEMO_PGTEXT_H
#define MNEMO_PGTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/buf.h"

/* Appends S (N bytes) as a quoted lexeme of tsvector or tsquery input. */
void pgtext_lexeme(buf *b, const char *s, size_t n);

/* Appends V (DIMS floats) as a pgvector literal, [x,y,...], each with the
 * nine significant digits that bring a float back exactly. */
void pgtext_vector_literal(buf *b, const float *v, int dims);

/* Decodes the hex text form of a bytea (S, with or without its "\\x") into
 * OUT, at most CAP bytes. Returns the bytes written, or -1 when S is not
 * hex or would not fit. */
long pgtext_unhex(const char *s, void *out, size_t cap);

/* The numbers of the text form of a float8[] (S, "{0.1,-2e-05,...}")
 * into OUT, at most MAX of them; returns how many. */
size_t pgtext_float_array(const char *s, double *out, size_t max);

/* The element types of the binary arrays (pg_type's fixed oids). */
enum { PG_INT8OID = 20, PG_INT4OID = 23, PG_TEXTOID = 25, PG_BYTEAOID = 17,
       PG_FLOAT8OID = 701, PG_TSVECTOROID = 3614 };

/* A one-dimensional array in binary form being built: pgtext_barr_start, then
 * its elements, then pgtext_barr_end; the bytes are B (B.len of them), sent
 * with format 1 as a parameter cast to the element type's array. */
typedef struct pgtext_barr {
    buf b;
    uint32_t n;    /* elements */
    size_t open;   /* where the length of the element being written is */
} pgtext_barr;

void pgtext_barr_init(pgtext_barr *a);
void pgtext_barr_cleanup(pgtext_barr *a);
void pgtext_barr_start(pgtext_barr *a, uint32_t elem_oid);
void pgtext_barr_int4(pgtext_barr *a, int32_t v);
void pgtext_barr_int8(pgtext_barr *a, int64_t v);
void pgtext_barr_float8(pgtext_barr *a, double v);
/* A text or bytea element of N bytes. */
void pgtext_barr_bytes(pgtext_barr *a, const void *p, size_t n);
/* An element written piece by piece between these two (a tsvector's). */
void pgtext_barr_open(pgtext_barr *a);
void pgtext_barr_close(pgtext_barr *a);
/* Ends the array: its element count written into the header. */
void pgtext_barr_end(pgtext_barr *a);

/* Big-endian appends: the binary forms' integers (in place while they fit). */
static inline void pgtext_put16(buf *b, uint16_t v)
{
    unsigned char x[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    if (b->err || b->len + 3 > b->cap || b->len + 2 > b->max) {
        buf_append(b, x, 2);
        return;
    }
    b->data[b->len] = (char)x[0];
    b->data[b->len + 1] = (char)x[1];
    b->len += 2;
    b->data[b->len] = 0;
}

static inline void pgtext_put32(buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    if (b->err || b->len + 5 > b->cap || b->len + 4 > b->max) {
        buf_append(b, x, 4);
        return;
    }
    memcpy(b->data + b->len, x, 4);
    b->len += 4;
    b->data[b->len] = 0;
}

#endif
