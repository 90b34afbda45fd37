/*
 * rank.h - the ranking stages after the hybrid merge: recency, importance
 * and diversity (Maximal Marginal Relevance).
 *
 * Recency: dated notes lose weight with age, bounded below, so a strong
 *   match in an old note still beats a weak one in a new note:
 *   r = floor + (1 - floor) * 2^(-age / halfLife)   (floor 0.8, 30 days)
 *   An old note outranks a new one whenever its score is higher by more
 *   than the factor 1 / floor (25% by default), whatever its age.
 * Importance: <!-- importance: N --> multiplies by max^((N - 5.5) / 4.5):
 *   0.8 at 1, 1.25 at 10 (max 1.25), 1 when absent.
 * Diversity: MMR picks, from a bounded pool, the next result maximising
 *   lambda * score - (1 - lambda) * (highest similarity to those picked);
 *   it reorders, scores stay as they are.
 */
#ifndef MNEMO_RANK_H
#define MNEMO_RANK_H

#include <stddef.h>
#include <stdint.h>

/* The date a memory file is about, as Unix seconds at 00:00 UTC, from a
 * YYYY-MM-DD in its base name, else in a folder name, else a YYYY/MM/DD
 * folder chain; 0 when the path has none (an evergreen file). */
double rank_path_date(const char *path);

/* Recency factor for a note dated NOTE_TIME (0: evergreen -> 1). */
double rank_recency(double note_time, double now, double half_life_days, double floor);

/* Importance factor for annotation N (0: none -> 1). */
double rank_importance(int n, double max);

/* Token-set similarity for MMR without vectors: Jaccard overlap of the
 * two texts' tokens (words, CJK by bigrams). Texts are tokenized into
 * sorted hash sets first with rank_tokens_build(). */
typedef struct rank_tokens {
    uint64_t *h;
    size_t n;
} rank_tokens;

/* SIM(i, j) for the MMR pass; symmetric, 0..1. */
typedef double (*rank_sim_fn)(void *ud, size_t i, size_t j);

/* Reorders ORDER[0..N) (indices into the caller's arrays, sorted by SCORE
 * descending) by MMR with LAMBDA over the first POOL entries: the first
 * PICKS positions are chosen by MMR, the rest of the pool follows in score
 * order, entries past the pool keep their places. SIM is called only for
 * the pairs the choice needs: a candidate that cannot beat the best of a
 * position so far is not compared with more picks (its similarities would
 * only lower it), so what SIM reads can be built on first use. */
void rank_mmr(size_t *order, size_t n, const double *score, double lambda, size_t pool,
              size_t picks, rank_sim_fn sim, void *ud);

/* Tokenizes TEXT into a sorted set of token hashes in OUT (free OUT->h):
 * words lowercased (not stemmed), CJK runs as character bigrams; only the
 * RANK_SKETCH smallest hashes are kept (a bottom-k sketch). */
#define RANK_SKETCH 128
int rank_tokens_build(const char *text, size_t len, rank_tokens *out);

/* Jaccard similarity of two token sets, estimated from their sketches. */
double rank_jaccard(const rank_tokens *a, const rank_tokens *b);

/* The best CAP scores seen so far, as a min-heap in H[0..*N): H[0] is the
 * lowest of them once *N == CAP. Offers V. Used to stop computing factors
 * once no remaining candidate can reach the top. */
void rank_top_offer(double *h, size_t *n, size_t cap, double v);

#endif
