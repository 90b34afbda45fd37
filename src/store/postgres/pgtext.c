/*
 * pgtext.c - PostgreSQL's text forms (see pgtext.h).
 */
#include "store/postgres/pgtext.h"

void pg_lexeme(buf *b, const char *s, size_t n)
{
    buf_putc(b, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'' || s[i] == '\\')
            buf_putc(b, s[i]);
        buf_putc(b, s[i]);
    }
    buf_putc(b, '\'');
}

void pg_vector_literal(buf *b, const float *v, int dims)
{
    buf_putc(b, '[');
    for (int i = 0; i < dims; i++)
        buf_printf(b, i ? ",%.9g" : "%.9g", (double)v[i]);
    buf_putc(b, ']');
}
