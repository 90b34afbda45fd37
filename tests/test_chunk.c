/*
 * test_chunk.c - line ranges, overlap, CJK sizing, long lines, entry mode
 * and annotations.
 */
#include <stdio.h>
#include <stdlib.h>

#include "text/chunk.h"
#include "test.h"
#include "util/utf8.h"

static void run(const char *text, int tokens, int overlap, int entries, chunk_list *l)
{
    chunk_list_init(l);
    chunk_opts o = {tokens, overlap, entries};
    ASSERT_OK(chunk_markdown(text, strlen(text), &o, l));
}

TEST(chunk_line_ranges_and_overlap)
{
    /* 100 lines of 39 characters + newline = 10 tokens each. */
    buf b;
    buf_init(&b, 0);
    for (int i = 1; i <= 100; i++)
        buf_printf(&b, "line %03d abcdefghijklmnopqrstuvwxyz012\n", i);
    chunk_list l;
    run(b.data, 100, 20, 0, &l);
    ASSERT(l.n > 1);
    ASSERT_EQ(l.items[0].start_line, 1);
    ASSERT_EQ(l.items[0].end_line, 10);
    /* The next chunk repeats the last two lines (20 tokens). */
    ASSERT_EQ(l.items[1].start_line, 9);
    ASSERT_EQ(l.items[1].end_line, 18);
    ASSERT_EQ(l.items[l.n - 1].end_line, 100);
    for (size_t i = 0; i < l.n; i++) {
        const chunk *c = &l.items[i];
        ASSERT(chunk_estimate(chunk_text(&l, c), c->text_len) <= 100);
        /* Text is exactly the lines it claims. */
        char want[64];
        snprintf(want, sizeof want, "line %03d ", c->start_line);
        ASSERT(strncmp(chunk_text(&l, c), want, strlen(want)) == 0);
        ASSERT(i == 0 || c->start_line < l.items[i - 1].end_line + 1);
    }
    chunk_list_cleanup(&l);
    buf_cleanup(&b);
}

TEST(chunk_cjk_counts_one_token_per_character)
{
    ASSERT_EQ(chunk_estimate("数据库迁移", strlen("数据库迁移")), 5);
    ASSERT_EQ(chunk_estimate("abcdefgh", 8), 2);
    /* 30 lines of 20 CJK characters: 21 tokens a line, 4 lines a chunk. */
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 30; i++)
        buf_puts(&b, "数据库迁移数据库迁移数据库迁移数据库迁移\n");
    chunk_list l;
    run(b.data, 90, 0, 0, &l);
    ASSERT_EQ(l.items[0].start_line, 1);
    ASSERT_EQ(l.items[0].end_line, 4);
    ASSERT_EQ(l.items[1].start_line, 5);
    chunk_list_cleanup(&l);
    buf_cleanup(&b);
}

TEST(chunk_long_line_split_at_code_points)
{
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "first\n");
    for (int i = 0; i < 1000; i++)
        buf_puts(&b, "日本語");
    buf_puts(&b, "\nlast\n");
    chunk_list l;
    run(b.data, 400, 50, 0, &l);
    int pieces = 0;
    for (size_t i = 0; i < l.n; i++) {
        const chunk *c = &l.items[i];
        ASSERT(utf8_valid(chunk_text(&l, c), c->text_len));
        ASSERT(chunk_estimate(chunk_text(&l, c), c->text_len) <= 401);
        if (c->start_line == 2 && c->end_line == 2)
            pieces++;
    }
    ASSERT(pieces >= 6); /* 3000 characters in pieces of at most 400 */
    ASSERT_EQ(l.items[0].start_line, 1);
    ASSERT_EQ(l.items[l.n - 1].end_line, 3);
    chunk_list_cleanup(&l);
    buf_cleanup(&b);
}

TEST(chunk_entries_never_merge)
{
    const char *md = "# Memory\n"
                     "\n"
                     "## Infra\n"
                     "- gateway runs on atlas\n"
                     "  - sub bullet stays with its entry\n"
                     "- second entry\n"
                     "continuation line\n"
                     "```\n"
                     "- not an entry inside a code fence\n"
                     "```\n"
                     "* star bullet\n";
    chunk_list l;
    run(md, 400, 80, 1, &l);
    ASSERT_EQ(l.n, 5);
    ASSERT_STR_EQ(chunk_text(&l, &l.items[0]), "# Memory");
    ASSERT_STR_EQ(chunk_text(&l, &l.items[1]), "## Infra");
    ASSERT_STR_EQ(chunk_text(&l, &l.items[2]),
                  "- gateway runs on atlas\n  - sub bullet stays with its entry");
    ASSERT_EQ(l.items[2].start_line, 4);
    ASSERT_EQ(l.items[2].end_line, 5);
    ASSERT_EQ(l.items[3].start_line, 6);
    ASSERT_EQ(l.items[3].end_line, 10);
    ASSERT_STR_EQ(chunk_text(&l, &l.items[4]), "* star bullet");
    chunk_list_cleanup(&l);
    /* The same text as a daily note is one chunk. */
    run(md, 400, 80, 0, &l);
    ASSERT_EQ(l.n, 1);
    chunk_list_cleanup(&l);
}

TEST(chunk_large_entry_is_split_within_itself)
{
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "- big entry\n");
    for (int i = 0; i < 50; i++)
        buf_puts(&b, "  more text about the same entry, line after line.\n");
    buf_puts(&b, "- next entry\n");
    chunk_list l;
    run(b.data, 100, 20, 1, &l);
    ASSERT(l.n >= 3);
    ASSERT_STR_EQ(chunk_text(&l, &l.items[l.n - 1]), "- next entry");
    for (size_t i = 0; i + 1 < l.n; i++)
        ASSERT(l.items[i].end_line <= 51);
    chunk_list_cleanup(&l);
    buf_cleanup(&b);
}

TEST(chunk_annotations_parsed_and_stripped)
{
    const char *md = "- Deploys happen Tuesdays <!-- importance: 9 --> <!-- trigger: deploy, "
                     "release day -->\n"
                     "- Plain entry <!-- a normal comment -->\n"
                     "- Bad <!-- importance: high -->\n"
                     "- Clamped <!-- Importance : 42 -->\n";
    chunk_list l;
    run(md, 400, 80, 1, &l);
    ASSERT_EQ(l.n, 4);
    ASSERT_STR_EQ(chunk_text(&l, &l.items[0]), "- Deploys happen Tuesdays");
    ASSERT_EQ(l.items[0].importance, 9);
    char trig[128];
    snprintf(trig, sizeof trig, "%.*s", (int)l.items[0].trig_len, l.text.data + l.items[0].trig_off);
    ASSERT_STR_EQ(trig, "deploy, release day");
    ASSERT_STR_EQ(chunk_text(&l, &l.items[1]), "- Plain entry <!-- a normal comment -->");
    ASSERT_EQ(l.items[1].importance, 0);
    ASSERT_EQ(l.items[1].trig_len, 0);
    ASSERT_STR_EQ(chunk_text(&l, &l.items[2]), "- Bad <!-- importance: high -->");
    ASSERT_EQ(l.items[3].importance, 10);
    chunk_list_cleanup(&l);
}

TEST(chunk_hash_and_empty_input)
{
    chunk_list l;
    run("", 400, 80, 0, &l);
    ASSERT_EQ(l.n, 0);
    chunk_list_cleanup(&l);
    run("\n\n   \n\t\n", 400, 80, 0, &l);
    ASSERT_EQ(l.n, 0);
    chunk_list_cleanup(&l);
    run("\n\nhello\r\nworld\n\n", 400, 80, 0, &l);
    ASSERT_EQ(l.n, 1);
    ASSERT_EQ(l.items[0].start_line, 3);
    ASSERT_EQ(l.items[0].end_line, 4);
    ASSERT_STR_EQ(chunk_text(&l, &l.items[0]), "hello\nworld");
    char h1[33];
    memcpy(h1, l.items[0].hash, 33);
    ASSERT_EQ(strlen(h1), 32);
    chunk_list_cleanup(&l);
    run("hello\nworld!\n", 400, 80, 0, &l);
    ASSERT(strcmp(h1, l.items[0].hash) != 0);
    chunk_list_cleanup(&l);
}

/* The lines of part P of TEXT, as a string (static buffer). */
static const char *part_text(const char *text, const chunk_part *p)
{
    static char out[4096];
    snprintf(out, sizeof out, "%.*s", (int)p->len, text + p->off);
    return out;
}

TEST(chunk_parts_balanced_runs_of_whole_lines)
{
    /* One paragraph of 12 lines of 99 characters: 1,188 characters, at 400
     * a part 3 parts of 4 lines each, cut at line ends, covering every
     * line once. */
    buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 12; i++)
        buf_printf(&b, "%s%02d %094d", i ? "\n" : "", i, 0);
    chunk_part p[CHUNK_MAX_PARTS];
    int n = chunk_parts(b.data, b.len, 400, p);
    ASSERT_EQ(n, 3);
    int next = 0;
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(p[i].first, next);
        ASSERT_EQ(p[i].last - p[i].first + 1, 4);
        next = p[i].last + 1;
        const char *t = part_text(b.data, &p[i]);
        char want[8];
        snprintf(want, sizeof want, "%02d ", p[i].first);
        ASSERT(strncmp(t, want, 3) == 0);
        ASSERT(t[p[i].len - 1] == '0'); /* ends at a line end, no newline */
    }
    ASSERT_EQ(next, 12);
    /* Rounded: 1,188 / 700 is 1.7, two parts; / 2,000 one; 0 one. */
    ASSERT_EQ(chunk_parts(b.data, b.len, 700, p), 2);
    ASSERT_EQ(p[0].last, 5);
    ASSERT_EQ(chunk_parts(b.data, b.len, 2000, p), 1);
    ASSERT_EQ(p[0].first, 0);
    ASSERT_EQ(p[0].last, 11);
    ASSERT_EQ(p[0].len, b.len);
    ASSERT_EQ(chunk_parts(b.data, b.len, 0, p), 1);
    ASSERT_EQ(p[0].len, b.len);
    /* Never more parts than lines. */
    ASSERT_EQ(chunk_parts(b.data, b.len, 10, p), 12);
    /* 100 one-line entries: at most CHUNK_MAX_PARTS, the neighbours that
     * are shortest together joined, every line in one part, in order. */
    buf_reset(&b);
    for (int i = 0; i < 100; i++)
        buf_printf(&b, "- item %d%s\n", i, i % 10 == 0 ? " with a much longer text than the rest" : "");
    n = chunk_parts(b.data, b.len, 350, p);
    ASSERT_EQ(n, CHUNK_MAX_PARTS);
    ASSERT_EQ(p[0].first, 0);
    ASSERT_EQ(p[0].last, 0); /* the long ones stay alone */
    ASSERT_EQ(p[n - 1].last, 99);
    for (int i = 1; i < n; i++)
        ASSERT_EQ(p[i].first, p[i - 1].last + 1);
    for (int i = 0; i < n; i++)
        if (p[i].first % 10 == 0)
            ASSERT_EQ(p[i].last, p[i].first);
    buf_cleanup(&b);
}

TEST(chunk_parts_entries)
{
    chunk_part p[CHUNK_MAX_PARTS];
    /* A daily log: each bullet a part, the lines indented under a bullet
     * with it, a heading and a paragraph each one part, numbered items
     * too. */
    const char *t = "# 2025-03-06 (Thu)\n"
                    "\n"
                    "- 08:43 lint rules tightened, 70 warnings to fix\n"
                    "- 12:08 Mrs. Okafor will walk our beagle while we're abroad\n"
                    "- 13:48 ideas for checkout v3\n"
                    "  - batch the ledger writes\n"
                    "    continued under the sub-item\n"
                    "* 14:43 a new kettle arrived\n"
                    "\n"
                    "A paragraph wrapped\n"
                    "over two lines.\n"
                    "1. first step\n"
                    "2) second step\n"
                    "+ plus item\n";
    int n = chunk_parts(t, strlen(t), 350, p);
    ASSERT_EQ(n, 9);
    ASSERT_STR_EQ(part_text(t, &p[0]), "# 2025-03-06 (Thu)");
    ASSERT_STR_EQ(part_text(t, &p[1]), "- 08:43 lint rules tightened, 70 warnings to fix");
    ASSERT_STR_EQ(part_text(t, &p[2]), "- 12:08 Mrs. Okafor will walk our beagle while we're abroad");
    ASSERT_EQ(p[2].first, 3);
    ASSERT_EQ(p[2].last, 3);
    ASSERT_STR_EQ(part_text(t, &p[3]), "- 13:48 ideas for checkout v3\n  - batch the ledger writes\n"
                                       "    continued under the sub-item");
    ASSERT_STR_EQ(part_text(t, &p[4]), "* 14:43 a new kettle arrived");
    ASSERT_STR_EQ(part_text(t, &p[5]), "A paragraph wrapped\nover two lines.");
    ASSERT_STR_EQ(part_text(t, &p[6]), "1. first step");
    ASSERT_STR_EQ(part_text(t, &p[7]), "2) second step");
    ASSERT_STR_EQ(part_text(t, &p[8]), "+ plus item");
    /* A fenced block is one entry, blank lines and markers inside it too;
     * not a marker: "-x", "#tag", "3.5 litres". */
    const char *f = "- run this:\n"
                    "  ```\n"
                    "  make\n"
                    "\n"
                    "  - not an item\n"
                    "  ```\n"
                    "```sh\n"
                    "# not a heading\n"
                    "```\n"
                    "-x is a flag\n"
                    "#tag and 3.5 litres\n";
    n = chunk_parts(f, strlen(f), 350, p);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(p[0].first, 0);
    ASSERT_EQ(p[0].last, 5);
    ASSERT_EQ(p[1].first, 6);
    ASSERT_EQ(p[1].last, 8);
    ASSERT_STR_EQ(part_text(f, &p[2]), "-x is a flag\n#tag and 3.5 litres");
    /* vectorChars 0: one vector a chunk, as before entries. */
    ASSERT_EQ(chunk_parts(t, strlen(t), 0, p), 1);
    ASSERT_EQ(p[0].first, 0);
    ASSERT_EQ(p[0].last, 13);
    /* The split depends only on the text: the same parts again. */
    chunk_part q[CHUNK_MAX_PARTS];
    n = chunk_parts(t, strlen(t), 350, p);
    ASSERT_EQ(chunk_parts(t, strlen(t), 350, q), n);
    ASSERT(memcmp(p, q, (size_t)n * sizeof *p) == 0);
}

TEST(chunk_parts_blank_lines_and_long_lines)
{
    chunk_part p[CHUNK_MAX_PARTS];
    /* Blank lines never start or end a part, and a text of blank lines has
     * none. */
    const char *t = "\n\n# Heading\n\naaaa aaaa aaaa\n\n\nbbbb bbbb bbbb\n\n";
    int n = chunk_parts(t, strlen(t), 20, p);
    ASSERT_EQ(n, 3);
    ASSERT_STR_EQ(part_text(t, &p[0]), "# Heading");
    ASSERT_EQ(p[0].first, 2);
    ASSERT_STR_EQ(part_text(t, &p[1]), "aaaa aaaa aaaa");
    ASSERT_STR_EQ(part_text(t, &p[2]), "bbbb bbbb bbbb");
    ASSERT_EQ(p[2].first, 7);
    ASSERT_EQ(p[2].last, 7);
    ASSERT_EQ(chunk_parts(t, strlen(t), 0, p), 1);
    ASSERT_STR_EQ(part_text(t, &p[0]), "# Heading\n\naaaa aaaa aaaa\n\n\nbbbb bbbb bbbb");
    ASSERT_EQ(chunk_parts("\n \n\t\n", 5, 100, p), 0);
    ASSERT_EQ(chunk_parts("", 0, 100, p), 0);
    /* A line longer than a part is a part of its own, never cut. */
    buf b;
    buf_init(&b, 0);
    buf_puts(&b, "short\n");
    for (int i = 0; i < 500; i++)
        buf_putc(&b, 'x');
    buf_puts(&b, "\nshort again");
    n = chunk_parts(b.data, b.len, 100, p);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(p[1].first, 1);
    ASSERT_EQ(p[1].last, 1);
    ASSERT_EQ(p[1].len, 500);
    /* Characters, not bytes: a paragraph of 300 CJK characters (900
     * bytes) is one part of 350 characters. */
    buf_reset(&b);
    for (int i = 0; i < 300; i++)
        buf_puts(&b, i % 30 == 29 ? "\xe6\x97\xa5\n" : "\xe6\x97\xa5");
    ASSERT_EQ(chunk_parts(b.data, b.len, 350, p), 1);
    ASSERT_EQ(chunk_parts(b.data, b.len, 100, p), 3);
    buf_cleanup(&b);
}

/* A text of every kind of line the chunker treats apart: words, blank
 * lines, CRLF ends, annotations, lines longer than a chunk, CJK; SEED
 * picks them. No newline at its end when SEED is odd. */
static void mixed_text(buf *b, unsigned seed, int lines)
{
    static const char *const words[] = {"heron", "deploy", "the", "gateway", "rollback",
                                        "kafka", "数据库", "迁移", "note", "x"};
    unsigned r = seed * 2654435761u + 1;
    for (int i = 0; i < lines; i++) {
        r = r * 1103515245u + 12345u;
        unsigned k = (r >> 16) % 16;
        if (k == 0) {
            buf_puts(b, "\n");
            continue;
        }
        int n = k == 1 ? 150 : 1 + (int)((r >> 8) % 12); /* k == 1: longer than a chunk */
        if (k == 2)
            buf_puts(b, "- ");
        for (int w = 0; w < n; w++) {
            r = r * 1103515245u + 12345u;
            buf_printf(b, "%s%s", w ? " " : "", words[(r >> 16) % 10]);
        }
        if (k == 3)
            buf_printf(b, " <!-- importance: %u -->", 1 + (r >> 20) % 10);
        if (k == 4)
            buf_printf(b, " <!-- trigger: w%u, v%u -->", (r >> 12) % 50, i);
        buf_puts(b, k == 5 ? "\r\n" : "\n");
    }
    if (seed % 2)
        buf_puts(b, "a last line without its newline");
}

/* Chunks TEXT as a stream in pieces of PIECE bytes (0: random sizes). */
static void run_stream(const buf *text, int tokens, int overlap, size_t piece, chunk_list *out)
{
    chunk_opts o = {tokens, overlap, 0};
    chunk_stream *cs;
    ASSERT_OK(chunk_stream_new(&o, &cs));
    chunk_list_init(out);
    chunk_list batch;
    chunk_list_init(&batch);
    unsigned r = (unsigned)piece + 7;
    for (size_t pos = 0;;) {
        r = r * 1103515245u + 12345u;
        size_t n = piece ? piece : 1 + (r >> 16) % 300;
        if (n > text->len - pos)
            n = text->len - pos;
        int last = pos + n == text->len;
        batch.n = 0;
        buf_reset(&batch.text);
        ASSERT_OK(chunk_stream_feed(cs, text->data + pos, n, last, &batch));
        /* Each batch's chunks, copied as the store would write them. */
        for (size_t i = 0; i < batch.n; i++) {
            chunk c = batch.items[i];
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 64;
                out->items = realloc(out->items, out->cap * sizeof *out->items);
                ASSERT(out->items != NULL);
            }
            c.text_off = out->text.len;
            buf_append(&out->text, chunk_text(&batch, &batch.items[i]), c.text_len);
            buf_putc(&out->text, 0);
            c.trig_off = out->text.len;
            buf_append(&out->text, batch.text.data + batch.items[i].trig_off, c.trig_len);
            buf_putc(&out->text, 0);
            out->items[out->n++] = c;
        }
        pos += n;
        if (last)
            break;
    }
    ASSERT_OK(buf_err(&out->text));
    chunk_list_cleanup(&batch);
    chunk_stream_free(cs);
}

static void same_chunks(const chunk_list *a, const chunk_list *b)
{
    ASSERT_EQ(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const chunk *x = &a->items[i], *y = &b->items[i];
        ASSERT_EQ(x->start_line, y->start_line);
        ASSERT_EQ(x->end_line, y->end_line);
        ASSERT_EQ(x->importance, y->importance);
        ASSERT_STR_EQ(x->hash, y->hash);
        ASSERT_EQ(x->text_len, y->text_len);
        ASSERT(memcmp(chunk_text(a, x), chunk_text(b, y), x->text_len) == 0);
        ASSERT_EQ(x->trig_len, y->trig_len);
        ASSERT(memcmp(a->text.data + x->trig_off, b->text.data + y->trig_off, x->trig_len) == 0);
    }
}

TEST(chunk_stream_gives_the_chunks_of_the_whole_text)
{
    static const int sizes[][2] = {{400, 80}, {32, 8}, {8, 0}, {100, 99}};
    for (unsigned seed = 0; seed < 6; seed++) {
        buf text;
        buf_init(&text, 0);
        mixed_text(&text, seed, 600);
        ASSERT(utf8_valid(text.data, text.len));
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            chunk_list whole;
            chunk_list_init(&whole);
            chunk_opts o = {sizes[s][0], sizes[s][1], 0};
            ASSERT_OK(chunk_markdown(text.data, text.len, &o, &whole));
            ASSERT(whole.n > 1);
            static const size_t pieces[] = {0, 1, 7, 4096, 1 << 20};
            for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
                chunk_list streamed;
                run_stream(&text, sizes[s][0], sizes[s][1], pieces[p], &streamed);
                same_chunks(&whole, &streamed);
                chunk_list_cleanup(&streamed);
            }
            chunk_list_cleanup(&whole);
        }
        buf_cleanup(&text);
    }
    /* An empty text, and one of blank lines: no chunk either way. */
    buf empty;
    buf_init(&empty, 0);
    buf_puts(&empty, "\n\n  \n");
    chunk_list l;
    run_stream(&empty, 400, 80, 1, &l);
    ASSERT_EQ(l.n, 0);
    chunk_list_cleanup(&l);
    buf_cleanup(&empty);
    /* Entry mode gathers annotations from an entry's last lines: no stream. */
    chunk_opts eo = {400, 80, 1};
    chunk_stream *cs = NULL;
    ASSERT_EQ(chunk_stream_new(&eo, &cs), MNEMO_MISUSE);
    ASSERT(cs == NULL);
}
