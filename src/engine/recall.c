/*
 * recall.c - trigger recall: curated entries (MEMORY.md, USER.md) whose
 * <!-- trigger: ... --> phrases occur in an inbound message, as a compact
 * block an agent can read before replying.
 *
 * A phrase matches when every one of its words (stemmed, stop words
 * ignored, CJK by bigrams) occurs in the message, in any order. An entry's
 * evidence is the number of its phrases that match and their words; an
 * entry needs a phrase of two or more words, or a one-word phrase of at
 * least four letters, to fire at all (the document threshold: short
 * common words alone do not recall anything). Daily notes and transcripts
 * are never consulted.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/core.h"
#include "engine/recall.h"
#include "text/sanitize.h"
#include "util/hash.h"

#define RECALL_MAX 3
#define RECALL_CHARS 1800
#define ENTRY_CHARS 600
#define MAX_TOKENS 512

typedef struct tset {
    uint64_t h[MAX_TOKENS];
    int n;
    int longest; /* bytes of the longest token (single-word threshold) */
} tset;

static int add_fn(void *ud, int flags, const char *token, int len, int start, int end)
{
    (void)start;
    (void)end;
    tset *s = ud;
    if (flags & TOKF_STOP)
        return 0;
    if (s->n < MAX_TOKENS)
        s->h[s->n++] = hash64(token, (size_t)len);
    if (len > s->longest)
        s->longest = len;
    return 0;
}

static int has(const tset *s, uint64_t h)
{
    for (int i = 0; i < s->n; i++)
        if (s->h[i] == h)
            return 1;
    return 0;
}

typedef struct hit {
    int64_t id;
    int phrases, words, importance, line;
    char *text, *path;
} hit;

static int by_strength(const void *a, const void *b)
{
    const hit *x = a, *y = b;
    if (x->phrases != y->phrases)
        return y->phrases - x->phrases;
    if (x->words != y->words)
        return y->words - x->words;
    if (x->importance != y->importance)
        return y->importance - x->importance;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The entry as one line: bullet marker dropped, whitespace collapsed. */
static void compact(const char *text, buf *out)
{
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    if ((p[0] == '-' || p[0] == '*') && p[1] == ' ')
        p += 2;
    size_t start = out->len;
    int space = 0;
    for (; *p; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t' || *p == ' ') {
            space = 1;
            continue;
        }
        if (space && out->len > start)
            buf_putc(out, ' ');
        space = 0;
        buf_putc(out, *p);
    }
}

int recall_block(mnemo *m, tok *t, const char *message, recall_next_fn next, void *ud,
                 char **out)
{
    *out = NULL;
    int rc = MNEMO_OK;
    tset msg = {{0}, 0, 0};
    if (message) {
        buf clean;
        buf_init(&clean, 0);
        if (sanitize_message(message, strlen(message), &clean) || buf_err(&clean)) {
            buf_cleanup(&clean);
            return core_error(m, MNEMO_NOMEM, "out of memory");
        }
        if (clean.len)
            tok_run(t, clean.data, clean.len, 1, add_fn, &msg);
        buf_cleanup(&clean);
    }
    buf b;
    buf_init(&b, RECALL_CHARS + 64);
    hit *hits = NULL;
    size_t nhits = 0, cap = 0;
    recall_entry e;
    if (msg.n == 0)
        goto emit;
    while ((rc = next(ud, &e)) == 1) {
        const char *trig = e.triggers;
        int phrases = 0, words = 0;
        for (const char *p = trig; p && *p;) {
            const char *c = strchr(p, ',');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            tset ph = {{0}, 0, 0};
            tok_run(t, p, n, 1, add_fn, &ph);
            int all = ph.n > 0;
            for (int i = 0; i < ph.n && all; i++)
                all = has(&msg, ph.h[i]);
            if (all && (ph.n >= 2 || ph.longest >= 4)) {
                phrases++;
                words += ph.n;
            }
            p += n + (c ? 1 : 0);
        }
        if (!phrases)
            continue;
        if (nhits == cap) {
            cap = cap ? cap * 2 : 8;
            hit *nh = realloc(hits, cap * sizeof *nh);
            if (!nh) {
                rc = MNEMO_NOMEM;
                goto done;
            }
            hits = nh;
        }
        hit *h = &hits[nhits++];
        h->id = e.id;
        h->phrases = phrases;
        h->words = words;
        h->importance = e.importance;
        h->line = e.line;
        h->text = strdup(e.text ? e.text : "");
        h->path = strdup(e.path ? e.path : "");
        if (!h->text || !h->path) {
            rc = MNEMO_NOMEM;
            goto done;
        }
    }
    if (rc < 0) {
        rc = -rc;
        goto done;
    }
    rc = MNEMO_OK;
    if (nhits > 1)
        qsort(hits, nhits, sizeof *hits, by_strength);
emit:
    for (size_t i = 0, shown = 0; i < nhits && shown < RECALL_MAX; i++) {
        buf line;
        buf_init(&line, 0);
        buf_puts(&line, "- ");
        size_t text_start = line.len;
        compact(hits[i].text, &line);
        if (line.len - text_start > ENTRY_CHARS) {
            size_t keep = text_start + ENTRY_CHARS;
            while (keep > text_start && ((unsigned char)line.data[keep] & 0xc0) == 0x80)
                keep--;
            line.len = keep;
            buf_puts(&line, "\xe2\x80\xa6");
        }
        buf_printf(&line, " (Source: %s#L%d)\n", hits[i].path, hits[i].line);
        if (!buf_err(&line) && b.len + line.len <= RECALL_CHARS) {
            buf_append(&b, line.data, line.len);
            shown++;
        }
        buf_cleanup(&line);
    }
    if (buf_err(&b)) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    if (!b.data)
        buf_puts(&b, "");
    *out = buf_detach(&b);
    if (!*out)
        rc = MNEMO_NOMEM;
done:
    for (size_t i = 0; i < nhits; i++) {
        free(hits[i].text);
        free(hits[i].path);
    }
    free(hits);
    buf_cleanup(&b);
    return rc;
}
