/*
 * topk.h - the K best of a stream of scored ids: a bounded min-heap whose
 * root is the worst kept, in the one order every keyword pool is cut by
 * (score descending, then id ascending), so that the backends' pools (and
 * results) agree: SQLite's BM25 leg (lite_search.c), PostgreSQL's postings
 * walk (pgnpost.c) and the engine's cut of a keyword leg's candidates to
 * the pool (search.c). Header only: a few lines called once per row.
 *
 * The heap holds (score, id, slot). A caller that keeps more of a row than
 * its score keeps it in an array of K slots: topk_offer says which slot a
 * kept row goes to (the displaced row's), or TOPK_NONE.
 */
#ifndef MNEMO_TOPK_H
#define MNEMO_TOPK_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mnemo.h"

#define TOPK_NONE ((size_t)-1)

typedef struct topk_item {
    double score;
    int64_t id;
    size_t slot; /* 0..cap: where the caller keeps the rest of the row */
} topk_item;

typedef struct topk {
    topk_item *v; /* the heap, v[0] the worst kept once n == cap */
    size_t n, cap;
} topk;

/* An empty selection of at most CAP. MNEMO_OK or MNEMO_NOMEM. */
static inline int topk_init(topk *k, size_t cap)
{
    k->n = 0;
    k->cap = cap;
    k->v = malloc((cap ? cap : 1) * sizeof *k->v);
    return k->v ? MNEMO_OK : MNEMO_NOMEM;
}

static inline void topk_cleanup(topk *k)
{
    free(k->v);
    k->v = NULL;
    k->n = k->cap = 0;
}

/* Whether A ranks after B: lower score, then higher id. */
static inline int topk_worse(const topk_item *a, const topk_item *b)
{
    if (a->score != b->score)
        return a->score < b->score;
    return a->id > b->id;
}

/* Offers ID with SCORE: the slot its row is to be kept in, or TOPK_NONE
 * when it is not among the CAP best so far. */
static inline size_t topk_offer(topk *k, double score, int64_t id)
{
    topk_item c = {score, id, k->n};
    size_t i;
    if (k->n < k->cap) {
        for (i = k->n++; i > 0 && topk_worse(&c, &k->v[(i - 1) / 2]); i = (i - 1) / 2)
            k->v[i] = k->v[(i - 1) / 2];
        k->v[i] = c;
        return c.slot;
    }
    if (!k->cap || !topk_worse(&k->v[0], &c))
        return TOPK_NONE;
    c.slot = k->v[0].slot;
    for (i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, w = l;
        if (l >= k->n)
            break;
        if (r < k->n && topk_worse(&k->v[r], &k->v[l]))
            w = r;
        if (!topk_worse(&k->v[w], &c))
            break;
        k->v[i] = k->v[w];
        i = w;
    }
    k->v[i] = c;
    return c.slot;
}

#endif
