/*
 * vec.h - vector kernels and exact top-k scans over a flat matrix.
 *
 * Rows are L2-normalised float32 vectors, so the dot product is the cosine.
 * Kernels: float32 and int8 dot products, AVX2/FMA chosen at run time with a
 * scalar fallback (both exported so tests can compare them). Scans keep the
 * best K rows in a heap and the mean and spread of all scores (the vector
 * leg calibrates its scores with them); large matrices are split across
 * threads.
 */
#ifndef MNEMO_VEC_H
#define MNEMO_VEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct vec_hit {
    uint32_t row;
    float score;
} vec_hit;

typedef struct vec_stats {
    double sum, sumsq; /* over every row's score */
    size_t n;
} vec_stats;

float vec_dot_f32(const float *a, const float *b, size_t n);
float vec_dot_f32_scalar(const float *a, const float *b, size_t n);
int32_t vec_dot_i8(const int8_t *a, const int8_t *b, size_t n);
int32_t vec_dot_i8_scalar(const int8_t *a, const int8_t *b, size_t n);

/* 1 when the AVX2/FMA kernels are in use on this CPU. */
int vec_simd(void);

/* Scales V to unit length (leaves a zero vector alone). Returns the norm. */
float vec_normalize(float *v, size_t n);

/* Symmetric int8 quantisation: q = round(v / scale), scale = max|v| / 127. */
void vec_quantize(const float *v, size_t n, int8_t *q, float *scale);

/* The best K rows of M (COUNT x DIMS) by dot product with Q, best first,
 * into OUT (room for K); returns how many. ST (may be NULL) receives the
 * score statistics of all rows. THREADS <= 0: decide by size. */
size_t vec_topk_f32(const float *m, size_t count, size_t dims, const float *q, size_t k,
                    vec_hit *out, vec_stats *st, int threads);

/* The same over an int8 matrix with per-row scales; scores are
 * approximations of the float cosines (rescore the winners). */
size_t vec_topk_i8(const int8_t *m, const float *scales, size_t count, size_t dims,
                   const int8_t *q, float qscale, size_t k, vec_hit *out, int threads);

/* Forces the scalar kernels (1) or the best available (0). For tests and
 * benchmarks; not thread-safe with concurrent scans. */
void vec_use_scalar(int on);

#endif
