/*
 * jsonvec.c - embedding vectors from JSON answers (see jsonvec.h).
 *
 * A recursive-descent scanner over the raw text: values that are not on
 * the path to a vector are skipped but still checked for well-formedness,
 * so truncated or broken answers are errors, never half-read.
 */
#include "util/jsonvec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct scan {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    int failed;
} scan;

static int fail(scan *s, const char *what)
{
    if (!s->failed)
        snprintf(s->err, s->errlen, "invalid JSON: %s at byte %zu", what,
                 (size_t)(s->p - s->start));
    s->failed = 1;
    return -1;
}

static void ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static int expect(scan *s, char c)
{
    ws(s);
    if (s->p >= s->end || *s->p != c)
        return fail(s, s->p >= s->end ? "unexpected end" : "unexpected character");
    s->p++;
    return 0;
}

/* A string; *key and *klen receive its raw contents (escapes left as is). */
static int string(scan *s, const char **key, size_t *klen)
{
    if (expect(s, '"'))
        return -1;
    const char *start = s->p;
    while (s->p < s->end && *s->p != '"') {
        if ((unsigned char)*s->p < 0x20)
            return fail(s, "control character in string");
        if (*s->p == '\\') {
            if (++s->p >= s->end)
                break;
        }
        s->p++;
    }
    if (s->p >= s->end)
        return fail(s, "unterminated string");
    if (key)
        *key = start;
    if (klen)
        *klen = (size_t)(s->p - start);
    s->p++;
    return 0;
}

static const double pow10_tab[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number. The common case (at most 19 significant digits, a small
 * exponent) is computed exactly in a uint64 and scaled once; anything
 * else goes to strtod. */
static int number(scan *s, double *out)
{
    ws(s);
    const char *p = s->p, *start = p;
    int neg = 0;
    if (p < s->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= s->end || *p < '0' || *p > '9')
        return fail(s, "expected a number");
    uint64_t mant = 0;
    int digits = 0, exp10 = 0, slow = 0;
    if (*p == '0') {
        p++;
    } else {
        while (p < s->end && *p >= '0' && *p <= '9') {
            if (digits < 19)
                mant = mant * 10 + (uint64_t)(*p - '0');
            else
                slow = 1;
            digits++;
            p++;
        }
    }
    if (p < s->end && *p == '.') {
        p++;
        if (p >= s->end || *p < '0' || *p > '9')
            return fail(s, "bad number");
        while (p < s->end && *p >= '0' && *p <= '9') {
            if (mant == 0 && *p == '0') {
                exp10--; /* leading zeros after the point cost no precision */
            } else if (digits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                exp10--;
                digits++;
            } else {
                slow = 1;
            }
            p++;
        }
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, e = 0;
        if (p < s->end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p >= s->end || *p < '0' || *p > '9')
            return fail(s, "bad exponent");
        while (p < s->end && *p >= '0' && *p <= '9') {
            if (e < 10000)
                e = e * 10 + (*p - '0');
            p++;
        }
        exp10 += eneg ? -e : e;
    }
    if (slow || exp10 < -22 || exp10 > 22) {
        char tmp[64];
        size_t len = (size_t)(p - start);
        if (len >= sizeof tmp)
            len = sizeof tmp - 1;
        memcpy(tmp, start, len);
        tmp[len] = 0;
        *out = strtod(tmp, NULL);
    } else {
        double v = (double)mant;
        v = exp10 < 0 ? v / pow10_tab[-exp10] : v * pow10_tab[exp10];
        *out = neg ? -v : v;
    }
    s->p = p;
    return 0;
}

static int skip(scan *s, int depth);

static int skip_literal(scan *s, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return fail(s, "unexpected token");
    s->p += n;
    return 0;
}

static int skip(scan *s, int depth)
{
    if (depth > MAX_DEPTH)
        return fail(s, "nested too deeply");
    ws(s);
    if (s->p >= s->end)
        return fail(s, "unexpected end");
    char c = *s->p;
    if (c == '"')
        return string(s, NULL, NULL);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 0;
        }
        for (;;) {
            if (c == '{' && (string(s, NULL, NULL) || expect(s, ':')))
                return -1;
            if (skip(s, depth + 1))
                return -1;
            ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            return expect(s, close);
        }
    }
    if (c == 't')
        return skip_literal(s, "true");
    if (c == 'f')
        return skip_literal(s, "false");
    if (c == 'n')
        return skip_literal(s, "null");
    double d;
    return number(s, &d);
}

/* [n, n, ...] into scratch; returns the count or -1. */
static long numbers(scan *s, float *scratch, size_t cap)
{
    if (expect(s, '['))
        return -1;
    size_t k = 0;
    ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        double d;
        if (number(s, &d))
            return -1;
        if (k >= cap)
            return fail(s, "vector longer than expected");
        scratch[k++] = (float)d;
        ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (expect(s, ']'))
            return -1;
        return (long)k;
    }
}

static int key_is(const char *k, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(k, want, n) == 0;
}

typedef struct ctx {
    scan s;
    int format;
    float *scratch;
    size_t cap;
    jsonvec_fn fn;
    void *ud;
    long count;
} ctx;

/* One element of the list: an object (OpenAI, Gemini) or an array (Ollama). */
static int element(ctx *c)
{
    scan *s = &c->s;
    if (c->format == JSONVEC_OLLAMA) {
        long n = numbers(s, c->scratch, c->cap);
        if (n < 0)
            return -1;
        if (c->fn(c->ud, (size_t)c->count, c->scratch, (size_t)n))
            return fail(s, "rejected vector");
        c->count++;
        return 0;
    }
    const char *vkey = c->format == JSONVEC_OPENAI ? "embedding" : "values";
    long n = -1;
    double index = (double)c->count;
    if (expect(s, '{'))
        return -1;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
    } else {
        for (;;) {
            const char *k;
            size_t kl;
            if (string(s, &k, &kl) || expect(s, ':'))
                return -1;
            if (key_is(k, kl, vkey)) {
                if ((n = numbers(s, c->scratch, c->cap)) < 0)
                    return -1;
            } else if (c->format == JSONVEC_OPENAI && key_is(k, kl, "index")) {
                if (number(s, &index))
                    return -1;
            } else if (skip(s, 2)) {
                return -1;
            }
            ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (expect(s, '}'))
                return -1;
            break;
        }
    }
    if (n < 0)
        return fail(s, "an element without a vector");
    /* Checked as a double first: casting 1e20 to size_t is undefined. */
    if (!(index >= 0 && index <= 1e15) || index != floor(index))
        return fail(s, "bad index");
    if (c->fn(c->ud, (size_t)index, c->scratch, (size_t)n))
        return fail(s, "rejected vector");
    c->count++;
    return 0;
}

long jsonvec_scan(const char *str, size_t len, int format, float *scratch, size_t cap,
                  jsonvec_fn fn, void *ud, char *err, size_t errlen)
{
    ctx c = {{str, str + len, str, err, errlen, 0}, format, scratch, cap, fn, ud, 0};
    scan *s = &c.s;
    const char *list = format == JSONVEC_OPENAI ? "data" : "embeddings";
    int found = 0;
    if (expect(s, '{'))
        return -1;
    ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
    } else {
        for (;;) {
            const char *k;
            size_t kl;
            if (string(s, &k, &kl) || expect(s, ':'))
                return -1;
            if (key_is(k, kl, list)) {
                found = 1;
                if (expect(s, '['))
                    return -1;
                ws(s);
                if (s->p < s->end && *s->p == ']') {
                    s->p++;
                } else {
                    for (;;) {
                        if (element(&c))
                            return -1;
                        ws(s);
                        if (s->p < s->end && *s->p == ',') {
                            s->p++;
                            continue;
                        }
                        if (expect(s, ']'))
                            return -1;
                        break;
                    }
                }
            } else if (skip(s, 1)) {
                return -1;
            }
            ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (expect(s, '}'))
                return -1;
            break;
        }
    }
    ws(s);
    if (s->p != s->end)
        return fail(s, "trailing data");
    if (!found) {
        snprintf(err, errlen, "no \"%s\" list in the response", list);
        return -1;
    }
    return c.count;
}
