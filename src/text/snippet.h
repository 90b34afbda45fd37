/*
 * snippet.h - passages: the windows of whole lines that results show.
 *
 * A chunk is an index unit of about 400 tokens; what a result shows is a
 * passage of at most snippetChars characters. The answer to a question is
 * often not the line that shares its words but the line after it (the
 * reply in a conversation, the body under a heading), so a passage starts
 * at its line and runs on, and is scored by where its matches are:
 *
 *   window   BM25 of the passage, line k counting max(0.3, 0.7^k): matches
 *            at the top count fully, the lines they lead into less
 *   context  BM25 of the passage with two lines either side (a question
 *            just above, a reply just below)
 *   x        0.7 * window + 0.3 * context, both divided by the query's IDF
 *            mass as the chunk's text score is
 *
 * A chunk gives up to three passages that do not overlap, best first (a
 * window that runs into a chosen one ends before it and is scored again,
 * so the lines just above the best passage are not lost); the ranking blends each passage's x with its chunk's (search.c), so a strong
 * passage in a weaker chunk can outrank a weak one in a strong chunk, and
 * one chunk can answer twice. A passage may run on into the next chunk of
 * its file (chunks overlap) but starts inside its own.
 *
 * With vectors, each line carries the vector score of the part of the chunk
 * it is in (chunk_parts: an entry, such as a bullet of a log): a window's is
 * its best line's, line k counting max(0.3, 0.7^k) as matches do, so the
 * window that starts at the entry a question means is the one shown; windows
 * are chosen by what the caller makes of both (RANK), so a window that
 * shares no word with the question but whose lines mean what it asks can be
 * chosen.
 */
#ifndef MNEMO_SNIPPET_H
#define MNEMO_SNIPPET_H

#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"

#define SNIPPET_MAX_PASSAGES 3

/* How passages are scored: the query's token weights (TOKW[i], one per
 * q->tokens entry: the IDF of its phrase shared among the phrase's
 * tokens), the query's IDF mass, BM25 parameters and the mean length of a
 * chunk in tokens; MAX_CHARS is snippetChars. */
typedef struct snippet_ctx {
    tok *t;
    const query *q;
    const double *tokw;
    double sum_idf, avgdl, k1, b;
    int max_chars;
    /* Optional, meaning: LV[i] is the vector score (0..1) of the part of
     * the text holding line i (NULL: none); RANK orders windows by their
     * evidence X and vector score V (NULL: by X alone). */
    const double *lv;
    double (*rank)(void *ud, double x, double v);
    void *ud;
} snippet_ctx;

typedef struct snippet_passage {
    int first, last; /* 0-based line indices in the text, inclusive */
    size_t off, len; /* the bytes of those lines in the text */
    double x;        /* its evidence, see above; 0 without matches */
    double v;        /* its best line's vector score (see above); 0 without LV */
} snippet_passage;

/* TEXT[0..LEN) holds lines; the first OWN of them are the chunk's (passages
 * start there), the rest the next chunk's. Fills OUT with up to MAX passages
 * (at least one when the chunk has a non-blank line, even without matches
 * or meaning: then its first window) into *N. MNEMO_OK or MNEMO_NOMEM. */
int snippet_find(const snippet_ctx *c, const char *text, size_t len, int own,
                 snippet_passage *out, int max, int *n);

/* Appends passage P of TEXT to OUT: its lines, or for a single line longer
 * than MAX_CHARS the part around its first match with "…" marking the cuts. */
int snippet_render(const snippet_ctx *c, const char *text, size_t len, const snippet_passage *p,
                   buf *out);

/* The weight of each of Q's tokens from the IDF of each phrase (IDF[k],
 * k < q->npositive) into TOKW (64 entries). */
void snippet_token_weights(const query *q, const double *idf, double *tokw);

#endif
