/*
 * lite_mpost.h - memory search on SQLite: what its two keyword legs share
 * (lite_msearch.c's over FTS5, lite_mpost.c's over the postings).
 */
#ifndef MNEMO_LITE_MPOST_H
#define MNEMO_LITE_MPOST_H

#include "engine/memory.h"
#include "text/mfilter.h"
#include "text/query.h"

/* The factor inputs of a memory (mem_factors), as columns of its row m. */
#define MEM_FACTOR_COLS                                                                        \
    "m.importance, m.subject = 'user', m.created_at, m.last_confirmed_at, m.confirmations"
#define MEM_FACTOR_NCOLS 5

/* A failed statement of the memory store: a damaged file says so, with
 * the way out (lite_mem_fail). */
int lite_mem_sqlfail(mnemo *m, const char *what);

/* C's factor inputs from V, MEM_FACTOR_COLS's values. */
void lite_mem_factors_of(mcand *c, const double *v);

/* The episode members of MIDS (mem_episode_fn). */
int lite_mem_episodes(mnemo *m, void *ud, const int64_t *mids, size_t n, mem_members *l);

/* The NEED best memories by score for Q (QTEXT) among those of WHERE (its
 * arguments ARGS, then O's filter's), ranked as mem_rank ranks the FTS5
 * leg's candidates after their episodes, into S, from the memories'
 * postings. MNEMO_NOTFOUND: the query or the store is not for it (the
 * FTS5 leg runs). */
int lite_mpost_leg(mnemo *m, const query *q, const char *where, const mfilter *args,
                   const mem_opts *o, size_t need, double now, const char *qtext, mset *s);

#endif
