/*
 * gemm.c - Y = X W^T + b kernels (see gemm.h).
 *
 * Both operands run along K contiguously, so each output is a dot
 * product. The SIMD kernels take a tile of 2 rows of X by 4 rows of W: 8
 * vector accumulators, 6 loads per 8 fused multiply-adds, the W tile
 * (4 x K floats) staying in L1 while the rows of X stream past. Sums are
 * reduced across lanes once per tile.
 */
#include "embed/gemm.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GEMM_X86 1
#else
#define GEMM_X86 0
#endif

static int chosen = -1;

static void scalar_nt(const float *x, const float *w, const float *bias, float *y, int M, int N,
                      int K, int ldy)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float *a = x + (size_t)m * K, *b = w + (size_t)n * K;
            float s = 0;
            for (int k = 0; k < K; k++)
                s += a[k] * b[k];
            y[(size_t)m * ldy + n] = s + (bias ? bias[n] : 0.0f);
        }
}

static float scalar_dot(const float *a, const float *b, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

#if GEMM_X86
__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) static float avx2_dot(const float *a, const float *b, int n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), s1);
    }
    for (; k + 8 <= n; k += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
    float s = hsum8(_mm256_add_ps(s0, s1));
    for (; k < n; k++)
        s += a[k] * b[k];
    return s;
}

__attribute__((target("avx2,fma"))) static void avx2_nt(const float *x, const float *w,
                                                         const float *bias, float *y, int M,
                                                         int N, int K, int ldy)
{
    int K8 = K & ~7;
    int n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *w0 = w + (size_t)n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        int m = 0;
        for (; m + 2 <= M; m += 2) {
            const float *x0 = x + (size_t)m * K, *x1 = x0 + K;
            __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
            __m256 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
            for (int k = 0; k < K8; k += 8) {
                __m256 a0 = _mm256_loadu_ps(x0 + k), a1 = _mm256_loadu_ps(x1 + k);
                __m256 b = _mm256_loadu_ps(w0 + k);
                c00 = _mm256_fmadd_ps(a0, b, c00);
                c10 = _mm256_fmadd_ps(a1, b, c10);
                b = _mm256_loadu_ps(w1 + k);
                c01 = _mm256_fmadd_ps(a0, b, c01);
                c11 = _mm256_fmadd_ps(a1, b, c11);
                b = _mm256_loadu_ps(w2 + k);
                c02 = _mm256_fmadd_ps(a0, b, c02);
                c12 = _mm256_fmadd_ps(a1, b, c12);
                b = _mm256_loadu_ps(w3 + k);
                c03 = _mm256_fmadd_ps(a0, b, c03);
                c13 = _mm256_fmadd_ps(a1, b, c13);
            }
            float r[8] = {hsum8(c00), hsum8(c01), hsum8(c02), hsum8(c03),
                          hsum8(c10), hsum8(c11), hsum8(c12), hsum8(c13)};
            for (int k = K8; k < K; k++) {
                r[0] += x0[k] * w0[k];
                r[1] += x0[k] * w1[k];
                r[2] += x0[k] * w2[k];
                r[3] += x0[k] * w3[k];
                r[4] += x1[k] * w0[k];
                r[5] += x1[k] * w1[k];
                r[6] += x1[k] * w2[k];
                r[7] += x1[k] * w3[k];
            }
            float *y0 = y + (size_t)m * ldy + n, *y1 = y0 + ldy;
            for (int j = 0; j < 4; j++) {
                float bj = bias ? bias[n + j] : 0.0f;
                y0[j] = r[j] + bj;
                y1[j] = r[4 + j] + bj;
            }
        }
        for (; m < M; m++)
            for (int j = 0; j < 4; j++)
                y[(size_t)m * ldy + n + j] =
                    avx2_dot(x + (size_t)m * K, w + (size_t)(n + j) * K, K) +
                    (bias ? bias[n + j] : 0.0f);
    }
    for (; n < N; n++)
        for (int m = 0; m < M; m++)
            y[(size_t)m * ldy + n] =
                avx2_dot(x + (size_t)m * K, w + (size_t)n * K, K) + (bias ? bias[n] : 0.0f);
}

__attribute__((target("avx512f"))) static float avx512_dot(const float *a, const float *b,
                                                            int n)
{
    __m512 s = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= n; k += 16)
        s = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k), s);
    float r = _mm512_reduce_add_ps(s);
    for (; k < n; k++)
        r += a[k] * b[k];
    return r;
}

__attribute__((target("avx512f"))) static void avx512_nt(const float *x, const float *w,
                                                          const float *bias, float *y, int M,
                                                          int N, int K, int ldy)
{
    int K16 = K & ~15;
    int n = 0;
    for (; n + 4 <= N; n += 4) {
        const float *w0 = w + (size_t)n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        int m = 0;
        for (; m + 3 <= M; m += 3) {
            const float *x0 = x + (size_t)m * K, *x1 = x0 + K, *x2 = x1 + K;
            __m512 c[3][4];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++)
                    c[i][j] = _mm512_setzero_ps();
            for (int k = 0; k < K16; k += 16) {
                __m512 a0 = _mm512_loadu_ps(x0 + k), a1 = _mm512_loadu_ps(x1 + k),
                       a2 = _mm512_loadu_ps(x2 + k);
                __m512 b = _mm512_loadu_ps(w0 + k);
                c[0][0] = _mm512_fmadd_ps(a0, b, c[0][0]);
                c[1][0] = _mm512_fmadd_ps(a1, b, c[1][0]);
                c[2][0] = _mm512_fmadd_ps(a2, b, c[2][0]);
                b = _mm512_loadu_ps(w1 + k);
                c[0][1] = _mm512_fmadd_ps(a0, b, c[0][1]);
                c[1][1] = _mm512_fmadd_ps(a1, b, c[1][1]);
                c[2][1] = _mm512_fmadd_ps(a2, b, c[2][1]);
                b = _mm512_loadu_ps(w2 + k);
                c[0][2] = _mm512_fmadd_ps(a0, b, c[0][2]);
                c[1][2] = _mm512_fmadd_ps(a1, b, c[1][2]);
                c[2][2] = _mm512_fmadd_ps(a2, b, c[2][2]);
                b = _mm512_loadu_ps(w3 + k);
                c[0][3] = _mm512_fmadd_ps(a0, b, c[0][3]);
                c[1][3] = _mm512_fmadd_ps(a1, b, c[1][3]);
                c[2][3] = _mm512_fmadd_ps(a2, b, c[2][3]);
            }
            const float *xs[3] = {x0, x1, x2}, *ws[4] = {w0, w1, w2, w3};
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 4; j++) {
                    float r = _mm512_reduce_add_ps(c[i][j]);
                    for (int k = K16; k < K; k++)
                        r += xs[i][k] * ws[j][k];
                    y[(size_t)(m + i) * ldy + n + j] = r + (bias ? bias[n + j] : 0.0f);
                }
        }
        for (; m < M; m++)
            for (int j = 0; j < 4; j++)
                y[(size_t)m * ldy + n + j] =
                    avx512_dot(x + (size_t)m * K, w + (size_t)(n + j) * K, K) +
                    (bias ? bias[n + j] : 0.0f);
    }
    for (; n < N; n++)
        for (int m = 0; m < M; m++)
            y[(size_t)m * ldy + n] =
                avx512_dot(x + (size_t)m * K, w + (size_t)n * K, K) + (bias ? bias[n] : 0.0f);
}
#endif

static int best(void)
{
#if GEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return GEMM_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return GEMM_AVX2;
#endif
    return GEMM_SCALAR;
}

void gemm_set_kernel(int k)
{
    int b = best(); /* a CPU with AVX-512 has AVX2 too */
    __atomic_store_n(&chosen, k > b ? b : k < 0 ? GEMM_SCALAR : k, __ATOMIC_RELAXED);
}

int gemm_kernel(void)
{
    int k = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (k >= 0)
        return k;
    const char *e = getenv("MNEMO_GEMM");
    k = best();
    if (e && !strcmp(e, "scalar"))
        k = GEMM_SCALAR;
    else if (e && !strcmp(e, "avx2") && k != GEMM_SCALAR)
        k = GEMM_AVX2;
    __atomic_store_n(&chosen, k, __ATOMIC_RELAXED);
    return k;
}

const char *gemm_kernel_name(int k)
{
    return k == GEMM_AVX512 ? "avx512" : k == GEMM_AVX2 ? "avx2" : "scalar";
}

void gemm_nt(const float *x, const float *w, const float *bias, float *y, int M, int N, int K,
             int ldy)
{
    switch (gemm_kernel()) {
#if GEMM_X86
    case GEMM_AVX512:
        avx512_nt(x, w, bias, y, M, N, K, ldy);
        return;
    case GEMM_AVX2:
        avx2_nt(x, w, bias, y, M, N, K, ldy);
        return;
#endif
    default:
        scalar_nt(x, w, bias, y, M, N, K, ldy);
    }
}

float gemm_dot(const float *a, const float *b, int n)
{
    switch (gemm_kernel()) {
#if GEMM_X86
    case GEMM_AVX512:
        return avx512_dot(a, b, n);
    case GEMM_AVX2:
        return avx2_dot(a, b, n);
#endif
    default:
        return scalar_dot(a, b, n);
    }
}
