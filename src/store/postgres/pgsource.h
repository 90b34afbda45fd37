/*
 * pgsource.h - searching an existing PostgreSQL table of embedded memories
 * (config sourceTable), read-only, with the local index as the fallback.
 * See docs/postgres.md.
 */
#ifndef MNEMO_PGSOURCE_H
#define MNEMO_PGSOURCE_H

#include "mnemo.h"

typedef struct pgsource pgsource;

/* The search of the local index. */
typedef int (*pgsource_local_fn)(mnemo *m, const char *query, const mnemo_search_opts *opts,
                                 mnemo_results **out);

/* mnemo_search: without sourceTable, LOCAL. With it, embeds QUERY with the
 * configured provider, searches the table by pgvector cosine distance
 * weighted by the priorities table, and returns the results in the usual
 * shape (mode "vector"). When the database cannot answer (unreachable,
 * missing table or column, other dimensions, no provider, timeout) runs
 * LOCAL instead and records fallback {"from":"postgres","reason":...}
 * (credentials redacted). The local search's errors are returned as they
 * are: MNEMO_NOTFOUND when there is no local index yet. */
int pgsource_search(mnemo *m, const char *query, const mnemo_search_opts *opts,
                    pgsource_local_fn local, mnemo_results **out);

/* Frees the connection and what was learned about the table, kept on the
 * handle (m->pg->source) between searches. */
void pgsource_close(mnemo *m);

#endif
