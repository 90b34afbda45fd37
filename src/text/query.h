/*
 * query.h - turning a user's query into an FTS5 MATCH expression.
 *
 * Syntax: bare words (any of them may match; more matches rank higher),
 * "quoted phrases" (required), -word and -"phrase" (excluded). Stop words
 * are dropped from bare words unless nothing else is left. Identifiers
 * are searched whole and by their parts; CJK text by its bigrams, a lone
 * CJK character as a prefix.
 */
#ifndef MNEMO_QUERY_H
#define MNEMO_QUERY_H

#include <stdint.h>

#include "text/bm25.h"
#include "text/tok.h"
#include "util/buf.h"

#define QUERY_MAX_POSITIVE 48
#define QUERY_MAX_EXCLUDED 16

typedef struct query {
    char *match;        /* the MATCH expression, NULL when nothing is searchable */
    int npositive;      /* phrases 0..npositive-1 are terms and required phrases */
    int nphrase;        /* all phrases, excluded ones last */
    uint64_t required;  /* mask of required (quoted) phrases */
    /* Normalised tokens of the positive phrases, NUL-separated, for snippet
     * line scoring; `prefix` marks those matched as prefixes. */
    buf tokens;
    int ntokens;
    uint64_t prefix;
    unsigned char tok_phrase[64]; /* the phrase each token belongs to */
    char *filename;     /* the query as a file name (lowercase, trimmed) */
} query;

/* Parses TEXT (valid UTF-8) with the query tokenizer T into Q.
 * MNEMO_OK (Q->match may still be NULL) or MNEMO_NOMEM. */
int query_parse(tok *t, const char *text, query *q);
void query_cleanup(query *q);

/* Ranking weights of Q's phrases: 1 for terms and required phrases, 0 for
 * excluded ones. W holds BM25_MAX_PHRASES entries. */
void query_weights(const query *q, double *w);

/* Iterates over the phrases of Q->match in order (the positive ones, then
 * the excluded ones): from P (start with Q->match), appends the next
 * phrase's text to OUT (reset first) and sets *PREFIX when it is matched
 * as a prefix. Returns the position after it, NULL after the last. */
const char *query_phrase_next(const char *p, buf *out, int *prefix);

#endif
