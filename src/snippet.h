/*
 * snippet.h - choosing the lines of a chunk to show: the window of whole
 * lines, at most N characters, that covers the most distinct query terms.
 */
#ifndef MNEMO_SNIPPET_H
#define MNEMO_SNIPPET_H

#include "query.h"
#include "tok.h"
#include "util/buf.h"

/* TEXT holds lines FIRST_LINE, FIRST_LINE + 1, ... Appends the snippet to
 * OUT and its line range to *start_line and *end_line. A single line longer
 * than MAX_CHARS is cut around its first match, with "…" marking the cuts. */
int snippet_pick(tok *t, const query *q, const char *text, size_t len, int first_line,
                 int max_chars, buf *out, int *start_line, int *end_line);

#endif
