/*
 * buf.c - growable byte buffer with a hard cap (see buf.h).
 */
#include "util/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"

#define BUF_DEFAULT_MAX ((size_t)1 << 30)

void buf_init(buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max ? max : BUF_DEFAULT_MAX;
    b->err = 0;
}

void buf_cleanup(buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int buf_reserve_grow(buf *b, size_t extra)
{
    if (b->err)
        return b->err;
    if (extra > b->max - b->len) {
        b->err = MNEMO_INVALID;
        return b->err;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return MNEMO_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap * 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->err = MNEMO_NOMEM;
        return b->err;
    }
    b->data = p;
    b->cap = cap;
    return MNEMO_OK;
}

int buf_append(buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n))
        return b->err;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return MNEMO_OK;
}

int buf_puts(buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_putc_grow(buf *b, char c) { return buf_append(b, &c, 1); }

int buf_int(buf *b, long long v)
{
    char d[24], *p = d + sizeof d;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    return buf_append(b, p, (size_t)(d + sizeof d - p));
}

int buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->err = MNEMO_INVALID;
        return b->err;
    }
    if ((size_t)n < sizeof small)
        return buf_append(b, small, (size_t)n);
    if (buf_reserve(b, (size_t)n))
        return b->err;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return MNEMO_OK;
}

int buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_json_str(buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    buf_putc(b, '"');
    size_t run = 0; /* bytes copied verbatim since the last escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[7];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
                u[4] = hex[c >> 4]; u[5] = hex[c & 15]; u[6] = 0;
                esc = u;
            }
        }
        if (esc) {
            buf_append(b, s + i - run, run);
            run = 0;
            buf_puts(b, esc);
        } else {
            run++;
        }
    }
    buf_append(b, s + n - run, run);
    return buf_putc(b, '"');
}

char *buf_detach(buf *b)
{
    if (b->err) {
        buf_cleanup(b);
        return NULL;
    }
    if (!b->data) {
        if (buf_reserve(b, 0))
            return NULL;
        b->data[0] = 0;
    }
    char *p = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

int buf_base64(buf *b, const void *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = p;
    if (buf_reserve(b, (n + 2) / 3 * 4 + 1))
        return buf_err(b);
    char *o = b->data + b->len;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    b->len = (size_t)(o - b->data);
    b->data[b->len] = 0;
    return MNEMO_OK;
}

void buf_mask(buf *b, const char *secret, size_t min)
{
    size_t sl = secret ? strlen(secret) : 0;
    if (sl < min || sl == 0 || !b->data)
        return;
    for (char *p = b->data; (p = strstr(p, secret)) != NULL; p += sl)
        memset(p, '*', sl);
}
