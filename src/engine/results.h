/*
 * results.h - the result set of a search (mnemo_results), shared by note
 * search (search.c, over either store's legs) and the search of an
 * existing PostgreSQL table (pgsource.c), which fill it the same way. Freed by results_free:
 * each result's path, snippet and citation are owned; source is static
 * text or points into the citation's allocation.
 */
#ifndef MNEMO_RESULTS_H
#define MNEMO_RESULTS_H

#include "mnemo.h"
#include "util/buf.h"

struct mnemo_results {
    mnemo_result *v;
    size_t n;
    int explain;
    char *mode, *provider, *model, *fallback_from, *fallback_reason;
    mnemo_search_timing timing;
};

/* Records that the leg or source FROM could not answer, and why (both
 * copied). MNEMO_NOMEM. */
int results_set_fallback(mnemo_results *res, const char *from, const char *reason);

/* Result I of R as its JSON object (KIND: with "kind":"note" first),
 * and the members after the results ("mode", provider, fallback,
 * timing), as mnemo_results_json writes them. */
void results_write_item(buf *b, const mnemo_results *r, size_t i, int kind);
void results_write_tail(buf *b, const mnemo_results *r);

/* Frees R (accepts NULL): what mnemo_results_free does. */
void results_free(mnemo_results *r);

#endif
