/*
 * buf.h - a growable byte buffer with a hard size cap.
 *
 * Used for every string the library builds: JSON, snippets, file contents.
 * The buffer is always NUL-terminated once anything was appended. A buffer
 * that hits its cap or fails to grow remembers the error; later appends are
 * no-ops, so callers check buf_err() once at the end.
 */
#ifndef MNEMO_BUF_H
#define MNEMO_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct buf {
    char *data;
    size_t len;
    size_t cap;   /* allocated bytes */
    size_t max;   /* hard limit on len; 0 = 1 GiB */
    int err;      /* MNEMO_NOMEM or MNEMO_INVALID (cap exceeded), sticky */
} buf;

void buf_init(buf *b, size_t max);
void buf_cleanup(buf *b);
int buf_reserve_grow(buf *b, size_t extra);
/* Room for EXTRA more bytes and the NUL: in place while it fits (the hot
 * path of every appender), else grown; MNEMO_OK or the sticky error. */
static inline int buf_reserve(buf *b, size_t extra)
{
    if (!b->err && extra < b->cap - b->len && extra <= b->max - b->len)
        return 0;
    return buf_reserve_grow(b, extra);
}
int buf_append(buf *b, const void *p, size_t n);
int buf_puts(buf *b, const char *s);
int buf_putc_grow(buf *b, char c);
/* Appends the decimal digits of V. */
int buf_int(buf *b, long long v);
int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap);
/* Appends S as a JSON string literal, quotes included. */
int buf_json_str(buf *b, const char *s, size_t n);
/* Overwrites every occurrence of SECRET in B with '*' (nothing for a
 * SECRET shorter than MIN bytes, or NULL or empty). */
void buf_mask(buf *b, const char *secret, size_t min);
/* Appends P[0..N) in base64 (RFC 4648, padded). */
int buf_base64(buf *b, const void *p, size_t n);
/* Hands the data to the caller (never NULL unless out of memory) and resets B. */
char *buf_detach(buf *b);
static inline int buf_err(const buf *b) { return b->err; }
static inline void buf_reset(buf *b) { b->len = 0; if (b->data) b->data[0] = 0; }
/* One byte: in place while it fits (the hot path of every escaper). */
static inline int buf_putc(buf *b, char c)
{
    if (b->err || b->len + 2 > b->cap || b->len >= b->max)
        return buf_putc_grow(b, c);
    b->data[b->len++] = c;
    b->data[b->len] = 0;
    return 0;
}

#endif
