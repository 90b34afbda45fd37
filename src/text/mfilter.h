/*
 * mfilter.h - the filter language of memory search and listing, compiled
 * to an SQL expression over the memories table.
 *
 *   {"category": "rule"}                                   equality
 *   {"created_at": {"gte": "2026-03-01", "lte": "2026-03-31"}}   a range
 *   {"OR": [{"type": "fact"}, {"importance": {"gt": 0.8}}]}
 *   {"NOT": [{"categories": {"in": ["rule", "identity"]}}]}
 *   {"project": {"icontains": "gateway"}}                  a metadata key
 *
 * Operators: eq ne gt gte lt lte in nin contains icontains; logical AND OR
 * NOT taking arrays. See docs/memories.md.
 */
#ifndef MNEMO_MFILTER_H
#define MNEMO_MFILTER_H

#include <jansson.h>
#include <stddef.h>

#include "util/buf.h"

/* One bound parameter of a compiled filter, in '?' order. */
typedef struct mfilter_arg {
    int is_text;  /* 1: text (owned), 0: number */
    char *text;
    double num;
} mfilter_arg;

typedef struct mfilter {
    buf sql;            /* a boolean SQL expression; "1" for an empty filter */
    mfilter_arg *args;
    size_t nargs, cap;
} mfilter;

void mfilter_init(mfilter *f);
void mfilter_cleanup(mfilter *f);

/* Compiles the filter JSON (NULL or "" = no filter) into F, for a query in
 * which the memories table has alias ALIAS. MNEMO_INVALID with a message
 * naming the bad part in ERR; MNEMO_NOMEM. */
int mfilter_compile(const char *json, const char *alias, mfilter *f, char *err, size_t errlen);

/* The same for PostgreSQL: placeholders $FIRST, $FIRST+1 ... in argument
 * order (each cast to its type: parameters travel as text), metadata keys
 * through JSONB operators with the key itself a parameter, "true" for an
 * empty filter. icontains reads the folded copies text_fold and
 * metadata_fold (see mfilter_fold_json). Validation and messages are those
 * of mfilter_compile. */
int mfilter_compile_pg(const char *json, const char *alias, int first, mfilter *f, char *err,
                       size_t errlen);

/* A's value as PostgreSQL parameter text: the text, or the number in TMP. */
const char *mfilter_arg_text(const mfilter_arg *a, char tmp[32]);

/* Unicode case folding as icontains does it: S (N bytes) into a malloc'd
 * string. MNEMO_INVALID for invalid UTF-8, MNEMO_NOMEM. */
int mfilter_fold(const char *s, size_t n, char **out, size_t *outlen);

/* A copy of J with every string value folded (object keys kept), NULL when
 * out of memory. */
json_t *mfilter_fold_json(const json_t *j);


#endif
