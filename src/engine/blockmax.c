/*
 * blockmax.c - block-max MaxScore (see blockmax.h).
 */
#include "engine/blockmax.h"

#include <stdlib.h>
#include <string.h>

#define END INT64_MAX

void blockmax_bound_add(blockmax_bound *b, uint32_t tf, uint32_t dl)
{
    /* Dominated by a pair kept: nothing to add. */
    for (int i = 0; i < b->n; i++)
        if (b->tf[i] >= tf && b->dl[i] <= dl)
            return;
    /* Drop the pairs it dominates, then add it. */
    int n = 0;
    for (int i = 0; i < b->n; i++)
        if (!(tf >= b->tf[i] && dl <= b->dl[i])) {
            b->tf[n] = b->tf[i];
            b->dl[n++] = b->dl[i];
        }
    b->n = n;
    if (b->n == BLOCKMAX_BOUNDS) {
        /* Full: the two pairs of smallest frequency become one that
         * dominates both (still a bound, a looser one). */
        int lo = 0;
        for (int i = 1; i < b->n; i++)
            if (b->tf[i] < b->tf[lo])
                lo = i;
        int lo2 = lo == 0 ? 1 : 0;
        for (int i = 0; i < b->n; i++)
            if (i != lo && b->tf[i] < b->tf[lo2])
                lo2 = i;
        b->tf[lo2] = b->tf[lo2] > b->tf[lo] ? b->tf[lo2] : b->tf[lo];
        b->dl[lo2] = b->dl[lo2] < b->dl[lo] ? b->dl[lo2] : b->dl[lo];
        b->tf[lo] = b->tf[b->n - 1];
        b->dl[lo] = b->dl[b->n - 1];
        b->n--;
    }
    b->tf[b->n] = tf;
    b->dl[b->n++] = dl;
}

double blockmax_bound_share(const blockmax_bound *b, double weight, double idf, double k1,
                            double bb, double avgdl)
{
    double best = 0;
    for (int i = 0; i < b->n; i++) {
        double tf = b->tf[i] > 255 ? 255 : b->tf[i];
        double s = bm25_part(weight, idf, tf, k1, bm25_norm(k1, bb, (double)b->dl[i], avgdl));
        if (s > best)
            best = s;
    }
    return best;
}

/* Whether an estimate X (a sum in another order than the score's, or a
 * bound) is surely below THETA: the margin covers the rounding of sums in
 * another order, so a row that might tie is never dropped. */
static int below(double x, double theta)
{
    return x + x * 1e-9 + 1e-12 < theta;
}

/* The pool's threshold: what a row must beat, -1 while it is not full. */
static double threshold(const topk *pool)
{
    return !pool || pool->n < pool->cap || !pool->cap ? -1.0 : pool->v[0].score;
}

/* The first block of T at or after FROM whose last id is >= ID. */
static size_t block_from(const blockmax_term *t, size_t from, int64_t id)
{
    size_t lo = from, hi = t->nblocks;
    /* Gallop: the next blocks are the likely ones. */
    for (size_t step = 1; lo + step < hi && t->last[lo + step] < id; step *= 2)
        lo += step;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->last[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The bound of T's block holding ID, 0 when no block may hold it. Moves
 * T's block forward (rows are visited in id order). */
static inline double ub_at(blockmax_term *t, int64_t id)
{
    if (t->b < t->nblocks && t->last[t->b] < id) {
        t->b = block_from(t, t->b, id);
        t->loaded = 0;
    }
    return t->b < t->nblocks && t->first[t->b] <= id ? t->ub[t->b] : 0;
}

/* The largest bound of T's blocks meeting [LO, HI], looked at from T's
 * block on (T has no posting in [LO, HI] before it). */
static double ub_over(const blockmax_term *t, int64_t lo, int64_t hi)
{
    double m = 0;
    size_t i = t->b;
    if (i < t->nblocks && t->last[i] < lo)
        i = block_from(t, i, lo);
    for (; i < t->nblocks && t->first[i] <= hi; i++)
        if (t->ub[i] > m)
            m = t->ub[i];
    return m;
}

static inline int load(blockmax_query *q, int i)
{
    blockmax_term *t = &q->t[i];
    if (t->loaded)
        return MNEMO_OK;
    int rc = q->read(q->ud, t, t->b, &t->posts);
    if (rc)
        return rc;
    q->blocks_read++;
    t->loaded = 1;
    t->at = 0;
    return MNEMO_OK;
}

/* T's first posting >= ID (reading blocks), END when none: its index in
 * t->posts is t->at. */
static inline int seek(blockmax_query *q, int i, int64_t id, int64_t *out)
{
    blockmax_term *t = &q->t[i];
    for (;;) {
        ub_at(t, id);
        if (t->b >= t->nblocks) {
            *out = END;
            return MNEMO_OK;
        }
        int rc = load(q, i);
        if (rc)
            return rc;
        while (t->at < t->posts.n && t->posts.id[t->at] < id)
            t->at++;
        if (t->at < t->posts.n) {
            *out = t->posts.id[t->at];
            return MNEMO_OK;
        }
        /* The block ends below ID: its last id said otherwise only if
         * the block is damaged; go on with the next. */
        t->b++;
        t->loaded = 0;
    }
}

/* The current posting of an essential term, skipping the blocks that
 * cannot reach THETA with the others' bounds over their range. */
static int essential_next(blockmax_query *q, int i, int64_t from, double theta, int64_t *out)
{
    blockmax_term *t = &q->t[i];
    for (;;) {
        ub_at(t, from);
        if (t->b >= t->nblocks) {
            *out = END;
            return MNEMO_OK;
        }
        if (!t->loaded && theta >= 0) {
            int64_t lo = t->first[t->b] > from ? t->first[t->b] : from, hi = t->last[t->b];
            double bound = t->ub[t->b];
            for (int j = 0; j < q->nt; j++)
                if (j != i)
                    bound += ub_over(&q->t[j], lo, hi);
            if (below(bound, theta)) {
                from = hi + 1;
                t->b++;
                continue;
            }
        }
        return seek(q, i, from, out);
    }
}

/* The exact score of row ID of length DL with frequencies TF by phrase:
 * bm25_score's sum, in its order. */
static double exact(const blockmax_query *q, const uint8_t *tf, int32_t dl)
{
    double norm = bm25_norm(q->k1, q->b, (double)dl, q->avgdl);
    double score = 0;
    for (int k = 0; k < q->np; k++) {
        if (!tf[k])
            continue;
        score += bm25_part(q->w[k], q->idf[k], (double)tf[k], q->k1, norm);
    }
    return score;
}

/* T's share of its current row's score, with the row's length norm NORM. */
static double part(const blockmax_query *q, const blockmax_term *t, double norm)
{
    int k = t->phrase;
    return bm25_part(q->w[k], q->idf[k], (double)t->posts.tf[t->at], q->k1, norm);
}

/* The length norm of T's current row. */
static double norm_of(const blockmax_query *q, const blockmax_term *t)
{
    return bm25_norm(q->k1, q->b, (double)t->posts.dl[t->at], q->avgdl);
}

static int by_maxub(const void *a, const void *b)
{
    const blockmax_term *x = a, *y = b;
    return x->maxub < y->maxub ? -1 : x->maxub > y->maxub;
}

/* The first essential term: the terms before it cannot reach THETA
 * together. */
static int essential_from(const blockmax_query *q, double theta)
{
    if (theta < 0)
        return 0;
    double sum = 0;
    int e = 0;
    while (e < q->nt && below(sum + q->t[e].maxub, theta))
        sum += q->t[e++].maxub;
    return e;
}

int blockmax_run(blockmax_query *q, topk *pool)
{
    for (int i = 0; i < q->nt; i++) {
        blockmax_term *t = &q->t[i];
        t->maxub = 0;
        for (size_t j = 0; j < t->nblocks; j++)
            if (t->ub[j] > t->maxub)
                t->maxub = t->ub[j];
        t->b = 0;
        t->loaded = 0;
        t->at = 0;
    }
    qsort(q->t, (size_t)q->nt, sizeof *q->t, by_maxub);
    double theta = q->offer ? q->theta : threshold(pool);
    int e = essential_from(q, theta);
    int64_t cur[BM25_MAX_PHRASES];
    int rc;
    for (int i = 0; i < q->nt; i++)
        cur[i] = END;
    for (int i = e; i < q->nt; i++)
        if ((rc = essential_next(q, i, 0, theta, &cur[i])))
            return rc;
    for (;;) {
        if (e >= q->nt)
            break;
        int64_t d = END;
        for (int i = e; i < q->nt; i++)
            if (cur[i] < d)
                d = cur[i];
        if (d == END)
            break;
        int keep = !q->gone || !q->gone(q->ud, d);
        double est = 0, rest = 0, norm = -1;
        if (keep) {
            for (int i = e; i < q->nt; i++) {
                if (cur[i] != d)
                    continue;
                if (norm < 0)
                    norm = norm_of(q, &q->t[i]);
                est += part(q, &q->t[i], norm);
            }
            for (int i = 0; i < e; i++)
                rest += ub_at(&q->t[i], d);
            keep = !below(est + rest, theta);
        }
        /* The non-essential terms, largest bound first, while the row
         * may still reach the pool. */
        for (int i = e - 1; keep && i >= 0; i--) {
            blockmax_term *t = &q->t[i];
            double ub = ub_at(t, d);
            if (ub <= 0)
                continue;
            rest -= ub;
            if ((rc = seek(q, i, d, &cur[i])))
                return rc;
            if (cur[i] == d) {
                if (norm < 0)
                    norm = norm_of(q, t);
                est += part(q, t, norm);
            }
            keep = !below(est + rest, theta);
        }
        if (keep) {
            uint8_t tf[BM25_MAX_PHRASES];
            int32_t dl = 0;
            uint64_t mask = 0;
            memset(tf, 0, sizeof tf);
            for (int i = 0; i < q->nt; i++) {
                blockmax_term *t = &q->t[i];
                if (cur[i] != d || !t->loaded || t->at >= t->posts.n || t->posts.id[t->at] != d)
                    continue;
                tf[t->phrase] = t->posts.tf[t->at];
                dl = t->posts.dl[t->at];
                mask |= (uint64_t)1 << t->phrase;
            }
            q->rows_scored++;
            if ((mask & q->required) == q->required) {
                double now;
                if (q->offer) {
                    now = theta;
                    if ((rc = q->offer(q->offer_ud, d, exact(q, tf, dl), &now)))
                        return rc;
                } else {
                    topk_offer(pool, exact(q, tf, dl), d);
                    now = threshold(pool);
                }
                if (now > theta) {
                    theta = now;
                    int ne = essential_from(q, theta);
                    for (int i = e; i < ne; i++)
                        cur[i] = END; /* now non-essential: sought when needed */
                    e = ne;
                }
            }
        }
        for (int i = e; i < q->nt; i++) {
            if (cur[i] != d)
                continue;
            /* Most rows: the next posting of the block at hand, which
             * essential_next would come to without a bound to test. */
            blockmax_term *t = &q->t[i];
            if (t->loaded && t->at + 1 < t->posts.n) {
                cur[i] = t->posts.id[++t->at];
                continue;
            }
            if ((rc = essential_next(q, i, d + 1, theta, &cur[i])))
                return rc;
        }
    }
    return MNEMO_OK;
}

int blockmax_row(blockmax_query *q, int64_t id, uint8_t *tf, int32_t *dl, uint64_t *mask)
{
    memset(tf, 0, BM25_MAX_PHRASES);
    *dl = 0;
    *mask = 0;
    if (q->gone && q->gone(q->ud, id))
        return MNEMO_OK;
    for (int i = 0; i < q->nt; i++) {
        blockmax_term *t = &q->t[i];
        size_t b = block_from(t, 0, id);
        if (b >= t->nblocks || t->first[b] > id)
            continue;
        if (!t->loaded || t->b != b) {
            t->b = b;
            t->loaded = 0;
            int rc = load(q, i);
            if (rc)
                return rc;
        }
        size_t lo = 0, hi = t->posts.n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (t->posts.id[mid] < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < t->posts.n && t->posts.id[lo] == id) {
            tf[t->phrase] = t->posts.tf[lo];
            *dl = t->posts.dl[lo];
            *mask |= (uint64_t)1 << t->phrase;
        }
    }
    return MNEMO_OK;
}

int blockmax_score_of(blockmax_query *q, int64_t id, double *score)
{
    uint8_t tf[BM25_MAX_PHRASES];
    int32_t dl;
    uint64_t mask;
    *score = 0;
    int rc = blockmax_row(q, id, tf, &dl, &mask);
    if (!rc && mask && (mask & q->required) == q->required)
        *score = exact(q, tf, dl);
    return rc;
}
