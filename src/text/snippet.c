/*
 * snippet.c - passages and their text (see snippet.h for the scoring).
 */
#include "text/snippet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/bm25.h"
#include "mnemo.h"
#include "util/utf8.h"

#define WINDOW_SHARE 0.7 /* of a passage's evidence; the rest is its context */
#define LINE_DECAY 0.7   /* line k of a passage counts LINE_DECAY^k ... */
#define LINE_FLOOR 0.3   /* ... but at least this */
#define CONTEXT_LINES 2  /* on either side */
#define MAX_QTOK 64

typedef struct line {
    size_t off, len;
    int chars;
    int ntok;       /* token positions, as the index counts length */
    int first_hit;  /* byte offset of the first match in the line, -1 if none */
    int blank;
    uint64_t mask;  /* query tokens found on the line */
    unsigned char tf[MAX_QTOK];
} line;

typedef struct lines {
    line *v;
    size_t n;
} lines;

typedef struct match_ctx {
    const query *q;
    const char *tok[MAX_QTOK];
    size_t tlen[MAX_QTOK];
    line *ln;
} match_ctx;

static int match_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)end;
    match_ctx *m = ud;
    line *l = m->ln;
    if (!(flags & TOKF_COLOCATED))
        l->ntok++;
    for (int i = 0; i < m->q->ntokens && i < MAX_QTOK; i++) {
        size_t n = m->tlen[i];
        int prefix = (m->q->prefix >> i) & 1;
        if ((n == (size_t)len || (prefix && n < (size_t)len)) && memcmp(m->tok[i], token, n) == 0) {
            l->mask |= (uint64_t)1 << i;
            if (l->tf[i] < 255)
                l->tf[i]++;
            if (l->first_hit < 0)
                l->first_hit = start;
        }
    }
    return 0;
}

/* Points M at the query's tokens. */
static void match_setup(const snippet_ctx *c, match_ctx *m)
{
    memset(m, 0, sizeof *m);
    m->q = c->q;
    const char *p = c->q ? c->q->tokens.data : NULL;
    for (int i = 0; p && i < c->q->ntokens && i < MAX_QTOK; i++) {
        m->tok[i] = p;
        m->tlen[i] = strlen(p);
        p += m->tlen[i] + 1;
    }
}

/* Finds the query's tokens on line L of TEXT. */
static int line_match(const snippet_ctx *c, match_ctx *m, line *l, const char *text)
{
    m->ln = l;
    return c->q && c->q->ntokens ? tok_run(c->t, text + l->off, l->len, 0, match_fn, m) : 0;
}

/* Splits TEXT into lines and, with MATCH, finds the query's tokens on each. */
static int lines_read(const snippet_ctx *c, const char *text, size_t len, int match, lines *out)
{
    size_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += text[i] == '\n';
    out->v = calloc(nl, sizeof *out->v);
    out->n = 0;
    if (!out->v)
        return MNEMO_NOMEM;
    match_ctx m;
    match_setup(c, &m);
    size_t pos = 0;
    for (;;) {
        const char *e = memchr(text + pos, '\n', len - pos);
        size_t end = e ? (size_t)(e - text) : len;
        line *l = &out->v[out->n++];
        l->off = pos;
        l->len = end - pos;
        l->chars = (int)utf8_count(text + pos, l->len);
        l->first_hit = -1;
        l->blank = 1;
        for (size_t i = pos; i < end; i++)
            if (text[i] != ' ' && text[i] != '\t') {
                l->blank = 0;
                break;
            }
        int rc = match && !l->blank ? line_match(c, &m, l, text) : 0;
        if (rc)
            return rc;
        if (!e)
            break;
        pos = end + 1;
    }
    return MNEMO_OK;
}

/* The last line of the window starting at line I: whole lines while they
 * fit in MAX_CHARS (the first always), trailing blank lines dropped. */
static size_t window_end(const lines *ls, size_t i, int max_chars)
{
    int chars = 0;
    size_t j = i;
    while (j < ls->n) {
        int add = ls->v[j].chars + (j > i ? 1 : 0);
        if (j > i && chars + add > max_chars)
            break;
        chars += add;
        j++;
    }
    while (j > i + 1 && ls->v[j - 1].blank)
        j--;
    return j - 1;
}

/* BM25 of lines [A, B], the k-th non-blank line weighted by
 * max(LINE_FLOOR, LINE_DECAY^k) (DECAY) or 1, over the mean length AVG,
 * divided by the query's IDF mass. */
static double bm25_lines(const snippet_ctx *c, const lines *ls, size_t a, size_t b, int decay,
                         double avg)
{
    double f[MAX_QTOK] = {0};
    uint64_t any = 0;
    int len = 0;
    double w = 1.0;
    for (size_t k = a; k <= b; k++) {
        const line *l = &ls->v[k];
        len += l->ntok;
        for (uint64_t m = l->mask; m; m &= m - 1) {
            int t = __builtin_ctzll(m);
            f[t] += w * l->tf[t];
        }
        any |= l->mask;
        if (decay && !l->blank) {
            w *= LINE_DECAY;
            if (w < LINE_FLOOR)
                w = LINE_FLOOR;
        }
    }
    if (!any)
        return 0;
    double norm = bm25_norm(c->k1, c->b, (double)len, avg > 0 ? avg : 1.0);
    double s = 0;
    for (uint64_t m = any; m; m &= m - 1) {
        int t = __builtin_ctzll(m);
        s += bm25_part(c->tokw[t], 1.0, f[t], c->k1, norm); /* tokw: the IDF share */
    }
    return s / (c->sum_idf > 0 ? c->sum_idf : 1.0);
}

/* The window starting at line I: whole lines while they fit, at most up to
 * line LAST (trailing blank lines dropped), its evidence, and a heading
 * just above leading it in. */
static snippet_passage make_window(const snippet_ctx *c, const char *text, const lines *ls,
                                   size_t i, size_t last, double avgw)
{
    size_t e = window_end(ls, i, c->max_chars);
    if (e > last) {
        e = last;
        while (e > i && ls->v[e].blank)
            e--;
    }
    double x = 0;
    if (c->tokw && c->q && c->q->ntokens) {
        size_t lo = i > CONTEXT_LINES ? i - CONTEXT_LINES : 0;
        size_t hi = e + CONTEXT_LINES < ls->n ? e + CONTEXT_LINES : ls->n - 1;
        double span = (double)(hi - lo + 1) / (double)(e - i + 1);
        x = WINDOW_SHARE * bm25_lines(c, ls, i, e, 1, avgw) +
            (1.0 - WINDOW_SHARE) * bm25_lines(c, ls, lo, hi, 0, avgw * span);
    }
    /* Its meaning is its best line's, a line counting as a match does by
     * where it is: the window that starts at the entry a query means
     * shows it, not one that reaches it at its end. */
    int hit = 0;
    double v = 0, w = 1.0;
    for (size_t k = i; k <= e; k++) {
        hit |= ls->v[k].mask != 0;
        if (c->lv && !ls->v[k].blank) {
            if (c->lv[k] * w > v)
                v = c->lv[k] * w;
            w = w * LINE_DECAY < LINE_FLOOR ? LINE_FLOOR : w * LINE_DECAY;
        }
    }
    /* A heading just above (a blank line between at most) leads the
     * passage in, if the passage still fits. */
    size_t s0 = i, h = i;
    if (h > 0 && ls->v[h - 1].blank)
        h--;
    if (h > 0 && !ls->v[h - 1].blank && text[ls->v[h - 1].off] == '#' &&
        window_end(ls, h - 1, c->max_chars) >= e)
        s0 = h - 1;
    size_t off = ls->v[s0].off;
    return (snippet_passage){(int)s0, (int)e, off, ls->v[e].off + ls->v[e].len - off, hit ? x : 0,
                             v};
}

static int clashes(const snippet_passage *p, const snippet_passage *out, int n)
{
    for (int j = 0; j < n; j++)
        if (p->first <= out[j].last && out[j].first <= p->last)
            return 1;
    return 0;
}

/* Window W, starting at line I, no longer overlaps the chosen passages
 * OUT[0..N): it ends before the first of them it ran into, without a
 * heading lead-in from inside one. 0 when it starts inside one. */
static int fit_window(const snippet_ctx *c, const char *text, const lines *ls, size_t i,
                      double avgw, const snippet_passage *out, int n, snippet_passage *w)
{
    size_t last = ls->n - 1;
    for (int j = 0; j < n; j++) {
        if ((int)i >= out[j].first && (int)i <= out[j].last)
            return 0;
        if ((int)i < out[j].first && (size_t)out[j].first - 1 < last)
            last = (size_t)out[j].first - 1;
    }
    *w = make_window(c, text, ls, i, last, avgw);
    if (w->first < (int)i && clashes(w, out, n)) {
        w->first = (int)i;
        w->len -= ls->v[i].off - w->off;
        w->off = ls->v[i].off;
    }
    return 1;
}

int snippet_find(const snippet_ctx *c, const char *text, size_t len, int own,
                 snippet_passage *out, int max, int *n)
{
    *n = 0;
    lines ls;
    int rc = lines_read(c, text, len, 1, &ls);
    if (rc) {
        free(ls.v);
        return rc;
    }
    size_t nown = own > 0 && (size_t)own < ls.n ? (size_t)own : ls.n;
    snippet_passage *w = malloc(nown * sizeof *w);
    size_t *start = malloc(nown * sizeof *start);
    if (!w || !start) {
        free(w);
        free(start);
        free(ls.v);
        return MNEMO_NOMEM;
    }
    /* A passage's mean length: a chunk's, or what MAX_CHARS holds at four
     * characters a token (the chunker's estimate) when that is less. */
    double avgw = c->max_chars / 4.0 < c->avgdl ? c->max_chars / 4.0 : c->avgdl;
    size_t nw = 0;
    for (size_t i = 0; i < nown; i++) {
        if (ls.v[i].blank)
            continue;
        start[nw] = i;
        w[nw++] = make_window(c, text, &ls, i, ls.n - 1, avgw);
    }
    /* The best windows that do not overlap, earliest first among equals;
     * after the first, only windows with matches or meaning. A window that
     * runs into a chosen passage is cut short before it and scored again
     * (the lines just above an answer are often the evidence, and would
     * otherwise be lost between two passages); one that starts inside it
     * is gone (x < 0). */
    while (*n < max) {
        snippet_passage *best = NULL;
        double bs = 0;
        for (size_t k = 0; k < nw; k++) {
            snippet_passage *p = &w[k];
            if (p->x < 0 || (*n && p->x <= 0 && p->v <= 0))
                continue;
            if (clashes(p, out, *n) && !fit_window(c, text, &ls, start[k], avgw, out, *n, p)) {
                p->x = -1;
                continue;
            }
            if (*n && p->x <= 0 && p->v <= 0)
                continue;
            double s = c->rank ? c->rank(c->ud, p->x, p->v) : p->x;
            if (!best || s > bs) {
                best = p;
                bs = s;
            }
        }
        if (!best)
            break;
        out[(*n)++] = *best;
        best->x = -1;
    }
    if (*n == 0 && ls.n) /* nothing but blank lines */
        out[(*n)++] = (snippet_passage){0, 0, 0, ls.v[0].len, 0, 0};
    free(w);
    free(start);
    free(ls.v);
    return MNEMO_OK;
}

int snippet_render(const snippet_ctx *c, const char *text, size_t len, const snippet_passage *p,
                   buf *out)
{
    lines ls;
    int rc = lines_read(c, text, len, 0, &ls);
    if (rc || (size_t)p->last >= ls.n || p->first > p->last) {
        free(ls.v);
        return rc ? rc : MNEMO_INVALID;
    }
    line *l0 = &ls.v[p->first];
    if (p->first == p->last && l0->chars > c->max_chars) {
        /* One long line: cut around its first match. */
        match_ctx m;
        match_setup(c, &m);
        if ((rc = line_match(c, &m, l0, text))) {
            free(ls.v);
            return rc;
        }
        const char *s = text + l0->off;
        size_t from = 0, third = (size_t)c->max_chars / 3;
        if (l0->first_hit > 0) {
            size_t lead = utf8_prefix(s, (size_t)l0->first_hit, (size_t)-1);
            size_t before = utf8_count(s, lead);
            size_t skip = before > third ? before - third : 0;
            from = utf8_prefix(s, l0->len, skip);
        }
        size_t room = (size_t)c->max_chars - (from ? 2 : 1);
        size_t take = utf8_prefix(s + from, l0->len - from, room);
        if (from)
            buf_puts(out, "\xe2\x80\xa6");
        buf_append(out, s + from, take);
        if (from + take < l0->len)
            buf_puts(out, "\xe2\x80\xa6");
    } else {
        size_t a = l0->off, b = ls.v[p->last].off + ls.v[p->last].len;
        buf_append(out, text + a, b - a);
    }
    free(ls.v);
    return buf_err(out);
}

void snippet_token_weights(const query *q, const double *idf, double *tokw)
{
    int count[BM25_MAX_PHRASES] = {0};
    for (int i = 0; i < q->ntokens && i < MAX_QTOK; i++)
        count[q->tok_phrase[i]]++;
    for (int i = 0; i < MAX_QTOK; i++) {
        int k = i < q->ntokens ? q->tok_phrase[i] : -1;
        tokw[i] = k >= 0 && k < q->npositive && count[k] ? idf[k] / count[k] : 0;
    }
}
