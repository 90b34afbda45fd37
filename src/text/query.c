/*
 * query.c - query parsing and MATCH expression building (see query.h).
 *
 * Terms are passed to FTS5 as quoted surface text (the span the tokenizer
 * reported), not as normalised tokens: FTS5 tokenizes query strings with
 * the same tokenizer, and stemming a stem is not always a no-op.
 */
#include "text/query.h"

#include <stdlib.h>
#include <string.h>

#include "mnemo.h"

typedef struct term {
    size_t span_off, span_len; /* surface text in the query */
    char norm[TOK_MAX_BYTES + 1];
    int flags;
} term;

typedef struct collect {
    const char *base; /* the segment being tokenized */
    size_t base_off;  /* its offset in the query */
    term *v;
    int n, cap;
} collect;

static int collect_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    collect *c = ud;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 32;
        term *v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        c->v = v;
        c->cap = cap;
    }
    term *t = &c->v[c->n++];
    t->span_off = c->base_off + (size_t)start;
    t->span_len = (size_t)(end - start);
    memcpy(t->norm, token, (size_t)len);
    t->norm[len] = 0;
    t->flags = flags;
    return 0;
}

/* Appends S as an FTS5 string literal. */
static void fts_quote(buf *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            buf_putc(b, '"');
        buf_putc(b, s[i]);
    }
    buf_putc(b, '"');
}

static int seen_token(const query *q, const char *norm)
{
    const char *p = q->tokens.data;
    for (int i = 0; i < q->ntokens; i++) {
        if (strcmp(p, norm) == 0)
            return 1;
        p += strlen(p) + 1;
    }
    return 0;
}

static void add_token(query *q, const char *norm, int prefix, int phrase)
{
    if (q->ntokens >= 64 || seen_token(q, norm))
        return;
    if (prefix)
        q->prefix |= (uint64_t)1 << q->ntokens;
    q->tok_phrase[q->ntokens] = (unsigned char)phrase;
    buf_append(&q->tokens, norm, strlen(norm) + 1);
    q->ntokens++;
}

typedef struct phrase {
    size_t off, len; /* surface text */
    int kind;        /* 0 bare segment, 1 phrase, 2 excluded word/phrase */
} phrase;

/* Splits the raw query into bare segments, quoted phrases and exclusions. */
static int split(const char *s, phrase **out, int *n)
{
    int cap = 8, count = 0;
    phrase *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return MNEMO_NOMEM;
    size_t i = 0, len = strlen(s), seg = 0;
    while (i < len) {
        int at_start = i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t' || s[i - 1] == '\n';
        int neg = at_start && s[i] == '-' && i + 1 < len && s[i + 1] != ' ' && s[i + 1] != '-';
        size_t q = neg ? i + 1 : i;
        if (s[q] != '"' && !neg) {
            i++;
            continue;
        }
        if (count + 2 >= cap) {
            cap *= 2;
            phrase *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                free(v);
                return MNEMO_NOMEM;
            }
            v = nv;
        }
        if (i > seg)
            v[count++] = (phrase){seg, i - seg, 0};
        if (s[q] == '"') {
            const char *close = strchr(s + q + 1, '"');
            size_t end = close ? (size_t)(close - s) : len;
            v[count++] = (phrase){q + 1, end - q - 1, neg ? 2 : 1};
            i = close ? end + 1 : len;
        } else {
            size_t end = q;
            while (end < len && s[end] != ' ' && s[end] != '\t' && s[end] != '\n')
                end++;
            v[count++] = (phrase){q, end - q, 2};
            i = end;
        }
        seg = i;
    }
    if (len > seg) {
        phrase *nv = realloc(v, (size_t)(count + 1) * sizeof *nv);
        if (!nv) {
            free(v);
            return MNEMO_NOMEM;
        }
        v = nv;
        v[count++] = (phrase){seg, len - seg, 0};
    }
    *out = v;
    *n = count;
    return MNEMO_OK;
}

static int has_token(tok *t, const char *s, size_t n, collect *scratch)
{
    scratch->n = 0;
    scratch->base = s;
    scratch->base_off = 0;
    if (tok_run(t, s, n, 0, collect_fn, scratch))
        return 0;
    return scratch->n > 0;
}

static char *filename_form(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '"' || *s == '\'' || *s == '`')
        s++;
    if (s[0] == '.' && s[1] == '/')
        s += 2;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '"' || s[n - 1] == '\'' ||
                 s[n - 1] == '`' || s[n - 1] == '\n'))
        n--;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        out[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : s[i];
    out[n] = 0;
    return out;
}

int query_parse(tok *t, const char *text, query *q)
{
    memset(q, 0, sizeof *q);
    buf_init(&q->tokens, 1 << 16);
    q->filename = filename_form(text);
    if (!q->filename)
        return MNEMO_NOMEM;

    phrase *parts = NULL;
    int nparts = 0, rc;
    collect c = {0}, scratch = {0};
    buf pos, neg, phr;
    buf_init(&pos, 1 << 20);
    buf_init(&neg, 1 << 20);
    buf_init(&phr, 1 << 20);
    if ((rc = split(text, &parts, &nparts)))
        goto done;

    /* Bare words: tokenize each segment, keep its terms. */
    for (int i = 0; i < nparts; i++) {
        if (parts[i].kind != 0)
            continue;
        c.base = text + parts[i].off;
        c.base_off = parts[i].off;
        if ((rc = tok_run(t, c.base, parts[i].len, 1, collect_fn, &c)))
            goto done;
    }
    int nonstop = 0;
    for (int i = 0; i < c.n; i++)
        if (!(c.v[i].flags & TOKF_STOP))
            nonstop++;
    int npos = 0, nneg = 0;
    for (int i = 0; i < c.n && npos < QUERY_MAX_POSITIVE; i++) {
        term *tm = &c.v[i];
        if ((tm->flags & TOKF_STOP) && nonstop > 0)
            continue;
        if (seen_token(q, tm->norm))
            continue;
        int prefix = (tm->flags & TOKF_PREFIXABLE) != 0;
        add_token(q, tm->norm, prefix, npos);
        if (npos)
            buf_puts(&pos, " OR ");
        fts_quote(&pos, text + tm->span_off, tm->span_len);
        if (prefix)
            buf_puts(&pos, " *");
        npos++;
    }
    /* Quoted phrases: required. */
    for (int i = 0; i < nparts && npos < QUERY_MAX_POSITIVE; i++) {
        if (parts[i].kind != 1)
            continue;
        const char *s = text + parts[i].off;
        if (!has_token(t, s, parts[i].len, &scratch))
            continue;
        buf_reset(&phr);
        size_t at = 0;
        for (int k = 0; k < scratch.n; k++) {
            const term *w = &scratch.v[k];
            if (!(w->flags & TOKF_PART)) {
                add_token(q, w->norm, 0, npos);
            } else if (k > 0 && scratch.v[k - 1].norm[0] == '#' &&
                       (k + 1 == scratch.n || !(scratch.v[k + 1].flags & TOKF_PART))) {
                /* "#412" is also 412 where it is written inside a word
                 * (acme/gateway#412): the phrase asks for 412, which every
                 * "#412" carries too, as the bare word finds both. */
                const term *h = &scratch.v[k - 1];
                buf_append(&phr, s + at, h->span_off - at);
                buf_append(&phr, s + w->span_off, w->span_len);
                at = h->span_off + h->span_len;
                add_token(q, w->norm, 0, npos);
            }
        }
        buf_append(&phr, s + at, parts[i].len - at);
        if ((rc = buf_err(&phr)))
            goto done;
        if (npos)
            buf_puts(&pos, " OR ");
        fts_quote(&pos, phr.data ? phr.data : "", phr.len);
        q->required |= (uint64_t)1 << npos;
        npos++;
    }
    /* Exclusions. */
    for (int i = 0; i < nparts && nneg < QUERY_MAX_EXCLUDED; i++) {
        if (parts[i].kind != 2)
            continue;
        const char *s = text + parts[i].off;
        if (!has_token(t, s, parts[i].len, &scratch))
            continue;
        if (nneg)
            buf_puts(&neg, " OR ");
        fts_quote(&neg, s, parts[i].len);
        nneg++;
    }
    if ((rc = buf_err(&pos)) || (rc = buf_err(&neg)) || (rc = buf_err(&q->tokens)))
        goto done;
    q->npositive = npos;
    q->nphrase = npos + nneg;
    if (npos == 0)
        goto done; /* nothing searchable */
    buf m;
    buf_init(&m, 1 << 21);
    if (nneg)
        buf_printf(&m, "(%s) NOT (%s)", pos.data, neg.data);
    else
        buf_puts(&m, pos.data);
    q->match = buf_detach(&m);
    if (!q->match)
        rc = MNEMO_NOMEM;
done:
    free(parts);
    free(c.v);
    free(scratch.v);
    buf_cleanup(&pos);
    buf_cleanup(&neg);
    buf_cleanup(&phr);
    if (rc)
        query_cleanup(q);
    return rc;
}

void query_cleanup(query *q)
{
    free(q->match);
    free(q->filename);
    buf_cleanup(&q->tokens);
    memset(q, 0, sizeof *q);
}

void query_weights(const query *q, double *w)
{
    for (int i = 0; i < BM25_MAX_PHRASES; i++)
        w[i] = i < q->npositive ? 1.0 : 0.0;
}

const char *query_phrase_next(const char *p, buf *out, int *prefix)
{
    buf_reset(out);
    *prefix = 0;
    if (!p)
        return NULL;
    p = strchr(p, '"');
    if (!p)
        return NULL;
    for (p++; *p; p++) {
        if (*p == '"' && p[1] == '"') {
            buf_putc(out, '"');
            p++;
        } else if (*p == '"') {
            break;
        } else {
            buf_putc(out, *p);
        }
    }
    if (*p == '"')
        p++;
    if (p[0] == ' ' && p[1] == '*') {
        *prefix = 1;
        p += 2;
    }
    return p;
}
