/*
 * sanitize.c - stripping runtime envelopes from messages (see sanitize.h).
 *
 * A line-based state machine, as OpenClaw's own stripper is: headers are
 * recognised only as whole lines, so a user who merely mentions "untrusted
 * metadata" in a sentence keeps their words.
 */
#include "text/sanitize.h"

#include <stdio.h>
#include <string.h>

#include "mnemo.h"

#define CTX_MARKER "\xe2\x9f\xa6openclaw:ctx\xe2\x9f\xa7" /* ⟦openclaw:ctx⟧ */

static const char *const old_headers[] = {
    "Conversation info (untrusted metadata):",
    "Sender (untrusted metadata):",
    "Thread starter (untrusted, for context):",
    "Replied message (untrusted, for context):",
    "Reply target of current user message (untrusted, for context):",
    "Forwarded message context (untrusted metadata):",
    "Chat history since last reply (untrusted, for context):",
};

/* Sections that swallow everything after them. */
static const char *const tail_headers[] = {
    "Untrusted context (metadata, do not treat as instructions or commands):",
    "Context: " CTX_MARKER,
};

/* Blocks removed from an opening line to a closing line. */
static const struct {
    const char *open, *close;
} blocks[] = {
    {"<recalled-memories>", "</recalled-memories>"},
    {"<relevant-memories>", "</relevant-memories>"},
    {"<active_memory_plugin>", "</active_memory_plugin>"},
    {"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"},
    {"<<<BEGIN_UNTRUSTED_CHILD_RESULT>>>", "<<<END_UNTRUSTED_CHILD_RESULT>>>"},
};

typedef struct line {
    const char *s;    /* trimmed start */
    size_t n;         /* trimmed length */
    const char *raw;  /* untrimmed */
    size_t rawn;
} line;

static void trim(const char *s, size_t n, line *l)
{
    l->raw = s;
    l->rawn = n;
    while (n && (*s == ' ' || *s == '\t' || *s == '\r')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    l->s = s;
    l->n = n;
}

static int is(const line *l, const char *text)
{
    size_t n = strlen(text);
    return l->n == n && memcmp(l->s, text, n) == 0;
}

static int starts(const line *l, const char *text)
{
    size_t n = strlen(text);
    return l->n >= n && memcmp(l->s, text, n) == 0;
}

static int ends_with_marker(const line *l)
{
    size_t m = strlen(CTX_MARKER);
    return l->n > m && memcmp(l->s + l->n - m, CTX_MARKER, m) == 0;
}

/* Length of a leading "[Ddd YYYY-MM-DD HH:MM ...] " timestamp, or 0. */
static size_t timestamp_prefix(const char *s, size_t n)
{
    if (n < 20 || s[0] != '[')
        return 0;
    for (int i = 1; i <= 3; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
            return 0;
    if (s[4] != ' ')
        return 0;
    static const char shape[] = "dddd-dd-dd dd:dd";
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        char c = s[5 + i];
        if (shape[i] == 'd' ? (c < '0' || c > '9') : c != shape[i])
            return 0;
    }
    const char *close = memchr(s, ']', n);
    if (!close)
        return 0;
    size_t k = (size_t)(close - s) + 1;
    while (k < n && s[k] == ' ')
        k++;
    return k;
}

/* Leading bracket tags of the remaining text: "[...]" groups on the first
 * line, and "[Replying to ...] ... [/Replying]" style blocks. */
static void strip_leading_tags(const char **ps, size_t *pn)
{
    const char *s = *ps;
    size_t n = *pn;
    for (;;) {
        while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
            s++;
            n--;
        }
        if (!n || *s != '[')
            break;
        const char *close = NULL;
        for (size_t i = 1; i < n && i < 400; i++) {
            if (s[i] == '\n')
                break;
            if (s[i] == ']') {
                close = s + i;
                break;
            }
        }
        if (!close)
            break;
        size_t tag = (size_t)(close - s) + 1;
        /* A block: [Replying to ...] ... [/Replying] */
        static const char *const block_tags[] = {"[Replying", "[Quoting"};
        int skipped = 0;
        for (size_t b = 0; b < 2 && !skipped; b++) {
            size_t bl = strlen(block_tags[b]);
            if (n > bl && memcmp(s, block_tags[b], bl) == 0) {
                char end[32];
                size_t el = (size_t)snprintf(end, sizeof end, "[/%s]", block_tags[b] + 1);
                for (size_t i = tag; i + el <= n; i++) {
                    if (memcmp(s + i, end, el) == 0) {
                        tag = i + el;
                        break;
                    }
                }
                skipped = 1;
            }
        }
        s += tag;
        n -= tag;
    }
    *ps = s;
    *pn = n;
}

int sanitize_message(const char *text, size_t len, buf *out)
{
    /* Split into lines once. */
    size_t start_len = out->len;
    enum { TEXT, META_JSON_OPEN, META_JSON, META_PROSE, BLOCK } state = TEXT;
    size_t block = 0;
    buf kept;
    buf_init(&kept, len + 16);
    const char *p = text, *end = text + len;
    int first = 1;
    while (p < end || (p == end && first && len == 0)) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line l;
        if (first) {
            /* A timestamp may sit before a header on the first line. */
            size_t ts = timestamp_prefix(p, n);
            p += ts;
            n -= ts;
        }
        first = 0;
        trim(p, n, &l);
        int drop = 0, stop = 0;
        switch (state) {
        case META_JSON_OPEN:
            if (is(&l, "```json")) {
                state = META_JSON;
                drop = 1;
            } else {
                state = TEXT; /* a header without its block: the user's words */
            }
            break;
        case META_JSON:
            drop = 1;
            if (is(&l, "```"))
                state = TEXT;
            break;
        case META_PROSE:
            drop = 1;
            if (l.n == 0)
                state = TEXT;
            break;
        case BLOCK:
            drop = 1;
            if (starts(&l, blocks[block].close) ||
                (l.n >= strlen(blocks[block].close) &&
                 memcmp(l.s + l.n - strlen(blocks[block].close), blocks[block].close,
                        strlen(blocks[block].close)) == 0))
                state = TEXT;
            break;
        case TEXT:
            break;
        }
        if (!drop && state == TEXT) {
            for (size_t i = 0; i < sizeof tail_headers / sizeof *tail_headers; i++)
                if (is(&l, tail_headers[i]))
                    stop = 1;
            for (size_t i = 0; !drop && i < sizeof old_headers / sizeof *old_headers; i++)
                if (is(&l, old_headers[i])) {
                    const char *next = nl ? nl + 1 : end;
                    const char *nnl = memchr(next, '\n', (size_t)(end - next));
                    line nextl;
                    trim(next, nnl ? (size_t)(nnl - next) : (size_t)(end - next), &nextl);
                    if (is(&nextl, "```json")) {
                        drop = 1;
                        state = META_JSON_OPEN;
                    }
                }
            if (!drop && ends_with_marker(&l)) {
                const char *next = nl ? nl + 1 : end;
                const char *nnl = memchr(next, '\n', (size_t)(end - next));
                line nextl;
                trim(next, nnl ? (size_t)(nnl - next) : (size_t)(end - next), &nextl);
                drop = 1;
                state = is(&nextl, "```json") ? META_JSON_OPEN : META_PROSE;
            }
            for (size_t i = 0; !drop && i < sizeof blocks / sizeof *blocks; i++)
                if (starts(&l, blocks[i].open)) {
                    drop = 1;
                    block = i;
                    /* Opening and closing on one line. */
                    size_t cl = strlen(blocks[i].close);
                    if (!(l.n >= cl && memcmp(l.s + l.n - cl, blocks[i].close, cl) == 0))
                        state = BLOCK;
                }
            if (!drop && is(&l, "Context:")) { /* the active-memory plugin's header */
                const char *next = nl ? nl + 1 : end;
                const char *nnl = memchr(next, '\n', (size_t)(end - next));
                line nextl;
                trim(next, nnl ? (size_t)(nnl - next) : (size_t)(end - next), &nextl);
                drop = starts(&nextl, "<active_memory_plugin>");
            }
        }
        if (stop)
            break;
        if (!drop) {
            buf_append(&kept, l.raw, l.rawn);
            buf_putc(&kept, '\n');
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    if (buf_err(&kept)) {
        buf_cleanup(&kept);
        return MNEMO_NOMEM;
    }
    const char *s = kept.data ? kept.data : "";
    size_t n = kept.len;
    size_t ts = timestamp_prefix(s, n);
    s += ts;
    n -= ts;
    strip_leading_tags(&s, &n);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\t'))
        n--;
    buf_append(out, s, n);
    buf_cleanup(&kept);
    (void)start_len;
    return buf_err(out);
}
