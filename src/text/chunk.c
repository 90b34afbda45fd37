/*
 * chunk.c - line-based Markdown chunking (see chunk.h).
 *
 * The text becomes a list of units: whole lines, or pieces of lines longer
 * than a chunk. Units are grouped into entries (the whole file, or one entry
 * per bullet/heading in entry mode) and each entry is packed greedily into
 * chunks, each new chunk starting with the trailing units of the previous
 * one that fit in the overlap budget.
 *
 * Outside entry mode a chunk depends only on the units from where it
 * starts, so a stream (chunk_stream_feed) packs as lines come and drops
 * what lies before the next chunk's start: the same chunks as
 * chunk_markdown, which runs the same packing over the whole text at once.
 */
#include "text/chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"
#include "util/utf8.h"

typedef struct unit {
    int line;          /* 1-based */
    size_t off, len;   /* in the cleaned text */
    int q;             /* size in quarter tokens */
    int piece;         /* > 0 for the second and later pieces of a line */
    int blank;
} unit;

typedef struct line_info {
    size_t off, len; /* cleaned line in `clean` */
    int importance;
    size_t trig_off, trig_len; /* in `trig` */
} line_info;

typedef struct state {
    const chunk_opts *o;
    chunk_list *l;
    int maxq, overq; /* chunk and overlap sizes in quarter tokens */
    buf clean;       /* cleaned lines, back to back */
    buf trig;        /* trigger text of all lines */
    line_info *lines;
    size_t nlines, caplines;
    size_t line0;    /* lines dropped before lines[0] (a stream keeps the recent ones) */
    unit *units;
    size_t nunits, capunits;
    size_t start;    /* the unit the next chunk starts at (packing outside entry mode) */
} state;

struct chunk_stream {
    chunk_opts o;
    state st;
    buf tail; /* the start of a line whose end has not come yet */
};

void chunk_list_init(chunk_list *l)
{
    memset(l, 0, sizeof *l);
    buf_init(&l->text, 0);
}

void chunk_list_cleanup(chunk_list *l)
{
    free(l->items);
    buf_cleanup(&l->text);
    memset(l, 0, sizeof *l);
}

/* Size of S in quarter tokens: 4 per CJK character, 1 per other character. */
static int quarters(const char *s, size_t n)
{
    int q = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            q++;
            i++;
            continue;
        }
        int32_t cp;
        i += (size_t)utf8_decode(s + i, n - i, &cp);
        q += utf8_is_cjk(cp) ? 4 : 1;
    }
    return q;
}

int chunk_estimate(const char *s, size_t n) { return (quarters(s, n) + 3) / 4; }

/* ----------------------------------------------------------------------
 * Annotations
 * -------------------------------------------------------------------- */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

static int starts_ci(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        if (c != word[i])
            return 0;
    }
    return 1;
}

/* Parses "<!-- importance: N -->" or "<!-- trigger(s): a, b -->" in
 * [p, end) (the comment body, without delimiters). Returns 1 if it was one. */
static int parse_annotation(const char *p, const char *end, line_info *li, buf *trig)
{
    p = skip_ws(p, end);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (starts_ci(p, end, "importance")) {
        p = skip_ws(p + 10, end);
        if (p >= end || *p != ':')
            return 0;
        p = skip_ws(p + 1, end);
        int v = 0, digits = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 3) {
            v = v * 10 + (*p - '0');
            p++;
            digits++;
        }
        if (!digits || p != end)
            return 0;
        li->importance = v < 1 ? 1 : v > 10 ? 10 : v;
        return 1;
    }
    if (starts_ci(p, end, "trigger")) {
        p += 7;
        if (p < end && (*p == 's' || *p == 'S'))
            p++;
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return 0;
        p = skip_ws(p + 1, end);
        if (p >= end)
            return 1;
        if (li->trig_len) {
            buf_puts(trig, ", ");
            li->trig_len += 2;
        } else {
            li->trig_off = trig->len;
        }
        buf_append(trig, p, (size_t)(end - p));
        li->trig_len += (size_t)(end - p);
        return 1;
    }
    return 0;
}

/* Copies line [s, s+n) into st->clean without its annotations. */
static void clean_line(state *st, const char *s, size_t n, line_info *li)
{
    li->off = st->clean.len;
    const char *p = s, *end = s + n, *copied = s;
    while (p < end) {
        const char *open = memchr(p, '<', (size_t)(end - p));
        if (!open)
            break;
        if (end - open < 7 || memcmp(open, "<!--", 4) != 0) {
            p = open + 1;
            continue;
        }
        const char *close = NULL;
        for (const char *q = open + 4; q + 3 <= end; q++)
            if (q[0] == '-' && q[1] == '-' && q[2] == '>') {
                close = q;
                break;
            }
        if (!close)
            break;
        if (parse_annotation(open + 4, close, li, &st->trig)) {
            const char *cut = open;
            while (cut > copied && (cut[-1] == ' ' || cut[-1] == '\t'))
                cut--; /* drop the space before the annotation */
            buf_append(&st->clean, copied, (size_t)(cut - copied));
            copied = close + 3;
        }
        p = close + 3;
    }
    buf_append(&st->clean, copied, (size_t)(end - copied));
    /* Trailing whitespace left by a removed annotation goes too. */
    while (st->clean.len > li->off &&
           (st->clean.data[st->clean.len - 1] == ' ' || st->clean.data[st->clean.len - 1] == '\t'))
        st->clean.len--;
    li->len = st->clean.len - li->off;
}

/* ----------------------------------------------------------------------
 * Units
 * -------------------------------------------------------------------- */

static int add_unit(state *st, int line, size_t off, size_t len, int q, int piece)
{
    if (st->nunits == st->capunits) {
        size_t cap = st->capunits ? st->capunits * 2 : 256;
        unit *u = realloc(st->units, cap * sizeof *u);
        if (!u)
            return MNEMO_NOMEM;
        st->units = u;
        st->capunits = cap;
    }
    int blank = 1;
    for (size_t i = 0; i < len; i++) {
        char c = st->clean.data[off + i];
        if (c != ' ' && c != '\t') {
            blank = 0;
            break;
        }
    }
    st->units[st->nunits++] = (unit){line, off, len, q, piece, blank};
    return MNEMO_OK;
}

/* Splits line I into units of at most MAXQ quarter tokens. */
static int line_units(state *st, size_t i, int maxq)
{
    const line_info *li = &st->lines[i];
    const char *s = st->clean.data + li->off;
    int q = quarters(s, li->len) + 1; /* the newline */
    int line = (int)(st->line0 + i + 1);
    if (q <= maxq)
        return add_unit(st, line, li->off, li->len, q, 0);
    size_t pos = 0;
    int piece = 0;
    while (pos < li->len) {
        size_t start = pos;
        int pq = 0;
        while (pos < li->len) {
            int32_t cp;
            int len = utf8_decode(s + pos, li->len - pos, &cp);
            int w = (cp >= 0 && utf8_is_cjk(cp)) ? 4 : 1;
            if (pq + w > maxq && pos > start)
                break;
            pq += w;
            pos += (size_t)len;
        }
        if (add_unit(st, line, li->off + start, pos - start, pq, piece++))
            return MNEMO_NOMEM;
    }
    return MNEMO_OK;
}

/* ----------------------------------------------------------------------
 * Packing
 * -------------------------------------------------------------------- */

/* The line of unit U. */
static const line_info *line_of(const state *st, const unit *u)
{
    return &st->lines[(size_t)u->line - 1 - st->line0];
}

static int emit_chunk(state *st, size_t from, size_t to, int ent_importance, size_t ent_toff,
                      size_t ent_tlen)
{
    /* Trim blank units at both ends. */
    while (from < to && st->units[from].blank)
        from++;
    while (to > from && st->units[to - 1].blank)
        to--;
    if (from == to)
        return MNEMO_OK;
    chunk_list *l = st->l;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        chunk *c = realloc(l->items, cap * sizeof *c);
        if (!c)
            return MNEMO_NOMEM;
        l->items = c;
        l->cap = cap;
    }
    chunk *c = &l->items[l->n];
    memset(c, 0, sizeof *c);
    c->start_line = st->units[from].line;
    c->end_line = st->units[to - 1].line;
    c->text_off = l->text.len;
    for (size_t i = from; i < to; i++) {
        const unit *u = &st->units[i];
        if (i > from && !u->piece)
            buf_putc(&l->text, '\n');
        buf_append(&l->text, st->clean.data + u->off, u->len);
    }
    c->text_len = l->text.len - c->text_off;
    buf_putc(&l->text, 0);
    /* Annotations: the entry's in entry mode, else those of the lines. */
    int imp = ent_importance;
    c->trig_off = l->text.len;
    if (ent_tlen) {
        buf_append(&l->text, st->trig.data + ent_toff, ent_tlen);
    } else if (!st->o->entries) {
        int last = -1;
        for (size_t i = from; i < to; i++) {
            const line_info *li = line_of(st, &st->units[i]);
            if (st->units[i].line == last)
                continue;
            last = st->units[i].line;
            if (li->importance > imp)
                imp = li->importance;
            if (li->trig_len) {
                if (l->text.len > c->trig_off)
                    buf_puts(&l->text, ", ");
                buf_append(&l->text, st->trig.data + li->trig_off, li->trig_len);
            }
        }
    }
    c->trig_len = l->text.len - c->trig_off;
    buf_putc(&l->text, 0);
    c->importance = imp;
    if (buf_err(&l->text))
        return buf_err(&l->text);
    hash_hex(l->text.data + c->text_off, c->text_len, c->hash);
    l->n++;
    return MNEMO_OK;
}

int chunk_single(chunk_list *l, const char *text, size_t len, const char *hash)
{
    l->n = 0;
    buf_reset(&l->text);
    l->text.err = 0;
    if (!l->cap) {
        if (!(l->items = malloc(16 * sizeof *l->items)))
            return MNEMO_NOMEM;
        l->cap = 16;
    }
    chunk *c = &l->items[0];
    memset(c, 0, sizeof *c);
    c->start_line = c->end_line = 1;
    buf_append(&l->text, text, len);
    buf_putc(&l->text, 0);
    c->text_len = len;
    c->trig_off = l->text.len;
    buf_putc(&l->text, 0);
    snprintf(c->hash, sizeof c->hash, "%s", hash);
    if (buf_err(&l->text))
        return buf_err(&l->text);
    l->n = 1;
    return MNEMO_OK;
}

/* Packs units [from, to) of one entry into chunks. */
static int pack(state *st, size_t from, size_t to, int maxq, int overq, int imp, size_t toff,
                size_t tlen)
{
    size_t start = from;
    while (start < to) {
        size_t end = start;
        int q = 0;
        while (end < to && (end == start || q + st->units[end].q <= maxq)) {
            q += st->units[end].q;
            end++;
        }
        int rc = emit_chunk(st, start, end, imp, toff, tlen);
        if (rc)
            return rc;
        if (end >= to)
            break;
        /* Next chunk starts with the trailing units that fit the overlap. */
        size_t next = end;
        int oq = 0;
        while (next > start + 1 && oq + st->units[next - 1].q <= overq) {
            oq += st->units[next - 1].q;
            next--;
        }
        start = next;
    }
    return MNEMO_OK;
}

static int is_entry_start(const char *s, size_t n)
{
    if (n >= 2 && (s[0] == '-' || s[0] == '*') && (s[1] == ' ' || s[1] == '\t'))
        return 1;
    size_t h = 0;
    while (h < n && h < 7 && s[h] == '#')
        h++;
    return h >= 1 && h <= 6 && (h == n || s[h] == ' ' || s[h] == '\t');
}

static int is_fence(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && i < 3 && s[i] == ' ')
        i++;
    return n - i >= 3 &&
           ((s[i] == '`' && s[i + 1] == '`' && s[i + 2] == '`') ||
            (s[i] == '~' && s[i + 1] == '~' && s[i + 2] == '~'));
}

static void state_init(state *st, const chunk_opts *o, chunk_list *l)
{
    memset(st, 0, sizeof *st);
    st->o = o;
    st->l = l;
    buf_init(&st->clean, 0);
    buf_init(&st->trig, 0);
    int tokens = o->tokens < 8 ? 8 : o->tokens;
    int overlap = o->overlap < 0 ? 0 : o->overlap >= tokens ? tokens / 2 : o->overlap;
    st->maxq = tokens * 4;
    st->overq = overlap * 4;
}

static void state_cleanup(state *st)
{
    free(st->lines);
    free(st->units);
    buf_cleanup(&st->clean);
    buf_cleanup(&st->trig);
}

/* Adds line [s, s+n) (without its newline), cleaned of annotations. */
static int add_line(state *st, const char *s, size_t n)
{
    if (n && s[n - 1] == '\r')
        n--;
    if (st->nlines == st->caplines) {
        size_t cap = st->caplines ? st->caplines * 2 : 64;
        line_info *v = realloc(st->lines, cap * sizeof *v);
        if (!v)
            return MNEMO_NOMEM;
        st->lines = v;
        st->caplines = cap;
    }
    line_info *li = &st->lines[st->nlines++];
    memset(li, 0, sizeof *li);
    clean_line(st, s, n, li);
    return MNEMO_OK;
}

/* Adds the lines of TEXT[0..LEN) and their units. A last line without a
 * newline is a line only at the end of the text (LAST); before it, it is
 * kept in TAIL (NULL when TEXT is the whole text) until its end comes. */
static int add_text(state *st, const char *text, size_t len, int last, buf *tail)
{
    size_t first = st->nlines, pos = 0;
    int rc = MNEMO_OK;
    if (tail && tail->len) {
        const char *nl = memchr(text, '\n', len);
        size_t end = nl ? (size_t)(nl - text) : len;
        if ((rc = buf_append(tail, text, end)))
            return rc;
        if (!nl && !last)
            return MNEMO_OK;
        if ((rc = add_line(st, tail->data, tail->len)))
            return rc;
        buf_reset(tail);
        pos = nl ? end + 1 : len;
    }
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl && !last && tail) {
            if ((rc = buf_append(tail, text + pos, len - pos)))
                return rc;
            break;
        }
        size_t end = nl ? (size_t)(nl - text) : len;
        if ((rc = add_line(st, text + pos, end - pos)))
            return rc;
        pos = nl ? end + 1 : len;
    }
    if ((rc = buf_err(&st->clean)) || (rc = buf_err(&st->trig)))
        return rc;
    for (size_t i = first; i < st->nlines; i++)
        if ((rc = line_units(st, i, st->maxq)))
            return rc;
    return MNEMO_OK;
}

/* Packs the units from st->start into chunks, greedily, each next chunk
 * starting with the trailing units of the previous one that fit in the
 * overlap. Before the end of the text (!LAST) a chunk the units seen so far
 * do not fill waits: a later unit may still fit in it. */
static int pack_lines(state *st, int last)
{
    while (st->start < st->nunits) {
        size_t start = st->start, end = start;
        int q = 0;
        while (end < st->nunits && (end == start || q + st->units[end].q <= st->maxq)) {
            q += st->units[end].q;
            end++;
        }
        if (end >= st->nunits && !last)
            break;
        int rc = emit_chunk(st, start, end, 0, 0, 0);
        if (rc)
            return rc;
        if (end >= st->nunits) {
            st->start = end;
            break;
        }
        size_t next = end;
        int oq = 0;
        while (next > start + 1 && oq + st->units[next - 1].q <= st->overq) {
            oq += st->units[next - 1].q;
            next--;
        }
        st->start = next;
    }
    return MNEMO_OK;
}

/* Drops the units before st->start and the lines, cleaned text and
 * triggers only they used: no later chunk reaches back before it. */
static void compact(state *st)
{
    size_t s = st->start;
    if (!s)
        return;
    size_t drop = s < st->nunits ? (size_t)st->units[s].line - 1 - st->line0 : st->nlines;
    size_t coff = drop < st->nlines ? st->lines[drop].off : st->clean.len;
    size_t toff = st->trig.len;
    for (size_t i = drop; i < st->nlines; i++)
        if (st->lines[i].trig_len && st->lines[i].trig_off < toff)
            toff = st->lines[i].trig_off;
    st->nunits -= s;
    memmove(st->units, st->units + s, st->nunits * sizeof *st->units);
    for (size_t i = 0; i < st->nunits; i++)
        st->units[i].off -= coff;
    st->nlines -= drop;
    memmove(st->lines, st->lines + drop, st->nlines * sizeof *st->lines);
    for (size_t i = 0; i < st->nlines; i++) {
        st->lines[i].off -= coff;
        if (st->lines[i].trig_len)
            st->lines[i].trig_off -= toff;
    }
    st->line0 += drop;
    st->start = 0;
    if (coff) {
        memmove(st->clean.data, st->clean.data + coff, st->clean.len - coff);
        st->clean.len -= coff;
    }
    if (toff) {
        memmove(st->trig.data, st->trig.data + toff, st->trig.len - toff);
        st->trig.len -= toff;
    }
}

/* Entry mode: each entry (a bullet or heading outside code fences starts
 * one) packed apart, with the entry's importance and triggers. */
static int pack_entries(state *st)
{
    size_t ent = 0;
    int in_fence = 0, last_line = 0;
    for (size_t i = 0; i <= st->nunits; i++) {
        int starts = 0;
        if (i < st->nunits && st->units[i].line != last_line) {
            const line_info *li = line_of(st, &st->units[i]);
            const char *s = st->clean.data + li->off;
            last_line = st->units[i].line;
            if (is_fence(s, li->len))
                in_fence = !in_fence;
            else if (!in_fence && is_entry_start(s, li->len))
                starts = 1;
        }
        if (i == st->nunits || (starts && i > ent)) {
            int imp = 0;
            size_t toff = st->trig.len, tlen = 0;
            int prev = 0;
            for (size_t k = ent; k < i; k++) {
                const line_info *li = line_of(st, &st->units[k]);
                if (st->units[k].line == prev)
                    continue;
                prev = st->units[k].line;
                if (li->importance > imp)
                    imp = li->importance;
                if (li->trig_len) {
                    /* Gather the entry's triggers at the end of st->trig. */
                    if (tlen) {
                        buf_puts(&st->trig, ", ");
                        tlen += 2;
                    }
                    buf_reserve(&st->trig, li->trig_len);
                    if (buf_err(&st->trig))
                        return buf_err(&st->trig);
                    memmove(st->trig.data + st->trig.len, st->trig.data + li->trig_off,
                            li->trig_len);
                    st->trig.len += li->trig_len;
                    tlen += li->trig_len;
                }
            }
            int rc = pack(st, ent, i, st->maxq, st->overq, imp, toff, tlen);
            if (rc)
                return rc;
            ent = i;
        }
    }
    return MNEMO_OK;
}

int chunk_markdown(const char *text, size_t len, const chunk_opts *o, chunk_list *l)
{
    state st;
    state_init(&st, o, l);
    l->n = 0;
    buf_reset(&l->text);
    l->text.err = 0;
    int rc = add_text(&st, text, len, 1, NULL);
    if (!rc)
        rc = o->entries ? pack_entries(&st) : pack_lines(&st, 1);
    if (!rc && buf_err(&l->text))
        rc = buf_err(&l->text);
    state_cleanup(&st);
    return rc;
}

int chunk_stream_new(const chunk_opts *o, chunk_stream **out)
{
    *out = NULL;
    if (o->entries)
        return MNEMO_MISUSE;
    chunk_stream *cs = calloc(1, sizeof *cs);
    if (!cs)
        return MNEMO_NOMEM;
    cs->o = *o;
    state_init(&cs->st, &cs->o, NULL);
    buf_init(&cs->tail, 0);
    *out = cs;
    return MNEMO_OK;
}

int chunk_stream_feed(chunk_stream *cs, const char *text, size_t len, int last, chunk_list *l)
{
    state *st = &cs->st;
    st->l = l;
    int rc = add_text(st, text, len, last, &cs->tail);
    if (!rc)
        rc = pack_lines(st, last);
    if (!rc && buf_err(&l->text))
        rc = buf_err(&l->text);
    if (!rc)
        compact(st);
    return rc;
}

void chunk_stream_free(chunk_stream *cs)
{
    if (!cs)
        return;
    state_cleanup(&cs->st);
    buf_cleanup(&cs->tail);
    free(cs);
}

/* ----------------------------------------------------------------------
 * Parts: what one vector covers
 *
 * Agents write memory an entry at a time: a bullet of a log, a curated
 * fact, a transcript message, a paragraph. A query means one of them, and
 * a vector of a run of several scores that one by its share of the run
 * only, so each entry of a chunk is a part of its own: a list item with
 * the lines indented under it, a heading, a paragraph (lines with no blank
 * line between them), a fenced code block. An entry longer than max_chars
 * is cut into balanced runs of whole lines; when a chunk holds more than
 * CHUNK_MAX_PARTS of them, the neighbours that are shortest together are
 * joined until it does not.
 * -------------------------------------------------------------------- */

enum { L_BLANK, L_TEXT, L_ITEM, L_HEAD, L_FENCE };

typedef struct pline {
    size_t off, len;
    size_t chars; /* code points; 0 when blank */
    int indent;   /* leading columns, a tab counting 4 */
    int kind;
} pline;

/* What line S[0..N) is, and its indentation into *INDENT. */
static int line_kind(const char *s, size_t n, int *indent)
{
    size_t i = 0;
    int col = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) {
        col += s[i] == '\t' ? 4 : 1;
        i++;
    }
    *indent = col;
    while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (i == n)
        return L_BLANK;
    char c = s[i];
    if ((c == '-' || c == '*' || c == '+') && (i + 1 == n || s[i + 1] == ' ' || s[i + 1] == '\t'))
        return L_ITEM;
    if (c >= '0' && c <= '9') {
        size_t j = i;
        while (j < n && j - i < 9 && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j < n && (s[j] == '.' || s[j] == ')') && (j + 1 == n || s[j + 1] == ' '))
            return L_ITEM;
    }
    if (c == '#' && col < 4) {
        size_t j = i;
        while (j < n && s[j] == '#')
            j++;
        if (j - i <= 6 && (j == n || s[j] == ' ' || s[j] == '\t'))
            return L_HEAD;
    }
    if (n - i >= 3 && (memcmp(s + i, "```", 3) == 0 || memcmp(s + i, "~~~", 3) == 0))
        return L_FENCE;
    return L_TEXT;
}

typedef struct prun {
    size_t a, b;  /* lines, inclusive, non-blank at both ends */
    size_t chars; /* of its non-blank lines */
} prun;

/* Cuts run R of LS into K runs of whole lines, at the line ends nearest
 * to equal shares of its characters, appended to OUT[*N]. */
static void run_split(const pline *ls, prun r, size_t k, prun *out, size_t *n)
{
    size_t from = r.a, cum = 0; /* characters of R's lines before FROM */
    for (size_t i = 1; i < k && from < r.b; i++) {
        double goal = (double)r.chars * (double)i / (double)k;
        size_t j = from, c = cum + ls[from].chars; /* through line j */
        while (j < r.b && (double)(c + ls[j + 1].chars) <= goal)
            c += ls[++j].chars;
        if (j < r.b && (double)(c + ls[j + 1].chars) - goal < goal - (double)c)
            c += ls[++j].chars;
        if (j >= r.b)
            break;
        size_t e = j;
        while (e > from && ls[e].kind == L_BLANK)
            e--;
        out[(*n)++] = (prun){from, e, c - cum};
        cum = c;
        from = j + 1;
        while (from < r.b && ls[from].kind == L_BLANK)
            from++;
    }
    out[(*n)++] = (prun){from, r.b, r.chars - cum};
}

int chunk_parts(const char *text, size_t len, int max_chars, chunk_part *out)
{
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    pline *ls = malloc(n * sizeof *ls);
    prun *runs = ls ? malloc(n * sizeof *runs) : NULL;
    if (!runs) { /* one part then: the whole text */
        free(ls);
        return len ? (*out = (chunk_part){0, (int)n - 1, 0, len}, 1) : 0;
    }
    size_t pos = 0, all = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = memchr(text + pos, '\n', len - pos);
        size_t end = e ? (size_t)(e - text) : len;
        ls[i].off = pos;
        ls[i].len = end - pos;
        ls[i].kind = line_kind(text + pos, end - pos, &ls[i].indent);
        ls[i].chars = ls[i].kind == L_BLANK ? 0 : utf8_count(text + pos, ls[i].len);
        all += ls[i].chars;
        pos = end + 1;
    }
    /* The entries. */
    size_t nr = 0;
    int fence = 0, open = 0;
    for (size_t i = 0; i < n; i++) {
        const pline *l = &ls[i];
        if (l->kind == L_BLANK) {
            open &= fence; /* a blank line inside a code block is the block's */
            continue;
        }
        if (!fence) {
            const pline *f = open ? &ls[runs[nr - 1].a] : NULL;
            if (!f || (l->indent <= f->indent && (l->kind != L_TEXT || f->kind != L_TEXT))) {
                runs[nr++] = (prun){i, i, 0};
                open = 1;
            }
        }
        if (l->kind == L_FENCE)
            fence = !fence;
        runs[nr - 1].b = i;
        runs[nr - 1].chars += l->chars;
    }
    if (max_chars <= 0 && nr > 1) { /* one vector a chunk */
        runs[0].b = runs[nr - 1].b;
        runs[0].chars = all;
        nr = 1;
    }
    /* Long entries cut into runs of about max_chars. */
    size_t total = 0;
    for (size_t i = 0; i < nr; i++) {
        size_t k = max_chars > 0 ? (runs[i].chars + (size_t)max_chars / 2) / (size_t)max_chars : 1;
        total += k > 1 ? k : 1;
    }
    if (total > nr) {
        prun *cut = malloc(total * sizeof *cut);
        if (cut) {
            size_t m = 0;
            for (size_t i = 0; i < nr; i++) {
                size_t k = (runs[i].chars + (size_t)max_chars / 2) / (size_t)max_chars;
                if (k > 1 && runs[i].b > runs[i].a)
                    run_split(ls, runs[i], k, cut, &m);
                else
                    cut[m++] = runs[i];
            }
            free(runs);
            runs = cut;
            nr = m;
        }
    }
    /* At most CHUNK_MAX_PARTS: join the neighbours shortest together. */
    while (nr > CHUNK_MAX_PARTS) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < nr; i++)
            if (runs[i].chars + runs[i + 1].chars < runs[best].chars + runs[best + 1].chars)
                best = i;
        runs[best].b = runs[best + 1].b;
        runs[best].chars += runs[best + 1].chars;
        memmove(&runs[best + 1], &runs[best + 2], (nr - best - 2) * sizeof *runs);
        nr--;
    }
    for (size_t i = 0; i < nr; i++) {
        const pline *a = &ls[runs[i].a], *b = &ls[runs[i].b];
        out[i] = (chunk_part){(int)runs[i].a, (int)runs[i].b, a->off, b->off + b->len - a->off};
    }
    free(ls);
    free(runs);
    return (int)nr;
}
