/*
 * pgtext.h - PostgreSQL's text forms that the backend writes: tsvector and
 * tsquery lexemes, and pgvector literals. One place for each, so that the
 * note index, the memory store and the sourceTable reader agree.
 */
#ifndef MNEMO_PGTEXT_H
#define MNEMO_PGTEXT_H

#include <stddef.h>

#include "util/buf.h"

/* Appends S (N bytes) as a quoted lexeme of tsvector or tsquery input. */
void pg_lexeme(buf *b, const char *s, size_t n);

/* Appends V (DIMS floats) as a pgvector literal, [x,y,...], each with the
 * nine significant digits that bring a float back exactly. */
void pg_vector_literal(buf *b, const float *v, int dims);

#endif
