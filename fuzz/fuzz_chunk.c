/*
 * fuzz_chunk.c - libFuzzer harness for the chunker: arbitrary (repaired)
 * text in both modes and several sizes. Chunks must have valid, ordered,
 * in-range line numbers and valid UTF-8 text; a chunk's parts (what its
 * vectors cover) runs of its lines in order, apart, each starting and ending
 * on a line that is not blank, at most CHUNK_MAX_PARTS. Outside entry mode,
 * the text fed to a stream in pieces (of sizes from the input) gives the
 * same chunks.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/chunk.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int blank_line(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

static void check_parts(const char *text, size_t len, int max_chars)
{
    chunk_part p[CHUNK_MAX_PARTS];
    int n = chunk_parts(text, len, max_chars, p), last = -1;
    if (n < 0 || n > CHUNK_MAX_PARTS)
        abort();
    for (int i = 0; i < n; i++) {
        if (p[i].first <= last || p[i].last < p[i].first || p[i].off + p[i].len > len ||
            p[i].len == 0 || (p[i].off && text[p[i].off - 1] != '\n') ||
            (p[i].off + p[i].len < len && text[p[i].off + p[i].len] != '\n'))
            abort();
        const char *nl = memchr(text + p[i].off, '\n', p[i].len);
        size_t first = nl ? (size_t)(nl - text) - p[i].off : p[i].len;
        if (blank_line(text + p[i].off, first))
            abort();
        last = p[i].last;
    }
}

/* Whether TEXT fed to a stream in pieces of 1 + PIECE * k % 97 bytes
 * gives the chunks of L (the whole text's). */
static void check_stream(const buf *text, const chunk_opts *o, const chunk_list *l,
                         unsigned piece)
{
    chunk_stream *cs;
    if (chunk_stream_new(o, &cs))
        abort();
    chunk_list b;
    chunk_list_init(&b);
    size_t got = 0, pos = 0;
    for (unsigned k = 1;; k++) {
        size_t n = 1 + (piece * k) % 97;
        if (n > text->len - pos)
            n = text->len - pos;
        int last = pos + n == text->len;
        b.n = 0;
        buf_reset(&b.text);
        if (chunk_stream_feed(cs, text->data + pos, n, last, &b))
            abort();
        for (size_t i = 0; i < b.n; i++, got++) {
            if (got >= l->n)
                abort();
            const chunk *x = &l->items[got], *y = &b.items[i];
            if (x->start_line != y->start_line || x->end_line != y->end_line ||
                x->importance != y->importance || strcmp(x->hash, y->hash) != 0 ||
                x->text_len != y->text_len || x->trig_len != y->trig_len ||
                memcmp(chunk_text(l, x), chunk_text(&b, y), x->text_len) != 0 ||
                memcmp(l->text.data + x->trig_off, b.text.data + y->trig_off, x->trig_len) != 0)
                abort();
        }
        pos += n;
        if (last)
            break;
    }
    if (got != l->n)
        abort();
    chunk_list_cleanup(&b);
    chunk_stream_free(cs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    buf text;
    buf_init(&text, 0);
    if (utf8_repair(&text, (const char *)data + 2, size - 2)) {
        buf_cleanup(&text);
        return 0;
    }
    int lines = 1;
    for (size_t i = 0; i < text.len; i++)
        lines += text.data[i] == '\n';
    chunk_opts o = {8 + data[0] % 64, data[1] % 16, data[0] & 1};
    chunk_list l;
    chunk_list_init(&l);
    if (chunk_markdown(text.data ? text.data : "", text.len, &o, &l) == 0) {
        for (size_t i = 0; i < l.n; i++) {
            const chunk *c = &l.items[i];
            if (c->start_line < 1 || c->end_line < c->start_line || c->end_line > lines ||
                !utf8_valid(chunk_text(&l, c), c->text_len) || c->text_len == 0 ||
                c->importance < 0 || c->importance > 10)
                abort();
            if (i > 0 && c->start_line < l.items[i - 1].start_line)
                abort();
            check_parts(chunk_text(&l, c), c->text_len, 1 + data[1] * 7);
        }
        if (!o.entries && text.len)
            check_stream(&text, &o, &l, data[1]);
    }
    chunk_list_cleanup(&l);
    buf_cleanup(&text);
    return 0;
}
