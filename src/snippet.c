/*
 * snippet.c - snippet window selection (see snippet.h).
 */
#include "snippet.h"

#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "util/utf8.h"

typedef struct line {
    size_t off, len;
    int chars;
    uint64_t mask;  /* query tokens found on the line */
    int hits;
    int first_hit;  /* byte offset of the first match in the line, -1 if none */
    int blank;
} line;

typedef struct match_ctx {
    const query *q;
    line *ln;
} match_ctx;

static int match_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)flags;
    (void)end;
    match_ctx *m = ud;
    const char *p = m->q->tokens.data;
    for (int i = 0; i < m->q->ntokens; i++) {
        size_t n = strlen(p);
        int prefix = (m->q->prefix >> i) & 1;
        if ((n == (size_t)len || (prefix && n < (size_t)len)) && memcmp(p, token, n) == 0) {
            m->ln->mask |= (uint64_t)1 << i;
            m->ln->hits++;
            if (m->ln->first_hit < 0)
                m->ln->first_hit = start;
        }
        p += n + 1;
    }
    return 0;
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

int snippet_pick(tok *t, const query *q, const char *text, size_t len, int first_line,
                 int max_chars, buf *out, int *start_line, int *end_line)
{
    size_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += text[i] == '\n';
    line *lines = calloc(nl, sizeof *lines);
    if (!lines)
        return MNEMO_NOMEM;
    size_t n = 0, pos = 0;
    for (;;) {
        const char *e = memchr(text + pos, '\n', len - pos);
        size_t end = e ? (size_t)(e - text) : len;
        line *l = &lines[n++];
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
        if (q && q->ntokens && !l->blank) {
            match_ctx m = {q, l};
            tok_run(t, text + pos, l->len, 0, match_fn, &m);
        }
        if (!e)
            break;
        pos = end + 1;
    }

    /* Best window: most distinct tokens, then most hits, then earliest. */
    size_t best_i = 0, best_j = 1;
    int best_cov = -1, best_hits = -1;
    for (size_t i = 0; i < n; i++) {
        if (lines[i].blank)
            continue;
        uint64_t mask = 0;
        int hits = 0, chars = 0;
        size_t j = i;
        while (j < n) {
            int add = lines[j].chars + (j > i ? 1 : 0);
            if (j > i && chars + add > max_chars)
                break;
            chars += add;
            mask |= lines[j].mask;
            hits += lines[j].hits;
            j++;
        }
        int cov = popcount64(mask);
        if (cov > best_cov || (cov == best_cov && hits > best_hits)) {
            best_cov = cov;
            best_hits = hits;
            best_i = i;
            best_j = j;
        }
    }
    while (best_j > best_i + 1 && lines[best_j - 1].blank)
        best_j--;

    const line *l0 = &lines[best_i];
    if (best_j == best_i + 1 && l0->chars > max_chars) {
        /* One long line: cut around its first match. */
        const char *s = text + l0->off;
        size_t from = 0;
        if (l0->first_hit > 0) {
            size_t lead = utf8_prefix(s, (size_t)l0->first_hit, (size_t)-1);
            size_t before = utf8_count(s, lead);
            size_t skip = before > (size_t)max_chars / 3 ? before - (size_t)max_chars / 3 : 0;
            from = utf8_prefix(s, l0->len, skip);
        }
        size_t room = (size_t)max_chars - (from ? 2 : 1);
        size_t take = utf8_prefix(s + from, l0->len - from, room);
        if (from)
            buf_puts(out, "\xe2\x80\xa6");
        buf_append(out, s + from, take);
        if (from + take < l0->len)
            buf_puts(out, "\xe2\x80\xa6");
    } else {
        size_t a = lines[best_i].off, b = lines[best_j - 1].off + lines[best_j - 1].len;
        buf_append(out, text + a, b - a);
    }
    *start_line = first_line + (int)best_i;
    *end_line = first_line + (int)best_j - 1;
    free(lines);
    return buf_err(out);
}
