/*
 * bm25.c - BM25 over collected rows (see bm25.h).
 */
#include "text/bm25.h"

#include <stdlib.h>

#include "mnemo.h"

int bm25_hits_grow(bm25_hits *h)
{
    size_t cap = h->cap ? h->cap * 2 : 1024;
    int64_t *id = realloc(h->id, cap * sizeof *id);
    if (id)
        h->id = id;
    int *dl = realloc(h->dl, cap * sizeof *dl);
    if (dl)
        h->dl = dl;
    uint64_t *mask = realloc(h->mask, cap * sizeof *mask);
    if (mask)
        h->mask = mask;
    uint8_t *tf = realloc(h->tf, cap * BM25_MAX_PHRASES);
    if (tf)
        h->tf = tf;
    if (!id || !dl || !mask || !tf)
        return MNEMO_NOMEM;
    h->cap = cap;
    return MNEMO_OK;
}

void bm25_hits_cleanup(bm25_hits *h)
{
    free(h->id);
    free(h->dl);
    free(h->tf);
    free(h->mask);
    h->id = NULL;
    h->dl = NULL;
    h->tf = NULL;
    h->mask = NULL;
    h->n = h->cap = 0;
}

void bm25_idfs(const bm25_hits *h, double *idf)
{
    for (int k = 0; k < h->np; k++)
        idf[k] = bm25_idf((double)h->ndocs, (double)h->df[k]);
}

double bm25_score(const bm25_hits *h, size_t i, const double *weight, const double *idf,
                  double k1, double b)
{
    double norm = bm25_norm(k1, b, (double)h->dl[i], h->avgdl);
    const uint8_t *t = h->tf + i * BM25_MAX_PHRASES;
    double score = 0;
    for (int k = 0; k < h->np; k++) {
        if (!t[k])
            continue;
        score += bm25_part(weight[k], idf[k], (double)t[k], k1, norm);
    }
    return score;
}
