/*
 * bm25.h - BM25 as every keyword leg computes it, whatever stores the rows
 * (SQLite FTS5 in fts.c, PostgreSQL in pgkeyword.c and pgmsearch.c): the rows a
 * query matched with their lengths and phrase frequencies, IDF, length
 * normalisation and each phrase's saturated share. Written once so that
 * the backends' scores agree to the last bit.
 */
#ifndef MNEMO_BM25_H
#define MNEMO_BM25_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define BM25_MAX_PHRASES 64

/* The rows matching a query: per row its id, length and the frequency of
 * each phrase; per phrase the number of matching rows (its document
 * frequency). */
typedef struct bm25_hits {
    int64_t *id;
    int *dl;
    uint8_t *tf;     /* n x BM25_MAX_PHRASES, saturating at 255 */
    uint64_t *mask;  /* phrases present in the row */
    size_t n, cap;
    int np;
    int64_t df[BM25_MAX_PHRASES];
    int64_t ndocs;   /* rows in the table */
    double avgdl;
    int stats;       /* ndocs and avgdl are set */
    int nomem;
} bm25_hits;

/* Doubles H's arrays (at least 1024 rows). MNEMO_OK, or MNEMO_NOMEM with H
 * unchanged in size and still valid. */
int bm25_hits_grow(bm25_hits *h);

/* Frees H's arrays (not H). */
void bm25_hits_cleanup(bm25_hits *h);

/* IDF of a phrase in DF of NDOCS rows: ln(1 + (N - df + 0.5) / (df + 0.5)). */
static inline double bm25_idf(double ndocs, double df)
{
    return log(1.0 + (ndocs - df + 0.5) / (df + 0.5));
}

/* The length normalisation of a row of DL tokens. */
static inline double bm25_norm(double k1, double b, double dl, double avgdl)
{
    return k1 * (1.0 - b + b * dl / avgdl);
}

/* One phrase's share of a row's score: frequency F, saturated. */
static inline double bm25_part(double weight, double idf, double f, double k1, double norm)
{
    return weight * idf * f * (k1 + 1.0) / (f + norm);
}

/* The IDF of each of H's phrases into IDF[]. */
void bm25_idfs(const bm25_hits *h, double *idf);

/* BM25 of row I of H: the sum over its phrases of WEIGHT * IDF * saturated
 * frequency. */
double bm25_score(const bm25_hits *h, size_t i, const double *weight, const double *idf,
                  double k1, double b);

#endif
