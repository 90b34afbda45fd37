/*
 * test_vec.c - vector kernels (SIMD against scalar), quantisation, top-k
 * scans (single and multi-threaded against brute force).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "embed/vec.h"

static uint64_t rng = 42;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

TEST(vec_simd_matches_scalar)
{
    float a[1100], b[1100];
    int8_t qa[1100], qb[1100];
    for (int i = 0; i < 1100; i++) {
        a[i] = frand();
        b[i] = frand();
        qa[i] = (int8_t)(frand() * 127);
        qb[i] = (int8_t)(frand() * 127);
    }
    /* Every length, so each tail path runs. */
    for (size_t n = 0; n <= 1100; n += (n < 80 ? 1 : 37)) {
        float s = vec_dot_f32_scalar(a, b, n), v = vec_dot_f32(a, b, n);
        ASSERT_NEAR(v, s, 1e-4 * (1 + fabs(s)));
        ASSERT_EQ(vec_dot_i8(qa, qb, n), vec_dot_i8_scalar(qa, qb, n));
    }
    /* Forcing the scalar path gives the scalar result exactly. */
    vec_use_scalar(1);
    ASSERT(!vec_simd());
    ASSERT(vec_dot_f32(a, b, 384) == vec_dot_f32_scalar(a, b, 384));
    vec_use_scalar(0);
}

TEST(vec_normalize_and_quantize)
{
    float v[5] = {3, 4, 0, 0, 0};
    ASSERT_NEAR(vec_normalize(v, 5), 5, 1e-6);
    ASSERT_NEAR(v[0], 0.6, 1e-6);
    ASSERT_NEAR(vec_dot_f32(v, v, 5), 1.0, 1e-6);
    float z[3] = {0, 0, 0};
    ASSERT_NEAR(vec_normalize(z, 3), 0, 0);
    int8_t q[5];
    float scale;
    vec_quantize(v, 5, q, &scale);
    ASSERT_EQ(q[1], 127);
    ASSERT_NEAR(q[0] * scale, 0.6, 0.01);
}

static int cmp_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

TEST(vec_topk_exact_and_threaded)
{
    size_t n = 5000, d = 96, k = 20;
    float *m = malloc(n * d * sizeof *m), q[96];
    for (size_t i = 0; i < n * d; i++)
        m[i] = frand();
    for (size_t r = 0; r < n; r++)
        vec_normalize(m + r * d, d);
    for (size_t i = 0; i < d; i++)
        q[i] = frand();
    vec_normalize(q, d);
    float *all = malloc(n * sizeof *all);
    double sum = 0;
    for (size_t r = 0; r < n; r++) {
        all[r] = vec_dot_f32_scalar(m + r * d, q, d);
        sum += all[r];
    }
    qsort(all, n, sizeof *all, cmp_desc);
    for (int threads = 1; threads <= 4; threads++) {
        vec_hit hits[20];
        vec_stats st;
        size_t got = vec_topk_f32(m, n, d, q, k, hits, &st, threads);
        ASSERT_EQ(got, k);
        for (size_t i = 0; i < k; i++) {
            ASSERT_NEAR(hits[i].score, all[i], 1e-5);
            ASSERT_NEAR(vec_dot_f32_scalar(m + (size_t)hits[i].row * d, q, d), hits[i].score,
                        1e-5);
        }
        ASSERT_EQ(st.n, n);
        ASSERT_NEAR(st.sum, sum, 1e-2);
    }
    /* k larger than the matrix, and an empty matrix. */
    vec_hit many[20];
    ASSERT_EQ(vec_topk_f32(m, 7, d, q, 20, many, NULL, 1), 7);
    ASSERT_EQ(vec_topk_f32(m, 0, d, q, 20, many, NULL, 1), 0);
    /* int8: the best float row is among the int8 top 4k. */
    int8_t *m8 = malloc(n * d);
    float *scales = malloc(n * sizeof *scales), qs;
    int8_t q8[96];
    for (size_t r = 0; r < n; r++)
        vec_quantize(m + r * d, d, m8 + r * d, &scales[r]);
    vec_quantize(q, d, q8, &qs);
    vec_hit h8[80], best[1];
    size_t got8 = vec_topk_i8(m8, scales, n, d, q8, qs, 80, h8, 2);
    vec_topk_f32(m, n, d, q, 1, best, NULL, 1);
    int found = 0;
    for (size_t i = 0; i < got8; i++)
        found |= h8[i].row == best[0].row;
    ASSERT(found);
    ASSERT_NEAR(h8[0].score, best[0].score, 0.05);
    free(m);
    free(m8);
    free(scales);
    free(all);
}
