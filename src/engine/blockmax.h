/*
 * blockmax.h - exact top-k BM25 over posting lists in blocks that carry a
 * bound on their scores (block-max MaxScore, as Lucene, PISA and Tantivy
 * do): a keyword leg gives its terms' blocks (ids, counts, a bound on each
 * block's share of a score) and reads a block's postings only when a row
 * in it may still reach the pool. The pool is the one an exhaustive scan
 * cuts (topk.h: score descending, then id ascending), scores to the last
 * bit bm25.h's: a row's score is computed in phrase order once it is known
 * to be kept, the estimates that prune use a margin.
 *
 * Rows are visited in id order. Terms are sorted by their largest block
 * bound; those whose bounds together stay below the pool's threshold are
 * non-essential: no row holding only them can enter, so rows come from
 * the others' lists, and a non-essential term's block is read only when
 * the row's score so far plus the bounds of the blocks it may be in can
 * still reach the threshold. A block of an essential term is skipped
 * unread when its bound plus the largest bounds of the other terms' blocks
 * over its id range cannot reach it.
 */
#ifndef MNEMO_BLOCKMAX_H
#define MNEMO_BLOCKMAX_H

#include <stddef.h>
#include <stdint.h>

#include "engine/topk.h"
#include "text/bm25.h"

#define BLOCKMAX_BOUNDS 4 /* (frequency, length) pairs a block's bound keeps at most */

/* A block's bound: the pairs (frequency, length) no posting of the block
 * exceeds in frequency while being shorter; BM25's share grows with the
 * frequency and shrinks with the length, so the largest share of a pair
 * bounds every posting's for any k1, b and average length. */
typedef struct blockmax_bound {
    int n;
    uint32_t tf[BLOCKMAX_BOUNDS];
    uint32_t dl[BLOCKMAX_BOUNDS];
} blockmax_bound;

/* Adds a posting (TF, DL) to a block's bound B (start with n = 0). */
void blockmax_bound_add(blockmax_bound *b, uint32_t tf, uint32_t dl);

/* The largest share of a phrase of WEIGHT and IDF in a block bounded by B. */
double blockmax_bound_share(const blockmax_bound *b, double weight, double idf, double k1,
                            double bb, double avgdl);

/* One block's postings, as the reader gives them: ids ascending. */
typedef struct blockmax_posts {
    const int64_t *id;
    const uint8_t *tf;
    const int32_t *dl;
    size_t n;
} blockmax_posts;

/* A query term: phrase PHRASE of the query (several lists may be of one
 * phrase when no row is in two of them), over NBLOCKS blocks with ids
 * in [first[i], last[i]], blocks ascending and disjoint, and UB[i] the
 * bound of the block's share (blockmax_bound_share). The rest is the
 * walk's. */
typedef struct blockmax_term {
    int phrase;
    int list;      /* the reader's list (kwread: the index of its term) */
    size_t nblocks;
    const int64_t *first, *last;
    const double *ub;
    double maxub;
    /* the walk's cursor */
    size_t b;      /* the current block */
    int loaded;    /* its postings are in posts */
    size_t at;     /* the current posting in posts */
    blockmax_posts posts;
} blockmax_term;

typedef struct blockmax_query {
    blockmax_term *t;
    int nt;
    int np;            /* the query's phrases */
    const double *w;   /* per phrase: weight */
    const double *idf; /* per phrase: IDF */
    double k1, b, avgdl;
    uint64_t required; /* phrases a kept row must hold */
    /* Reads block B of term T into *OUT (valid until T's next read).
     * MNEMO_OK or an error, which ends the walk. */
    int (*read)(void *ud, const blockmax_term *t, size_t b, blockmax_posts *out);
    /* Whether row ID is gone (deleted since its postings were written);
     * NULL when none is. */
    int (*gone)(void *ud, int64_t id);
    void *ud;
    /* When set, the rows go to OFFER instead of the pool (which may be
     * NULL): row ID of BM25 SCORE, holding the required phrases, for a
     * caller that ranks by more than BM25 or keeps only some rows. It sets
     * *THETA to the BM25 a row must now reach to be of use (at most what
     * the least row it could still keep has; -1 for any row). THETA holds
     * it before the first. MNEMO_OK or an error, which ends the walk. */
    int (*offer)(void *ud, int64_t id, double score, double *theta);
    void *offer_ud;
    double theta;
    /* counters, for --explain and tests */
    size_t blocks_read, rows_scored;
} blockmax_query;

/* Offers to POOL (or Q's offer) every row of Q's terms' lists whose BM25
 * may rank among its best: the pool ends as an exhaustive scan would
 * leave it. */
int blockmax_run(blockmax_query *q, topk *pool);

/* Row ID's frequencies by phrase (TF, BM25_MAX_PHRASES of them), length
 * and phrases held, from Q's terms' lists (reading the blocks it may be
 * in); all 0 when it holds none or is gone. */
int blockmax_row(blockmax_query *q, int64_t id, uint8_t *tf, int32_t *dl, uint64_t *mask);

/* BM25 of row ID over Q's terms' lists (reading the blocks it may be in),
 * 0 when it holds none of the terms, is gone or lacks a required phrase. */
int blockmax_score_of(blockmax_query *q, int64_t id, double *score);

#endif
