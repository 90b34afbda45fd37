/*
 * memjson.h - the memory API's JSON edge (memjson.c): JSON options decoded
 * into the typed options of mnemo.h, and the JSON functions of memories
 * and of the search of notes and facts as codecs over the typed
 * operations (mrec.h, allsearch.h).
 */
#ifndef MNEMO_MEMJSON_H
#define MNEMO_MEMJSON_H

#include "engine/memory.h"

/* Parses OPTIONS (JSON, may be NULL) for list (SEARCH 0) or search (1)
 * into O: decoded into mnemo_memory_opts, then mem_opts_from. O is to be
 * cleaned up (mem_opts_cleanup) either way. */
int mem_opts_parse(mnemo *m, const char *options, int search, mem_opts *o);

/* mnemo_memory_add, _get, _list and _search over store ST or searcher BE. */
int mem_add(mnemo *m, const char *record, const mem_store *st, char **out);
int mem_get(mnemo *m, const char *id, const mem_store *st, char **out);
int mem_list(mnemo *m, const char *options, const mem_store *st, char **out);
int mem_search(mnemo *m, const char *text, const char *options, const mem_searcher *be,
               char **out);

/* mnemo_memory_counts over store ST: the memories its options select,
 * counted per week or day by the store (mem_store.count_spans). */
int mem_counts(mnemo *m, const char *options, const mem_store *st, char **out);

#endif
