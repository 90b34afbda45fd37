/*
 * mrec.h - structured memories as the public API's types (mnemo_memory,
 * mnemo_memories in mnemo.h), made from the engine's records (the JSON
 * objects of mem_row_json) and back, for the typed functions: no JSON text
 * between them and the store.
 */
#ifndef MNEMO_MREC_H
#define MNEMO_MREC_H

#include <jansson.h>

#include "engine/memory.h"
#include "mnemo.h"

struct mnemo_memories {
    mnemo_memory *v;
    size_t n;
    long long total;
    int capped;          /* a list: more than total match (memoryCountLimit) */
    const char *mode;    /* static text, NULL for a list */
    char **left, **why;  /* the unreadable: ids and why */
    size_t nleft;
    char *warning;
};

/* Record REC (a record of mem_row_json, with "score", "relevance" or
 * "duplicate" when it has them) into OUT, its strings owned by OUT
 * (mrec_cleanup). MNEMO_NOMEM, with nothing left. */
int mrec_from_json(json_t *rec, mnemo_memory *out);
void mrec_cleanup(mnemo_memory *r);

/* Record R of an add as the JSON object of its fields (*OUT, for
 * mem_add_obj): what mnemo_memory_add_typed reads of it. MNEMO_INVALID
 * (text missing or not UTF-8, metadata not JSON) with the message on M. */
int mrec_to_json(mnemo *m, const mnemo_memory *r, json_t **out);

/* A set of the records LIST (a JSON array), with TOTAL and MODE (static
 * text or NULL), and the unreadable of SK with the warning on M when SK
 * holds any (mem_skips_report). */
int mrec_set(mnemo *m, json_t *list, long long total, const char *mode, const mem_skips *sk,
             mnemo_memories **out);
void mrec_set_free(mnemo_memories *s);

/* mnemo_memory_add_typed, _get_typed, _list_typed and _search_typed over
 * store ST or searcher BE: the engine's operations (memory.c, msearch.c)
 * with typed options in and typed records out. */
int mem_add_typed(mnemo *m, const mnemo_memory *rec, const mem_store *st, mnemo_memory **out);
int mem_get_typed(mnemo *m, const char *id, const mem_store *st, mnemo_memory **out);
int mem_list_typed(mnemo *m, const mnemo_memory_opts *opts, const mem_store *st,
                   mnemo_memories **out);
int mem_search_typed(mnemo *m, const char *text, const mnemo_memory_opts *opts,
                     const mem_searcher *be, mnemo_memories **out);

#endif
