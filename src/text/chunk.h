/*
 * chunk.h - line-based Markdown chunking.
 *
 * Chunks hold about `tokens` tokens (a CJK character counts one token, other
 * text four characters a token) and overlap the previous chunk by about
 * `overlap` tokens of whole lines. Lines longer than a chunk are cut at
 * code-point boundaries. In entry mode (MEMORY.md, USER.md) each top-level
 * "- " or "* " bullet and each heading starts an entry, and entries never
 * share a chunk. Annotations <!-- importance: N --> and
 * <!-- trigger: a, b --> are parsed, kept with the chunk and removed from
 * its text; line numbers are unaffected.
 */
#ifndef MNEMO_CHUNK_H
#define MNEMO_CHUNK_H

#include <stddef.h>

#include "util/buf.h"
#include "util/hash.h"

typedef struct chunk {
    int start_line, end_line; /* 1-based, inclusive */
    size_t text_off, text_len; /* in chunk_list.text */
    size_t trig_off, trig_len; /* comma-separated trigger phrases, may be empty */
    int importance;            /* 1..10, 0 when not annotated */
    char hash[HASH_HEX_LEN + 1];
} chunk;

typedef struct chunk_list {
    chunk *items;
    size_t n, cap;
    buf text; /* chunk texts and triggers, NUL-separated */
} chunk_list;

typedef struct chunk_opts {
    int tokens;  /* target size; >= 8 */
    int overlap; /* < tokens */
    int entries; /* entry mode */
} chunk_opts;

void chunk_list_init(chunk_list *l);
void chunk_list_cleanup(chunk_list *l);

/* Chunks TEXT (valid UTF-8) into L, which is cleared first.
 * Returns MNEMO_OK or MNEMO_NOMEM. */
int chunk_markdown(const char *text, size_t len, const chunk_opts *o, chunk_list *l);

/* A chunker fed a text in pieces, for a file too large to hold at once
 * (not in entry mode, whose entries carry annotations gathered from their
 * last lines). It gives the chunks chunk_markdown gives for the whole text,
 * with the same lines and hashes, wherever the pieces end, and keeps only
 * the lines from the start of the chunk being packed (and the start of a
 * line whose end has not come). */
typedef struct chunk_stream chunk_stream;

/* A stream chunking as O says (copied). MNEMO_NOMEM, or MNEMO_MISUSE in
 * entry mode. Freed with chunk_stream_free. */
int chunk_stream_new(const chunk_opts *o, chunk_stream **out);

/* Feeds TEXT[0..LEN), the next bytes of the text (valid UTF-8 as a whole;
 * a piece may end anywhere, a line is chunked once its end has come), and
 * appends to L the chunks now complete (L is not cleared). LAST: the text
 * ends here, every chunk is given. MNEMO_OK or MNEMO_NOMEM. */
int chunk_stream_feed(chunk_stream *cs, const char *text, size_t len, int last, chunk_list *l);

/* Accepts NULL. */
void chunk_stream_free(chunk_stream *cs);

/* Sets L to one chunk, line 1, of TEXT[0..LEN) whose hash is HASH (a file
 * that is not text: its label, and a hash of its content). */
int chunk_single(chunk_list *l, const char *text, size_t len, const char *hash);

/* A run of whole lines of a chunk that one vector covers. */
typedef struct chunk_part {
    int first, last; /* 0-based line indices in the chunk's text, inclusive */
    size_t off, len; /* the bytes of those lines */
} chunk_part;

#define CHUNK_MAX_PARTS 64

/* Splits a chunk's TEXT[0..LEN) into the runs of whole lines that one
 * vector each covers: its entries (a list item with the lines indented
 * under it, a heading, a paragraph, a fenced code block), an entry of more
 * than MAX_CHARS characters cut into round(chars / MAX_CHARS) runs at the
 * line ends nearest to equal shares, and, past CHUNK_MAX_PARTS, the
 * neighbours shortest together joined. Runs never start or end with a blank
 * line. MAX_CHARS <= 0 gives one run. The split depends only on the text,
 * so the runs embedded at index time are found again at search time. Fills
 * OUT (CHUNK_MAX_PARTS entries), returns the count (0 for a text of blank
 * lines only). */
int chunk_parts(const char *text, size_t len, int max_chars, chunk_part *out);

/* Estimated tokens of S. */
int chunk_estimate(const char *s, size_t n);

static inline const char *chunk_text(const chunk_list *l, const chunk *c)
{
    return l->text.data + c->text_off;
}

#endif
